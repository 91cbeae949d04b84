package view

import (
	"slices"

	"github.com/changesetd/changesetd/protocol"
)

// Reconcile returns the actions that bring the published list to what was
// computed: a fileSet for each computed file that is new or whose
// republishing would change something (SameFile), and a fileRemoved for
// each published file the computation did not list and covered (a partial
// refresh covers only some paths; a workspace that failed covers none).
// Computed files must already be decorated (Decorate). The model is not
// changed.
func (m *Model) Reconcile(computed []protocol.ChangesetFile, covered func(id string) bool) []protocol.Action {
	seen := make(map[string]bool, len(computed))
	var changes []protocol.Action
	for _, f := range computed {
		seen[f.ID] = true
		if old := m.Find(f.ID); old == nil || !SameFile(*old, f) {
			changes = append(changes, protocol.ChangesetFileSet{File: f})
		}
	}
	for _, f := range m.State.Files {
		if !seen[f.ID] && covered(f.ID) {
			changes = append(changes, protocol.ChangesetFileRemoved{FileID: f.ID})
		}
	}
	return changes
}

// Chunk is how many fileSet and fileRemoved actions of a refresh are
// published at a time: one hold of the sequencing lock each, and a burst
// reaches clients as runs of at most this many files they can render as
// they come.
const Chunk = 256

// fewChanges is how many changes Publish applies one by one through the
// reducer (a save's): past it, indexing the list once is cheaper than
// searching and copying it once per change.
const fewChanges = 8

// Publish applies a refresh's fileSet and fileRemoved actions to the
// model and returns them as the batches to publish, in order, each in one
// hold of the sequencing lock. At most Chunk changes go out one by one.
// When most of the resulting list is new (a checkout, a rebase), or most
// of it went, one contentChanged with the list is smaller than the deltas
// and goes out instead (operations kept). Either way what a refresh sends
// grows with what changed, not with the list: a burst spread over many
// refreshes costs about what it changed.
func (m *Model) Publish(changes []protocol.Action) [][]protocol.Action {
	if len(changes) == 0 {
		return nil
	}
	if len(changes) <= fewChanges {
		out := make([]protocol.Action, 0, len(changes))
		for _, a := range changes {
			a, _ = m.Apply(a)
			out = append(out, a)
		}
		return [][]protocol.Action{out}
	}
	kept, set := ApplyFiles(m.State.Files, changes)
	if len(changes) <= Chunk {
		// One batch of deltas, applied in one pass: the reducer copies
		// and searches the whole list for each action, which for a
		// refresh of a couple of hundred files in a list of ten
		// thousand was most of a second.
		m.SetFiles(kept)
		return [][]protocol.Action{slices.Clone(changes)}
	}
	// A fileRemoved is an id; a file is far more.
	if removed := len(changes) - set; 2*set+removed > len(kept) {
		a, _ := m.Apply(protocol.ChangesetContentChanged{Files: kept})
		return [][]protocol.Action{{a}}
	}
	// The reducer's effects applied in one pass rather than action by
	// action, each of which would copy the list.
	m.SetFiles(kept)
	return slices.Collect(slices.Chunk(changes, Chunk))
}

// ApplyFiles returns the list that reducing changes on files gives, and
// how many of them set a file: fileSet replaces in place or appends,
// fileRemoved removes.
func ApplyFiles(files []protocol.ChangesetFile, changes []protocol.Action) ([]protocol.ChangesetFile, int) {
	files = slices.Clone(files)
	removed := make([]bool, len(files), len(files)+len(changes))
	at := make(map[string]int, len(files))
	for i, f := range files {
		at[f.ID] = i
	}
	set := 0
	for _, a := range changes {
		switch a := a.(type) {
		case protocol.ChangesetFileSet:
			set++
			f := a.File.Clone()
			if i, ok := at[f.ID]; ok {
				files[i] = f
				continue
			}
			at[f.ID] = len(files)
			files = append(files, f)
			removed = append(removed, false)
		case protocol.ChangesetFileRemoved:
			if i, ok := at[a.FileID]; ok {
				removed[i] = true
				delete(at, a.FileID)
			}
		}
	}
	kept := files[:0]
	for i, f := range files {
		if !removed[i] {
			kept = append(kept, f)
		}
	}
	if kept == nil {
		kept = []protocol.ChangesetFile{}
	}
	return kept, set
}
