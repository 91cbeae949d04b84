package view

import (
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestFindFollowsEveryChange: the index Find keeps across review marks
// and status changes, which leave the files where they are, still names
// the right file, and a change that moves files is indexed again.
func TestFindFollowsEveryChange(t *testing.T) {
	m := New(nil, nil, nil)
	m.SetFiles([]protocol.ChangesetFile{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	check := func(when string) {
		t.Helper()
		for i, f := range m.State.Files {
			if got := m.Find(f.ID); got != &m.State.Files[i] {
				t.Fatalf("%s: Find(%q) is not the file at %d", when, f.ID, i)
			}
		}
		if m.Find("gone") != nil {
			t.Fatalf("%s: Find of an absent id", when)
		}
	}
	check("at first")
	m.Apply(protocol.ChangesetFilesReviewChanged{Files: []string{"b"}, Reviewed: true})
	check("after a review mark")
	if f := m.Find("b"); !f.IsReviewed() {
		t.Fatal("Find returns the file as it was before the mark")
	}
	m.Apply(protocol.ChangesetStatusChanged{Status: protocol.StatusReady})
	check("after a status")
	m.Apply(protocol.ChangesetFileRemoved{FileID: "a"})
	check("after a removal")
	m.Apply(protocol.ChangesetFileSet{File: protocol.ChangesetFile{ID: "d"}})
	check("after an addition")
	m.Apply(protocol.ChangesetFileSet{File: protocol.ChangesetFile{ID: "b", Reviewed: protocol.Ptr(false)}})
	check("after a file set again")
	if f := m.Find("b"); f.IsReviewed() {
		t.Fatal("Find returns the file as it was before it was set again")
	}
	m.Apply(protocol.ChangesetFileSet{File: protocol.ChangesetFile{ID: "e"}})
	m.Apply(protocol.ChangesetFileRemoved{FileID: "c"})
	m.Apply(protocol.ChangesetFileSet{File: protocol.ChangesetFile{ID: "c"}})
	check("after additions and a removal in turn")
}
