package session

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/view"
	"github.com/changesetd/changesetd/uritemplate"
)

// Review per hunk. A Workspace lists each file's hunks in
// _meta.changesetd.hunks, each with an id derived from its content and
// its place (the file's path, the hunk's first line in the before side and
// its removed and added lines), so an id stays while the hunk is
// unchanged, also when lines are added or removed elsewhere, an edited
// hunk has a new one, and two identical hunks never share one: a mark
// belongs to the one hunk it was given to, and a hunk that appears later
// never inherits it.
// Reviewers mark hunks with x-changesetd/hunksReviewChanged; the marks are
// kept per changeset and file, durably, and shown as hunks[i].reviewed. A
// file whose hunks are all marked is shown reviewed.

// Hunk is one hunk of a file's diff as _meta.changesetd.hunks lists it
// (view.Hunk).
type Hunk = view.Hunk

// HunkList is the hunk list as _meta.changesetd.hunks holds it
// (view.HunkList).
type HunkList = view.HunkList

// MetaHunks is the key of the hunk list in a file's _meta.changesetd.
const MetaHunks = view.MetaHunks

// HunkStore is implemented by a Store that keeps hunk review marks (the
// daemon's *store.DB): per changeset, file id -> the ids of its reviewed
// hunks.
type HunkStore interface {
	PutHunkReviews(changesetURI string, reviewed map[string][]string) error
	HunkReviews(changesetURI string) (map[string][]string, error)
}

func (m *Manager) hunkStore() HunkStore {
	hs, _ := m.opts.Store.(HunkStore)
	return hs
}

func (m *Manager) loadHunkReviews(uri string) map[string][]string {
	hs := m.hunkStore()
	if hs == nil {
		return map[string][]string{}
	}
	r, err := hs.HunkReviews(uri)
	if err != nil {
		m.log.Error("cannot load hunk review marks", "changeset", uri, "err", err)
	}
	if r == nil {
		r = map[string][]string{}
	}
	return r
}

// SetHunksReviewed is x-changesetd/hunksReviewChanged: it marks (or
// unmarks) hunks of one file of a changeset as reviewed, stores the marks
// and publishes the file with them. Unmarking a hunk of a file reviewed as
// a whole clears the file's review too: it is no longer all reviewed.
func (m *Manager) SetHunksReviewed(ctx context.Context, p protocol.HunksReviewChangedParams) error {
	method := protocol.MethodHunksReviewChanged
	ref, err := uritemplate.ParseChangesetURI(p.Channel)
	if err != nil {
		return protocol.Errorf(protocol.CodeInvalidParams, "%s: channel %s is not a changeset: %v", method, p.Channel, err)
	}
	s, ok := m.Session(protocol.SessionScheme + "/" + ref.SessionID)
	if !ok {
		return protocol.Errorf(protocol.CodeSessionNotFound, "%s: session %s does not exist", method, ref.SessionID)
	}
	if len(p.Hunks) == 0 {
		return protocol.Errorf(protocol.CodeInvalidParams, "%s: hunks is empty: name at least one hunk id of the file's _meta.changesetd.hunks", method)
	}
	_, err = command(ctx, s, func() (struct{}, error) {
		cs := s.changesets[p.Channel]
		if cs == nil || !cs.loaded || !cs.active {
			return struct{}{}, protocol.Errorf(protocol.CodeInvalidParams, "%s: subscribe to %s first; its files are not computed", method, p.Channel)
		}
		if !s.hasReview(cs.ref.Kind) {
			return struct{}{}, protocol.Errorf(protocol.CodeInvalidParams, "%s: the %s changeset does not offer review", method, cs.ref.Kind)
		}
		f := cs.v.Find(p.File)
		if f == nil {
			return struct{}{}, protocol.Errorf(protocol.CodeInvalidParams, "%s: %q is not a file id of %s", method, p.File, p.Channel)
		}
		if reason := cs.staleReview(p.Meta, p.Reviewed, []string{p.File}); reason != "" {
			return struct{}{}, protocol.Errorf(protocol.CodeConflict, "%s: %s", method, reason).WithReason(protocol.ReasonFileChanged)
		}
		var ids []string
		for _, h := range view.HunksOf(f.Meta) {
			ids = append(ids, h.ID)
		}
		for _, id := range p.Hunks {
			if !slices.Contains(ids, id) {
				return struct{}{}, protocol.Errorf(protocol.CodeConflict, "%s: %s has no hunk %q now (its hunks: %s); the file changed since: mark the hunks of its current version", method, p.File, id, strings.Join(ids, ", ")).WithReason(protocol.ReasonFileChanged)
			}
		}
		// The file's marks, kept only for hunks it has now: a hunk edited
		// has a new id, and the old one would never match again.
		var marked []string
		for _, id := range ids {
			was := slices.Contains(cs.v.HunkReviews[f.ID], id)
			if slices.Contains(p.Hunks, id) {
				was = p.Reviewed
			}
			if was {
				marked = append(marked, id)
			}
		}
		next := make(map[string][]string, len(cs.v.HunkReviews)+1)
		for k, v := range cs.v.HunkReviews {
			next[k] = v
		}
		if len(marked) > 0 {
			next[f.ID] = marked
		} else {
			delete(next, f.ID)
		}
		if hs := m.hunkStore(); hs != nil {
			if err := hs.PutHunkReviews(p.Channel, next); err != nil {
				return struct{}{}, fmt.Errorf("%s: the marks could not be saved: %w", method, err)
			}
		}
		if _, whole := cs.v.Reviews[f.ID]; whole && !p.Reviewed {
			reviews := make(map[string]string, len(cs.v.Reviews))
			for k, v := range cs.v.Reviews {
				if k != f.ID {
					reviews[k] = v
				}
			}
			if err := m.saveReviews(p.Channel, reviews); err != nil {
				return struct{}{}, fmt.Errorf("%s: the file's review could not be cleared: %w", method, err)
			}
			cs.v.Reviews = reviews
		}
		cs.v.HunkReviews = next
		nf := *f
		all := cs.v.MarkHunks(&nf)
		switch {
		case all || cs.v.Reviews[nf.ID] == view.ContentKey(nf):
			nf.Reviewed = protocol.Ptr(true)
		case nf.Reviewed != nil && *nf.Reviewed:
			nf.Reviewed = protocol.Ptr(false)
		}
		cs.commit(s, protocol.ChangesetFileSet{File: nf}, nil)
		return struct{}{}, nil
	})
	return err
}

// hunksFollowFiles makes the hunk marks of files reviewed, or unreviewed,
// as a whole follow: every hunk marked, or none. Otherwise a file whose
// hunks are all marked would show reviewed again after a reviewer cleared
// it. The files whose marks change are published again.
func (s *Session) hunksFollowFiles(cs *csChannel, rv protocol.ChangesetFilesReviewChanged) {
	next := make(map[string][]string, len(cs.v.HunkReviews))
	for k, v := range cs.v.HunkReviews {
		next[k] = v
	}
	var changed []string
	for _, id := range rv.Files {
		f := cs.v.Find(id)
		if f == nil {
			continue
		}
		var marked []string
		if rv.Reviewed {
			for _, h := range view.HunksOf(f.Meta) {
				marked = append(marked, h.ID)
			}
		}
		if slices.Equal(marked, next[id]) {
			continue
		}
		if len(marked) > 0 {
			next[id] = marked
		} else {
			delete(next, id)
		}
		changed = append(changed, id)
	}
	if len(changed) == 0 {
		return
	}
	if hs := s.m.hunkStore(); hs != nil {
		if err := hs.PutHunkReviews(cs.uri, next); err != nil {
			s.log.Error("cannot save hunk review marks", "changeset", cs.uri, "err", err)
			return
		}
	}
	cs.v.HunkReviews = next
	// Published as a refresh's changes are: a folder or a whole list
	// marked at once is one pass over the list, in chunks, not a copy of
	// it for each file.
	sets := make([]protocol.Action, 0, len(changed))
	for _, id := range changed {
		nf := *cs.v.Find(id)
		cs.v.MarkHunks(&nf)
		sets = append(sets, protocol.ChangesetFileSet{File: nf})
	}
	cs.commitFiles(s, sets)
}
