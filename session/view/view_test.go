package view

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

func TestParseShown(t *testing.T) {
	sh, err := ParseShown(protocol.Object{"message": "x"})
	if sh != nil || err != nil {
		t.Errorf("no versions named: %v, %v; want nil, nil", sh, err)
	}
	sh, err = ParseShown(protocol.Object{MetaView: "v", MetaVersions: map[string]any{
		"file:///r/a": map[string]any{"before": "b1", "after": "a1"},
		"file:///r/n": map[string]any{"after": "a2"},
	}})
	if err != nil || sh.View != "v" || sh.Files["file:///r/a"] != (Sides{"b1", "a1"}) || sh.Files["file:///r/n"] != (Sides{"", "a2"}) {
		t.Errorf("parsed %+v, %v", sh, err)
	}
	for _, bad := range []protocol.Object{
		{MetaView: 3},
		{MetaVersions: "a1"},
		{MetaVersions: map[string]any{"file:///r/a": "a1"}},
		{MetaVersions: map[string]any{"file:///r/a": map[string]any{"after": 1}}},
	} {
		if _, err := ParseShown(bad); err == nil {
			t.Errorf("%v parsed", bad)
		}
	}
}

// file is a published file with the sides' nonces ("" for absent).
func file(id, before, after string) protocol.ChangesetFile {
	f := protocol.ChangesetFile{ID: id}
	if before != "" {
		f.Edit.Before = &protocol.FileEditSide{URI: id, Content: protocol.ContentRef{Nonce: before}}
	}
	if after != "" {
		f.Edit.After = &protocol.FileEditSide{URI: id, Content: protocol.ContentRef{Nonce: after}}
	}
	return f
}

func model(files ...protocol.ChangesetFile) *Model {
	m := New(nil, nil, nil)
	m.SetFiles(files)
	return m
}

// A client that names a file version the file no longer has, or a target
// it did not name, is told apart from one that names what the changeset
// publishes.
func TestChangedSince(t *testing.T) {
	m := model(file("a", "b1", "a1"), file("n", "", "a2"))
	name := func(id string) string { return id + ".txt" }
	same := &Shown{Files: map[string]Sides{"a": {"b1", "a1"}}}
	if c, u := m.ChangedSince(same, []string{"a"}, name); len(c)+len(u) != 0 {
		t.Errorf("as shown: changed %v, unseen %v", c, u)
	}
	if c, u := m.ChangedSince(same, []string{"a", "n"}, name); len(c) != 0 || len(u) != 1 || u[0] != "n.txt" {
		t.Errorf("a target not named: changed %v, unseen %v", c, u)
	}
	old := &Shown{Files: map[string]Sides{"a": {"b1", "a0"}, "gone": {"x", ""}}}
	if c, _ := m.ChangedSince(old, nil, name); len(c) != 2 || c[0] != "a.txt" || c[1] != "gone.txt" {
		t.Errorf("changed since: %v", c)
	}
}

func TestViewStamp(t *testing.T) {
	m := New(nil, nil, nil)
	if m.ViewStamp(1) != "" {
		t.Error("a changeset with no view publishes one")
	}
	m.Views = map[int]string{0: "s0", 2: "s2"}
	tok := m.ViewStamp(3)
	if v, ok := ViewOfStamp(tok, 2, 3); !ok || v != "s2" {
		t.Errorf("workspace 2 of %q: %q %v", tok, v, ok)
	}
	if _, ok := ViewOfStamp(tok, 1, 3); ok {
		t.Errorf("workspace 1 has no view, yet %q names one", tok)
	}
	if _, ok := ViewOfStamp(tok, 0, 2); ok {
		t.Errorf("a stamp of 3 workspaces read as one of 2")
	}
}

// A review flag holds while the content it was given at is the file's;
// an edit clears it and undoing the edit brings it back. Two identical
// files at other paths do not share it.
func TestReviewFollowsContent(t *testing.T) {
	m := model(file("a", "b1", "a1"), file("c", "b1", "a1"))
	m.Reviews = m.Reviewed([]string{"a"}, true)
	for _, tc := range []struct {
		f    protocol.ChangesetFile
		want bool
	}{
		{file("a", "b1", "a1"), true},
		{file("a", "b1", "a2"), false},
		{file("c", "b1", "a1"), false},
	} {
		f := tc.f
		m.Decorate(&f)
		if f.IsReviewed() != tc.want {
			t.Errorf("%s at %s: reviewed %v, want %v", f.ID, SidesOf(f).After, f.IsReviewed(), tc.want)
		}
	}
	if next := m.Reviewed([]string{"a"}, false); len(next) != 0 {
		t.Errorf("clearing left %v", next)
	}
}

// Reconcile sends only what changed, and removes only what the
// computation covered.
func TestReconcile(t *testing.T) {
	m := model(file("a", "b1", "a1"), file("b", "b2", "a2"), file("c", "b3", "a3"))
	got := m.Reconcile([]protocol.ChangesetFile{file("a", "b1", "a1"), file("b", "b2", "a9"), file("d", "", "a4")},
		func(id string) bool { return id != "c" })
	if len(got) != 2 || got[0].(protocol.ChangesetFileSet).File.ID != "b" || got[1].(protocol.ChangesetFileSet).File.ID != "d" {
		t.Fatalf("actions %v, want fileSet b and d only", got)
	}
	got = m.Reconcile(nil, func(string) bool { return true })
	if len(got) != 3 {
		t.Errorf("an empty computation covering all removes all: %v", got)
	}
}

// A burst larger than a chunk goes out in chunks when most of the list
// stays, and as one list when most of it is new; either way the model
// holds the list the actions lead to.
func TestPublishChunks(t *testing.T) {
	var files []protocol.ChangesetFile
	for i := range 3 * Chunk {
		files = append(files, file("f"+strconv.Itoa(i), "b", "a"))
	}
	m := model(files...)
	var changes []protocol.Action
	for i := range Chunk + 1 {
		f := files[i]
		f.Edit.After.Content.Nonce = "a2"
		changes = append(changes, protocol.ChangesetFileSet{File: f})
	}
	batches := m.Publish(changes)
	if len(batches) != 2 || len(batches[0]) != Chunk || len(batches[1]) != 1 {
		t.Errorf("batches of %d", len(batches))
	}
	if got := SidesOf(*m.Find(files[Chunk].ID)).After; got != "a2" {
		t.Errorf("the model did not apply the chunks: %q", got)
	}
	changes = changes[:0]
	for i := range 4 * Chunk {
		changes = append(changes, protocol.ChangesetFileSet{File: file("new"+strconv.Itoa(i), "", "x")})
	}
	batches = m.Publish(changes)
	if len(batches) != 1 || len(batches[0]) != 1 {
		t.Fatalf("most of the list new: %d batches", len(batches))
	}
	if _, ok := batches[0][0].(protocol.ChangesetContentChanged); !ok || len(m.State.Files) != 7*Chunk {
		t.Errorf("want one contentChanged of %d files, got %T and %d", 7*Chunk, batches[0][0], len(m.State.Files))
	}
}

// Whatever the size of a batch, the model ends with the list the
// reducer gives applying its actions one by one: sets in place, new
// files appended in order, removals, a file removed then set again.
func TestPublishAppliesAsTheReducer(t *testing.T) {
	for _, n := range []int{1, fewChanges + 1, Chunk} {
		var files []protocol.ChangesetFile
		for i := range 4 * Chunk {
			files = append(files, file("f"+strconv.Itoa(i), "b", "a"))
		}
		var changes []protocol.Action
		for i := 0; len(changes) < n; i++ {
			switch i % 4 {
			case 0:
				f := files[i]
				f.Edit.After.Content.Nonce = "a2"
				changes = append(changes, protocol.ChangesetFileSet{File: f})
			case 1:
				changes = append(changes, protocol.ChangesetFileRemoved{FileID: files[i].ID})
			case 2:
				changes = append(changes, protocol.ChangesetFileSet{File: file("new"+strconv.Itoa(i), "", "x")})
			case 3:
				changes = append(changes, protocol.ChangesetFileRemoved{FileID: files[i-2].ID}, protocol.ChangesetFileSet{File: files[i-2]})
			}
		}
		one := model(files...)
		for _, a := range changes {
			one.Apply(a)
		}
		m := model(files...)
		batches := m.Publish(changes)
		if len(batches) != 1 || len(batches[0]) != len(changes) {
			t.Errorf("%d changes went out as %d batches", len(changes), len(batches))
		}
		if !reflect.DeepEqual(m.State.Files, one.State.Files) {
			t.Errorf("%d changes: the model's list differs from the reducer's, one action at a time", len(changes))
		}
	}
}
