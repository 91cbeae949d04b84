package view

import (
	"fmt"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// The version contract: every intent of a client (an operation, a review
// flag, a hunk's mark, a comment) names the versions it was made on, and
// the daemon acts on those or refuses. A changeset publishes two kinds of
// version:
//
//   - each file's content nonces (edit.before/after.content.nonce, the
//     blob ids of its sides), and
//   - for the changesets that depend on HEAD and the index (uncommitted,
//     branch), the view stamp they were computed on, in the state's
//     _meta.changesetd.view (set by each changeset/statusChanged that ends
//     a computation).
//
// An intent carries them back in its _meta: MetaView, the view stamp as
// shown, and MetaVersions, file id -> {"before", "after"} nonces as shown
// ("" for an absent side). An intent without them is bound to what the
// changeset published last, when the daemon validated it.

// _meta keys of an intent.
const (
	MetaView     = "view"
	MetaVersions = "versions"
)

// Sides is the version of one file a client showed: its sides' content
// nonces, "" for an absent side.
type Sides struct{ Before, After string }

// Shown is what a client says it showed; nil when it says nothing.
type Shown struct {
	View  string // "" when not given
	Files map[string]Sides
}

// ParseShown reads MetaView and MetaVersions from an intent's _meta; nil
// when it names neither.
func ParseShown(meta protocol.Object) (*Shown, error) {
	rawView, hasView := meta[MetaView]
	rawFiles, hasFiles := meta[MetaVersions]
	if !hasView && !hasFiles {
		return nil, nil
	}
	sh := &Shown{}
	if hasView {
		v, ok := rawView.(string)
		if !ok {
			return nil, fmt.Errorf("_meta.%s must be the string the changeset's _meta.changesetd.view holds", MetaView)
		}
		sh.View = v
	}
	if hasFiles {
		m, ok := rawFiles.(map[string]any)
		if !ok {
			return nil, fmt.Errorf(`_meta.%s must be an object: file id -> {"before": nonce, "after": nonce}`, MetaVersions)
		}
		sh.Files = make(map[string]Sides, len(m))
		for id, v := range m {
			sides, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf(`_meta.%s[%q] must be {"before": nonce, "after": nonce} ("" for an absent side)`, MetaVersions, id)
			}
			b, okb := sides["before"].(string)
			a, oka := sides["after"].(string)
			if (sides["before"] != nil && !okb) || (sides["after"] != nil && !oka) {
				return nil, fmt.Errorf(`_meta.%s[%q]: the nonces must be strings`, MetaVersions, id)
			}
			sh.Files[id] = Sides{Before: b, After: a}
		}
	}
	return sh, nil
}

// SidesOf is the version a published file has now.
func SidesOf(f protocol.ChangesetFile) Sides {
	var s Sides
	if f.Edit.Before != nil {
		s.Before = f.Edit.Before.Content.Nonce
	}
	if f.Edit.After != nil {
		s.After = f.Edit.After.Content.Nonce
	}
	return s
}

// ChangedSince compares what a client showed of the files it names, and
// of the target files (ids), with what the model publishes now. It
// returns the names (name(id)) of those that changed or went away since
// they were shown, and of targets it did not show (they appeared since),
// each sorted.
func (m *Model) ChangedSince(sh *Shown, targets []string, name func(id string) string) (changed, unseen []string) {
	ids := make([]string, 0, len(sh.Files))
	for id := range sh.Files {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		f := m.Find(id)
		if f == nil || SidesOf(*f) != sh.Files[id] {
			changed = append(changed, name(id))
		}
	}
	for _, id := range targets {
		if _, ok := sh.Files[id]; !ok {
			unseen = append(unseen, name(id))
		}
	}
	slices.Sort(unseen)
	return changed, unseen
}

// ViewOfStamp is workspace ws's stamp in a view stamp of n workspaces.
func ViewOfStamp(stamp string, ws, n int) (string, bool) {
	parts := strings.Split(stamp, "\n")
	if len(parts) != n || ws < 0 || ws >= n || parts[ws] == "" {
		return "", false
	}
	return parts[ws], true
}

// StampMeta is the _meta of the changeset/statusChanged that publishes a
// view stamp; nil for none.
func StampMeta(stamp string) protocol.Object {
	if stamp == "" {
		return nil
	}
	return protocol.Object{"changesetd": protocol.Object{"view": stamp}}
}

func joinLines(parts []string) string { return strings.Join(parts, "\n") }
