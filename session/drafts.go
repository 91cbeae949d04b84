package session

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
)

// Drafts: x-changesetd/draft lets an agent show a file while it is still
// writing it. Each draft is placed over the file by the cursor rule
// (draftrule.go) and published in the session's uncommitted changeset as
// the file's change, its new side the provisional text (readable with
// resourceRead like any stored object), with _meta.changesetd.draft
// {draft: true, linesWritten, linesTotal?, percent?}. The real file
// replaces it when the file is written (the watcher's refresh publishes
// what is on disk), shortly after the final draft, or when no draft came
// for Options.DraftTimeout. Only files inside the session's working directories,
// regular or not yet existing, up to maxDraftBytes, take drafts, and a
// file's drafts are published at most every minDraftInterval (those
// between are answered but not shown; the final one always is). A
// session holds at most maxSessionDrafts drafts of at most
// maxSessionDraftBytes in all: past either, a draft of another file is
// refused until one ends.

const (
	maxDraftBytes        = 1 << 20
	maxSessionDrafts     = 64
	maxSessionDraftBytes = 16 << 20
	minDraftInterval     = 50 * time.Millisecond
	// DefaultDraftTimeout is Options.DraftTimeout's default.
	DefaultDraftTimeout = 30 * time.Second
	// draftAfterFinal is how long a final draft stands in for the file
	// its writer is about to write.
	draftAfterFinal = 5 * time.Second
)

// DraftResult says what became of a draft.
type DraftResult struct {
	Published bool `json:"published"`
	draftStats
}

// draft is a file's provisional content. On the actor.
type draft struct {
	gen       int
	oid       string
	text      []byte
	published time.Time
	timer     *time.Timer
}

// draftPlan is what a draft needs from the actor before its content is
// read: where the file is and what the uncommitted changeset has of it.
type draftPlan struct {
	key  editKey
	abs  string
	uri  string
	base *FileVersion // the uncommitted changeset's old side; nil: the file is unchanged there
	skip bool         // too soon after the last published draft
}

// Draft publishes a provisional version of resource, a file:// URI inside
// the session's working directories, from text, the file's new content
// so far (all of it when final).
func (m *Manager) Draft(ctx context.Context, sessionURI, resource, text string, final bool) (DraftResult, error) {
	const method = "x-changesetd/draft"
	if len(text) > maxDraftBytes {
		return DraftResult{}, protocol.Errorf(protocol.CodeInvalidParams, "%s: text is %d bytes; a draft is at most %d", method, len(text), maxDraftBytes)
	}
	s, ok := m.Session(sessionURI)
	if !ok {
		return DraftResult{}, protocol.Errorf(protocol.CodeSessionNotFound, "%s: session %s does not exist", method, sessionURI)
	}
	if err := s.awaitStarted(ctx, method); err != nil {
		return DraftResult{}, err
	}
	plan, err := command(ctx, s, func() (draftPlan, error) {
		ws, rel, ok := s.locate(resource)
		if !ok || ws >= len(s.workspaces) || s.workspaces[ws].ws == nil {
			return draftPlan{}, protocol.Errorf(protocol.CodePermissionDenied, "%s: %s is not a file inside the session's working directories", method, resource)
		}
		key := editKey{ws: ws, path: rel}
		if err := s.draftRoom(key, len(text)); err != nil {
			return draftPlan{}, err
		}
		p := draftPlan{key: key, abs: filepath.Join(s.workspaces[ws].root(), filepath.FromSlash(rel)), uri: resource}
		if d := s.drafts[key]; d != nil && !final && time.Since(d.published) < minDraftInterval {
			p.skip = true
			return p, nil
		}
		if cs := s.uncommitted(); cs != nil {
			if o, ok := cs.origin[FileURI(p.abs)]; ok {
				p.base = o.from
				if p.base == nil {
					p.base = &FileVersion{} // added: no old side
				}
			}
		}
		return p, nil
	})
	if err != nil {
		return DraftResult{}, err
	}
	orig, exists, err := m.draftOriginal(plan.abs, plan.uri)
	if err != nil {
		return DraftResult{}, fmt.Errorf("%s: %w", method, err)
	}
	prov, st, placed := draftText(orig, exists, []byte(text), final)
	if plan.skip || !placed {
		return DraftResult{draftStats: st}, nil
	}
	// The old side: what the uncommitted changeset compares with (HEAD's
	// version, stored), or the file itself while it is unchanged.
	var base []byte
	var baseFV *FileVersion
	switch {
	case plan.base == nil && exists:
		base, baseFV = orig, &FileVersion{Path: plan.key.path, OID: changeset.BlobOID(orig), Mode: changeset.ModeRegular, Size: int64(len(orig))}
	case plan.base != nil && plan.base.OID != "":
		if base, err = s.ReadBlob(ctx, plan.base.OID); err != nil {
			return DraftResult{}, fmt.Errorf("%s: %w", method, err)
		}
		baseFV = plan.base
	}
	var oldSide *changeset.Side
	if baseFV != nil {
		oldSide = &changeset.Side{Path: plan.key.path, Content: base}
	}
	r := changeset.Compare(oldSide, &changeset.Side{Path: plan.key.path, Content: prov}, changeset.Options{})
	published, err := command(ctx, s, func() (bool, error) {
		cs := s.uncommitted()
		if s.disposed || cs == nil || !cs.loaded {
			return false, nil // nobody watches uncommitted changes: nothing to show
		}
		// Again, now that the text is placed: other drafts may have come
		// meanwhile.
		if err := s.draftRoom(plan.key, len(prov)); err != nil {
			return false, err
		}
		if s.drafts == nil {
			s.drafts = map[editKey]*draft{}
		}
		d := s.drafts[plan.key]
		if d == nil {
			d = &draft{}
			s.drafts[plan.key] = d
		}
		d.gen++
		d.oid, d.text, d.published = changeset.BlobOID(prov), prov, time.Now()
		gen, key := d.gen, plan.key
		wait := s.m.opts.DraftTimeout
		if wait <= 0 {
			wait = DefaultDraftTimeout
		}
		if final {
			wait = draftAfterFinal
		}
		if d.timer != nil {
			d.timer.Stop()
		}
		d.timer = time.AfterFunc(wait, func() { s.do(func() { s.endDraft(key, gen) }) })
		cs.commit(s, protocol.ChangesetFileSet{File: s.draftFile(cs, key, baseFV, d, r, st)}, nil)
		return true, nil
	})
	if err != nil {
		return DraftResult{}, err
	}
	return DraftResult{Published: published, draftStats: st}, nil
}

// draftOriginal reads the file a draft is for, as resourceRead would
// (inside the session's directories, a regular file); a file that does
// not exist yet has no original.
func (m *Manager) draftOriginal(abs, uri string) ([]byte, bool, error) {
	b, err := m.readFile(uri, maxDraftBytes)
	if protocol.ReasonOf(err) == protocol.ReasonFileNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// draftRoom refuses a draft of n bytes for key when the session's drafts
// with it would pass maxSessionDrafts or maxSessionDraftBytes; it
// replaces key's own draft, if any. On the actor.
func (s *Session) draftRoom(key editKey, n int) error {
	count, total := 1, n
	for k, d := range s.drafts {
		if k != key {
			count++
			total += len(d.text)
		}
	}
	if count > maxSessionDrafts || total > maxSessionDraftBytes {
		return protocol.Errorf(protocol.CodeInvalidParams, "x-changesetd/draft: the session holds %d other drafts of %d bytes; it keeps at most %d drafts of %d bytes in all: finish one (final: true) or write its file first", count-1, total-n, maxSessionDrafts, maxSessionDraftBytes).WithReason(protocol.ReasonTooLarge)
	}
	return nil
}

// uncommitted is the session's uncommitted changeset channel, if open.
func (s *Session) uncommitted() *csChannel {
	for _, cs := range s.changesets {
		if cs.ref.Kind == protocol.KindUncommitted && cs.active {
			return cs
		}
	}
	return nil
}

// draftFile is the changeset file of a draft. On the actor.
func (s *Session) draftFile(cs *csChannel, key editKey, base *FileVersion, d *draft, r changeset.Result, st draftStats) protocol.ChangesetFile {
	to := &FileVersion{Path: key.path, OID: d.oid, Mode: changeset.ModeRegular, Size: int64(len(d.text))}
	added, removed, precise := r.Counts()
	fc := FileChange{Old: base, New: to, Binary: r.Binary, Precise: precise, Added: added, Removed: removed}
	if base != nil && base.OID == "" {
		fc.Old = nil
	}
	op := "modify"
	if fc.Old == nil {
		op = "add"
	}
	own := protocol.Object{"operation": op, "fileType": "text", "draft": st}
	fc.Meta = protocol.Object{"changesetd": own}
	fc.Patch = r.Patch // what a reader shows as the draft's diff, as for any file
	f, o := s.fileOf(key.ws, fc, cs)
	f.Reviewed = nil // a draft is never the reviewed content
	cs.origin[f.ID] = o
	return f
}

// endDraft drops a file's draft, if it is still the one of generation
// gen, and has the uncommitted changeset show the file as it is on disk.
// On the actor.
func (s *Session) endDraft(key editKey, gen int) {
	d := s.drafts[key]
	if d == nil || d.gen != gen {
		return
	}
	delete(s.drafts, key)
	if cs := s.uncommitted(); cs != nil && !s.disposed {
		cs.changed(s, key.ws, []string{key.path}, false)
	}
}

// draftContent is the provisional text with the object id oid, if a
// draft has it. On the actor.
func (s *Session) draftContent(oid string) ([]byte, bool) {
	for _, d := range s.drafts {
		if d.oid == oid {
			return d.text, true
		}
	}
	return nil, false
}

// stopDrafts stops the timers of every draft, so none fires after the
// session is gone. On the actor.
func (s *Session) stopDrafts() {
	for _, d := range s.drafts {
		if d.timer != nil {
			d.timer.Stop()
		}
	}
	clear(s.drafts)
}
