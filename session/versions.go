package session

import (
	"fmt"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

// The version contract: every intent of a client (an operation, a review
// flag) names the versions it was made on, and the daemon acts on those or
// refuses. A changeset publishes two kinds of version:
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

// shownFile is the version of one file a client showed.
type shownFile struct{ before, after string }

// shown is what a client says it showed; nil when it says nothing.
type shown struct {
	view  string // "" when not given
	files map[string]shownFile
}

// parseShown reads MetaView and MetaVersions from an intent's _meta.
func parseShown(meta protocol.Object) (*shown, error) {
	rawView, hasView := meta[MetaView]
	rawFiles, hasFiles := meta[MetaVersions]
	if !hasView && !hasFiles {
		return nil, nil
	}
	sh := &shown{}
	if hasView {
		v, ok := rawView.(string)
		if !ok {
			return nil, fmt.Errorf("_meta.%s must be the string the changeset's _meta.changesetd.view holds", MetaView)
		}
		sh.view = v
	}
	if hasFiles {
		m, ok := rawFiles.(map[string]any)
		if !ok {
			return nil, fmt.Errorf(`_meta.%s must be an object: file id -> {"before": nonce, "after": nonce}`, MetaVersions)
		}
		sh.files = make(map[string]shownFile, len(m))
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
			sh.files[id] = shownFile{before: b, after: a}
		}
	}
	return sh, nil
}

func nonceOf(v *FileVersion) string {
	if v == nil {
		return ""
	}
	return v.OID
}

// changedSince compares what a client showed of the files it names, and
// of the target files (ids), with what the changeset holds now. It
// returns the paths that changed or went away since they were shown, and
// those of targets it did not show (they appeared since).
func (cs *csChannel) changedSince(sh *shown, targets []string) (changed, unseen []string) {
	ids := make([]string, 0, len(sh.files))
	for id := range sh.files {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		v := sh.files[id]
		o, ok := cs.origin[id]
		if !ok {
			changed = append(changed, cs.pathOfID(id))
			continue
		}
		if v.before != nonceOf(o.from) || v.after != nonceOf(o.to) {
			changed = append(changed, o.path())
		}
	}
	for _, id := range targets {
		if _, ok := sh.files[id]; !ok {
			unseen = append(unseen, cs.pathOfID(id))
		}
	}
	slices.Sort(unseen)
	return changed, unseen
}

// pathOfID names a file id for a message: its path when the changeset
// has it, else the id.
func (cs *csChannel) pathOfID(id string) string {
	if o, ok := cs.origin[id]; ok {
		return o.path()
	}
	return id
}

// staleError is the refusal of an intent made on versions the files no
// longer have: -32011, reason fileChanged, data.files naming them.
func staleError(method string, changed, unseen []string) error {
	var parts []string
	if len(changed) > 0 {
		parts = append(parts, fmt.Sprintf("%s changed since the page or client showed %s (%s)", capital(files(len(changed))), them(len(changed)), nameList(changed)))
	}
	if len(unseen) > 0 {
		parts = append(parts, fmt.Sprintf("%s appeared since and %s never shown (%s)", files(len(unseen)), was(len(unseen)), nameList(unseen)))
	}
	all := append(slices.Clone(changed), unseen...)
	e := protocol.Errorf(protocol.CodeConflict, "%s: %s; nothing was changed: look at the current version and try again", method, strings.Join(parts, "; "))
	e.Data = map[string]any{"reason": protocol.ReasonFileChanged, "files": all}
	return e
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func was(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// viewToken is the view stamp published on a changeset that depends on
// HEAD and the index: the stamp of each of the session's n workspaces, in
// order, one a line; "" when none is known.
func (cs *csChannel) viewToken(n int) string {
	if len(cs.views) == 0 {
		return ""
	}
	parts := make([]string, n)
	for i := range parts {
		parts[i] = cs.views[i]
	}
	return strings.Join(parts, "\n")
}

// viewOfToken is workspace ws's stamp in a view token of n workspaces.
func viewOfToken(token string, ws, n int) (string, bool) {
	parts := strings.Split(token, "\n")
	if len(parts) != n || ws < 0 || ws >= n || parts[ws] == "" {
		return "", false
	}
	return parts[ws], true
}

// viewMeta is the _meta of the changeset/statusChanged that publishes
// token.
func viewMeta(token string) protocol.Object {
	if token == "" {
		return nil
	}
	return protocol.Object{"changesetd": protocol.Object{"view": token}}
}

// bindShown binds an invocation to the versions its client was shown:
// the files it names must still have them (else it is refused naming
// them), each target file must be among them, and its view stamp is the
// one the write is checked against (t.view). Without them it is bound to
// what the changeset last published: the versions of its files as
// validated here, which the Editor checks against the disk. Undo and dismissUndo act on a kept revert,
// whose own check (Editor.UndoCurrent) applies. On the actor.
func (cs *csChannel) bindShown(s *Session, t *opTarget, sh *shown, ws int) error {
	if sh == nil || t.op == OpUndo || t.op == OpDismissUndo {
		return nil
	}
	if changed, unseen := cs.changedSince(sh, cs.idsOf(t.files)); len(changed)+len(unseen) > 0 {
		return staleError("invokeChangesetOperation", changed, unseen)
	}
	if sh.view == "" || (cs.ref.Kind != protocol.KindUncommitted && cs.ref.Kind != protocol.KindBranch) {
		return nil
	}
	v, ok := viewOfToken(sh.view, ws, len(s.workspaces))
	if pub, _ := reducer.ViewOf(cs.state.Meta); t.op == OpCommit && ok && sh.view != pub {
		// A commit records the index as it is: one the client has not
		// been shown, even if only the daemon's own operations made it
		// from the shown one, would commit what nobody confirmed.
		return protocol.Errorf(protocol.CodeConflict, "invokeChangesetOperation: the index changed since the changeset was shown (another client staged or unstaged); nothing was committed: look at what is staged now and commit again").WithReason(protocol.ReasonViewChanged)
	}
	if !ok {
		return protocol.Errorf(protocol.CodeConflict, "invokeChangesetOperation: _meta.%s is not a view this changeset published; nothing was changed: look at the current version and try again", MetaView).WithReason(protocol.ReasonViewChanged)
	}
	t.view = v
	return nil
}

// idsOf is the file ids of the changeset's files among fs.
func (cs *csChannel) idsOf(fs []fileOrigin) []string {
	var ids []string
	for id, o := range cs.origin {
		if slices.ContainsFunc(fs, func(f fileOrigin) bool { return f.ws == o.ws && f.path() == o.path() && f.old() == o.old() }) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// withView is v with its view stamp replaced; v itself is shared and is
// not changed.
func withView(v *FileVersion, view string) *FileVersion {
	if v == nil {
		return nil
	}
	c := *v
	c.View = view
	return &c
}

// staleReview is why a review flag (of files ids, or of hunks of one of
// them) must be rejected, or "". A flag that
// marks files reviewed and names the versions they were shown at
// (_meta.versions) is rejected when one of them no longer has that
// content, or when it marks a file it does not name: the new, unseen
// content would otherwise be marked reviewed, and stay so across
// restarts. Clearing a flag marks nothing unseen and is never rejected.
// A flag with no _meta.versions is bound to the content the changeset
// last published.
func (cs *csChannel) staleReview(meta protocol.Object, reviewed bool, ids []string) string {
	sh, err := parseShown(meta)
	if err != nil {
		return err.Error()
	}
	if sh == nil || !reviewed {
		return ""
	}
	var targets []string
	for _, id := range ids {
		if _, ok := cs.origin[id]; ok {
			targets = append(targets, id)
		}
	}
	changed, unseen := cs.changedSince(sh, targets)
	if len(changed)+len(unseen) == 0 {
		return ""
	}
	var parts []string
	if len(changed) > 0 {
		parts = append(parts, fmt.Sprintf("the file changed since it was shown, so what was reviewed is not its content now: %s", nameList(changed)))
	}
	if len(unseen) > 0 {
		parts = append(parts, fmt.Sprintf("no version was named in _meta.%s for %s", MetaVersions, nameList(unseen)))
	}
	return "not marked reviewed: " + strings.Join(parts, "; ") + "; review the current version"
}
