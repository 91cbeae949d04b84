package session

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/ops"
	"github.com/changesetd/changesetd/store"
)

// UndoStore is implemented by a Store that keeps undo records (the
// daemon's *store.DB): the bytes reverts replaced, until they are undone
// or dismissed, across restarts.
type UndoStore interface {
	PutUndo(sessionID string, u store.Undo) error
	DeleteUndo(sessionID string, ids ...string) error
	Undos(sessionID string) ([]store.Undo, error)
}

// Bounds on what is kept to undo: per changeset the newest maxUndos
// reverts no older than maxUndoAge, and per revert at most MaxUndoBytes of
// replaced content (a bigger revert is refused, since it could not be
// undone).
const (
	maxUndos     = 10
	maxUndoAge   = 14 * 24 * time.Hour
	MaxUndoBytes = 64 << 20
)

// undoRecord is one revert of a changeset that can be undone.
type undoRecord struct {
	id      string
	ws      int // the workspace it wrote
	at      time.Time
	summary string
	edit    *Undo
	// current: the files are as the revert left them, as last checked;
	// only then is it offered, since putting the old bytes back would
	// otherwise lose a change.
	current bool
}

var undoSeq atomic.Uint64

// newUndoID returns an id that sorts after every earlier one.
func newUndoID(now time.Time) string {
	return fmt.Sprintf("%016x-%s", now.UnixNano(), strconv.FormatUint(undoSeq.Add(1), 36))
}

func (r *undoRecord) record(uri string) store.Undo {
	conv := func(fs []SavedFile) []store.UndoFile {
		out := make([]store.UndoFile, len(fs))
		for i, f := range fs {
			out[i] = store.UndoFile{Path: f.Path, Exists: f.Exists, Content: f.Content, Mode: f.Mode}
			if x := f.Index; x != nil {
				out[i].Index = &store.UndoIndex{Exists: x.Exists, OID: x.OID, Mode: x.Mode, Content: x.Content}
			}
		}
		return out
	}
	return store.Undo{ID: r.id, Changeset: uri, Workspace: r.ws, CreatedAt: r.at, Summary: r.summary, Before: conv(r.edit.Files), After: conv(r.edit.After), Pending: r.edit.Pending, Op: r.edit.Op}
}

func undoFromRecord(u store.Undo) *undoRecord {
	conv := func(fs []store.UndoFile) []SavedFile {
		out := make([]SavedFile, len(fs))
		for i, f := range fs {
			out[i] = SavedFile{Path: f.Path, Exists: f.Exists, Content: f.Content, Mode: f.Mode}
			if x := f.Index; x != nil {
				out[i].Index = &ops.IndexEntry{Exists: x.Exists, OID: x.OID, Mode: x.Mode, Content: x.Content}
			}
		}
		return out
	}
	return &undoRecord{id: u.ID, ws: u.Workspace, at: u.CreatedAt, summary: u.Summary, edit: &Undo{Files: conv(u.Before), After: conv(u.After), Pending: u.Pending, Op: u.Op}}
}

func (m *Manager) undoStore() UndoStore {
	us, _ := m.opts.Store.(UndoStore)
	return us
}

// loadUndos returns the stored undo records of a changeset, oldest first;
// they are offered once a refresh has found their files as they were left.
// Records past the bounds are deleted.
func (s *Session) loadUndos(uri string) []*undoRecord {
	us := s.m.undoStore()
	if us == nil {
		return nil
	}
	all, err := us.Undos(s.id)
	if err != nil {
		s.log.Error("cannot read the reverts that can be undone", "err", err)
		return nil
	}
	var out []*undoRecord
	for _, u := range all {
		if u.Changeset == uri {
			out = append(out, undoFromRecord(u))
		}
	}
	kept, dropped := boundUndos(out, s.m.opts.Now())
	if len(dropped) > 0 {
		if err := us.DeleteUndo(s.id, dropped...); err != nil {
			s.log.Error("cannot forget old undo records", "err", err)
		}
	}
	return kept
}

// boundUndos drops the records past the bounds (the oldest first) and
// returns the ids dropped.
func boundUndos(list []*undoRecord, now time.Time) (kept []*undoRecord, dropped []string) {
	total := 0
	for i := len(list) - 1; i >= 0; i-- {
		r := list[i]
		total += r.edit.Bytes()
		if len(kept) >= maxUndos || now.Sub(r.at) > maxUndoAge || (len(kept) > 0 && total > 2*MaxUndoBytes) {
			dropped = append(dropped, r.id)
			continue
		}
		kept = append(kept, r)
	}
	slices.Reverse(kept)
	return kept, dropped
}

// forgetUndos deletes stored undo records off the actor.
func (s *Session) forgetUndos(ids []string) {
	us := s.m.undoStore()
	if us == nil || len(ids) == 0 {
		return
	}
	s.m.spawn("forget undos", func() {
		if err := us.DeleteUndo(s.id, ids...); err != nil {
			s.log.Error("cannot forget undo records", "err", err)
		}
	})
}

// offeredUndo is the revert the undo operation puts back by default: the
// newest whose files are as it left them.
func (cs *csChannel) offeredUndo() *undoRecord {
	for i := len(cs.undos) - 1; i >= 0; i-- {
		if cs.undos[i].current {
			return cs.undos[i]
		}
	}
	return nil
}

func (cs *csChannel) undoByID(id string) *undoRecord {
	for _, r := range cs.undos {
		if r.id == id {
			return r
		}
	}
	return nil
}

func (cs *csChannel) dropUndo(r *undoRecord) {
	cs.undos = slices.DeleteFunc(cs.undos, func(x *undoRecord) bool { return x == r })
}

// undoChecker returns what a refresh runs off the actor to tell, per
// workspace, which of the changeset's undo records are still current.
func (cs *csChannel) undoChecker(s *Session) func(ws int) map[*undoRecord]bool {
	type check struct {
		r  *undoRecord
		ed Editor
	}
	var checks []check
	for _, r := range cs.undos {
		if r.ws >= len(s.workspaces) {
			continue
		}
		if ed, ok := s.workspaces[r.ws].ws.(Editor); ok {
			checks = append(checks, check{r, ed})
		}
	}
	return func(ws int) map[*undoRecord]bool {
		var out map[*undoRecord]bool
		for _, c := range checks {
			if c.r.ws != ws {
				continue
			}
			if out == nil {
				out = map[*undoRecord]bool{}
			}
			out[c.r] = c.ed.UndoCurrent(c.r.edit)
		}
		return out
	}
}

// undoChecked takes a refresh's findings on the actor.
func (cs *csChannel) undoChecked(current map[*undoRecord]bool) {
	for r, ok := range current {
		r.current = ok
	}
}

// stateErr gives a failure to write the state database its protocol code
// when it is expected: the state dir's disk or quota is full.
func stateErr(err error) error {
	if errors.Is(err, store.ErrNoSpace) {
		return protocol.Errorf(protocol.CodeConflict, "the state dir's disk is full: %v", err).WithReason(protocol.ReasonStateNoSpace)
	}
	return err
}
