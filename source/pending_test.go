package source

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// A prepared revert names its pending undo and writes nothing; carried
// out, what it planned to leave is what it leaves.
func TestPreparedRevertWritesNothingUntilApplied(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "alpha edited\n")
	writeFile(t, dir, "new.txt", "new\n")
	w := openGit(t, dir)
	files := []session.EditFile{viewOf(t, w, "a.txt"), viewOf(t, w, "new.txt")}

	p, err := w.PrepareRevert(ctx, session.Edit{Files: files, Index: true})
	must(t, err)
	kept := p.Pending()
	if kept == nil || !kept.Pending {
		t.Fatalf("the plan's undo is %+v, want a pending undo", kept)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "alpha edited\n" {
		t.Fatalf("a.txt = %q: written by the plan", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err != nil {
		t.Fatalf("new.txt deleted by the plan: %v", err)
	}
	u, err := w.ApplyRevert(ctx, p)
	must(t, err)
	if !slices.EqualFunc(kept.After, u.After, sameSaved) || !slices.EqualFunc(kept.Files, u.Files, sameSaved) {
		t.Errorf("planned %+v, left %+v", kept.After, u.After)
	}
	if got := readFile(t, dir, "a.txt"); got != "alpha\n" {
		t.Errorf("a.txt = %q after the revert", got)
	}
}

// A pending undo (the daemon stopped during the revert's writes) is
// current while each file is as before or as planned, and its undo puts
// back exactly what was saved.
func TestPendingUndoHalfWritten(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "alpha edited\n")
	writeFile(t, dir, "b.txt", "bravo edited\n")
	w := openGit(t, dir)
	u := &session.Undo{Pending: true,
		Files: []session.SavedFile{
			{Path: "a.txt", Exists: true, Content: []byte("alpha edited\n"), Mode: changeset.ModeRegular},
			{Path: "b.txt", Exists: true, Content: []byte("bravo edited\n"), Mode: changeset.ModeRegular},
		},
		After: []session.SavedFile{
			{Path: "a.txt", Exists: true, Content: []byte("alpha\n"), Mode: changeset.ModeRegular},
			{Path: "b.txt", Exists: true, Content: []byte("bravo\nbravo\nbravo\n"), Mode: changeset.ModeRegular},
		},
	}
	writeFile(t, dir, "a.txt", "alpha\n") // the first write happened, not the second
	if !w.UndoCurrent(u) {
		t.Fatal("a half-written pending undo is not current")
	}
	complete := *u
	complete.Pending = false
	if w.UndoCurrent(&complete) {
		t.Fatal("a settled undo is current with a file not as it left it")
	}
	writeFile(t, dir, "b.txt", "bravo changed since\n")
	if w.UndoCurrent(u) {
		t.Fatal("a pending undo is current with a file changed since")
	}
	if err := w.Undo(ctx, u); protocol.CodeOf(err) != protocol.CodeInvalidParams {
		t.Fatalf("undo over a change: %v", err)
	}
	writeFile(t, dir, "b.txt", "bravo edited\n")
	must(t, w.Undo(ctx, u))
	for rel, want := range map[string]string{"a.txt": "alpha edited\n", "b.txt": "bravo edited\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, rel)); string(b) != want {
			t.Errorf("%s after undo = %q, want %q", rel, b, want)
		}
	}
}

// A hunk's id is its file's path, its place in the before side and its
// removed and added lines: kept when lines change elsewhere, new when the
// hunk changes, and never shared with an identical hunk, also one that
// appears later above it.
func TestHunkIDs(t *testing.T) {
	ids := func(path, from, to string) []string {
		r := changeset.Compare(&changeset.Side{Path: path, Content: []byte(from)}, &changeset.Side{Path: path, Content: []byte(to)}, changeset.Options{})
		var out []string
		for _, h := range hunkList(r) {
			out = append(out, h.ID)
		}
		return out
	}
	base := numbered(40, nil)
	one := ids("f.txt", base, numbered(40, map[int]string{3: "x", 35: "y"}))
	two := ids("f.txt", base, numbered(40, map[int]string{3: "x", 20: "z", 35: "y"}))
	edited := ids("f.txt", base, numbered(40, map[int]string{3: "X", 35: "y"}))
	other := ids("g.txt", base, numbered(40, map[int]string{3: "x", 35: "y"}))
	if len(one) != 2 || len(two) != 3 || one[0] != two[0] || one[1] != two[2] || slices.Contains(one, two[1]) {
		t.Errorf("an edit elsewhere changed ids: %v then %v", one, two)
	}
	if edited[0] == one[0] || edited[1] != one[1] {
		t.Errorf("an edit of the first hunk: %v then %v", one, edited)
	}
	if other[0] == one[0] {
		t.Error("the same hunk in another file has the same id")
	}
	dup := numbered(40, map[int]string{3: "dup", 35: "dup"})
	same := ids("f.txt", dup, numbered(40, map[int]string{3: "x", 35: "x"}))
	if same[0] == same[1] {
		t.Errorf("identical hunks share an id: %v", same)
	}
	dup3 := numbered(40, map[int]string{3: "dup", 20: "dup", 35: "dup"})
	two = ids("f.txt", dup3, numbered(40, map[int]string{3: "dup", 20: "x", 35: "x"}))
	three := ids("f.txt", dup3, numbered(40, map[int]string{3: "x", 20: "x", 35: "x"}))
	if len(three) != 3 || slices.Contains(two, three[0]) || three[1] != two[0] || three[2] != two[1] {
		t.Errorf("the same edit made again above two identical hunks: %v then %v; want the new hunk's id new and the others kept", two, three)
	}
}

func numbered(n int, with map[int]string) string {
	var b []byte
	for i := 1; i <= n; i++ {
		if s, ok := with[i]; ok {
			b = append(b, s...)
		} else {
			b = append(b, "line "...)
			b = append(b, byte('0'+i/10), byte('0'+i%10))
		}
		b = append(b, '\n')
	}
	return string(b)
}
