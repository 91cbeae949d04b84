package session

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// Rewinding a turn: revert with the changeset scope on a turn (or
// compare-turns) changeset puts every file of it back to its before side
// in one step, kept as one undo. A file changed again after the turn (its
// content now is not the changeset's after side) would lose that change:
// the rewind names such files in its confirmation and refuses them.

// DriftReader is implemented by an Editor that can tell which files of a
// changeset no longer hold their new side: the current content of the path
// is other than New's (or the path exists while New is nil, or a renamed
// file's old path exists again). It returns their paths.
type DriftReader interface {
	Drifted(ctx context.Context, files []EditFile) ([]string, error)
}

// rewindable reports whether the changeset can be rewound as a whole: its
// sides are snapshots, so its after side is what a turn left.
func (cs *csChannel) rewindable() bool {
	return cs.ref.Kind == protocol.KindTurn || cs.ref.Kind == protocol.KindCompareTurns
}

// driftChecker returns what a refresh runs off the actor to find, per
// workspace, the files of a rewindable changeset changed since; nil
// results for other changesets.
func (cs *csChannel) driftChecker(s *Session) func(ctx context.Context, ws int, list *ChangeList) []string {
	if !cs.rewindable() {
		return func(context.Context, int, *ChangeList) []string { return nil }
	}
	readers := map[int]DriftReader{}
	for i, e := range s.workspaces {
		if d, ok := e.ws.(DriftReader); ok {
			readers[i] = d
		}
	}
	log := s.log
	return func(ctx context.Context, ws int, list *ChangeList) []string {
		d := readers[ws]
		if d == nil || list == nil {
			return nil
		}
		files := make([]EditFile, len(list.Files))
		for i, fc := range list.Files {
			files[i] = EditFile{Old: fc.Old, New: fc.New}
		}
		out, err := d.Drifted(ctx, files)
		if err != nil {
			log.Debug("cannot tell which files changed after the turn", "err", err)
		}
		return out
	}
}

// driftState is what a rewindable changeset knows of its files changed
// since: their paths by workspace, and the check under way off the actor.
type driftState struct {
	paths    map[int][]string
	checking bool
	again    bool // asked for while checking: check once more after
}

// driftMayHaveChanged follows a refresh of src: when its new side is the
// working tree, the tree changed, so the rewindable changesets someone is
// subscribed to (whose sides are snapshots, never refreshed by the tree)
// check again which of their files changed since, and their confirmations
// stay true.
func (s *Session) driftMayHaveChanged(src *csChannel) {
	if src.rewindable() {
		return
	}
	for _, cs := range s.changesets {
		if cs.active && cs.loaded && cs.rewindable() && !cs.live(s) {
			cs.recheckDrift(s)
		}
	}
}

// recheckDrift checks the changeset's files off the actor and publishes
// the operations again if that changed their confirmation.
func (cs *csChannel) recheckDrift(s *Session) {
	if cs.drift.checking {
		cs.drift.again = true
		return
	}
	byWS := map[int]*ChangeList{}
	for _, o := range cs.origin {
		l := byWS[o.ws]
		if l == nil {
			l = &ChangeList{}
			byWS[o.ws] = l
		}
		l.Files = append(l.Files, FileChange{Old: o.from, New: o.to})
	}
	if len(byWS) == 0 {
		return
	}
	cs.drift.checking = true
	check := cs.driftChecker(s)
	ctx := s.ctx
	s.m.spawn("drift check", func() {
		out := make(map[int][]string, len(byWS))
		for ws, l := range byWS {
			d := check(ctx, ws, l)
			slices.Sort(d)
			out[ws] = d
		}
		s.do(func() {
			cs.drift.checking = false
			if s.disposed {
				return
			}
			if cs.drift.paths == nil {
				cs.drift.paths = map[int][]string{}
			}
			for ws, d := range out {
				cs.drift.paths[ws] = d
			}
			cs.syncOperations(s)
			if cs.drift.again {
				cs.drift.again = false
				cs.recheckDrift(s)
			}
		})
	})
}

// driftChecked takes a refresh's findings on the actor: a full result
// replaces what is known of its workspace, a partial one adds to it.
func (cs *csChannel) driftChecked(r wsResult) {
	if !cs.rewindable() || r.err != nil {
		return
	}
	if cs.drift.paths == nil {
		cs.drift.paths = map[int][]string{}
	}
	if r.all {
		cs.drift.paths[r.ws] = r.drifted
		return
	}
	kept := slices.DeleteFunc(slices.Clone(cs.drift.paths[r.ws]), func(p string) bool {
		return slices.ContainsFunc(r.paths, func(q string) bool { return p == q || strings.HasPrefix(p, q+"/") })
	})
	cs.drift.paths[r.ws] = slices.Compact(slices.Sorted(slices.Values(append(kept, r.drifted...))))
}

// driftedPaths lists, sorted, the files known to have changed since the
// changeset was taken.
func (cs *csChannel) driftedPaths() []string {
	var out []string
	for _, ps := range cs.drift.paths {
		out = append(out, ps...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// rewindConfirmation says what a revert of a turn's changeset does: the
// files go back to their version before the turn; for the whole changeset
// it names them, those the turn created (deleted), and those changed
// again since (refused).
func (cs *csChannel) rewindConfirmation() string {
	what := "this turn"
	if cs.ref.Kind == protocol.KindCompareTurns {
		what = "the original turn's end"
	}
	all := cs.sortedPaths(func(fileOrigin) bool { return true })
	if all.n == 0 {
		return fmt.Sprintf("Restore files to their version before %s? It changed no file: there is nothing to rewind.", what)
	}
	text := fmt.Sprintf("Restore to their version before %s the file or lines chosen, or, rewinding the whole changeset, each of its %s: %s.", what, files(all.n), all)
	created := cs.sortedPaths(func(o fileOrigin) bool { return o.from == nil })
	if created.n > 0 {
		text += fmt.Sprintf(" %s did not exist before and would be deleted: %s.", capital(files(created.n)), created)
	}
	if drifted := cs.driftedPaths(); len(drifted) > 0 {
		text += fmt.Sprintf(" Changed again since, so refused (a rewind would discard that change): %s.", nameList(drifted))
	}
	return text + " A revert can be undone with Undo Revert, also after a restart."
}

// rewindTargets is the target of a rewind: every file of the changeset,
// all in one working directory.
func (cs *csChannel) rewindTargets(s *Session) ([]fileOrigin, error) {
	var out []fileOrigin
	for _, o := range cs.origin {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b fileOrigin) int {
		if a.ws != b.ws {
			return a.ws - b.ws
		}
		if a.path() < b.path() {
			return -1
		}
		if a.path() > b.path() {
			return 1
		}
		return 0
	})
	if len(out) == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: %s changed no file: there is nothing to rewind", cs.uri)
	}
	if out[0].ws != out[len(out)-1].ws {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: %s changed files in %s and %s; a rewind acts on one working directory: revert the files one by one", cs.uri, s.workspaces[out[0].ws].dir, s.workspaces[out[len(out)-1].ws].dir)
	}
	return out, nil
}

// checkRewind refuses a rewind when files of the changeset changed since
// the turn, naming them all; the Editor checks every file again before it
// writes.
func checkRewind(ctx context.Context, ed Editor, e Edit) error {
	d, ok := ed.(DriftReader)
	if !ok {
		return nil
	}
	drifted, err := d.Drifted(ctx, e.Files)
	if err != nil {
		return err
	}
	if len(drifted) == 0 {
		return nil
	}
	return &protocol.Error{
		Code:    protocol.CodeConflict,
		Message: fmt.Sprintf("%s changed again after the turn; rewinding would discard that change, so nothing was changed: revert the other files one by one, or bring these back to the turn's version first", nameList(drifted)),
		Data:    map[string]any{"reason": protocol.ReasonChangedAfterTurn, "files": drifted},
	}
}
