package scm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ReplaceWorktree writes or removes a path only if it still holds what
// ReadHeld read, whatever changed it: an append, a rewrite of the same
// size within the same timestamp tick, a file that appeared.
func TestReplaceWorktreeLeavesAChangedFileAlone(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	defer r.Close()
	read := func(rel string) Held {
		t.Helper()
		h, err := r.ReadHeld(rel)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	disk := func(rel string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if errors.Is(err, os.ErrNotExist) {
			return "<absent>"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	next := Held{Exists: true, Content: []byte("reverted\n"), Mode: 0o100644}

	writeFile(t, dir, "same.txt", "as read\n")
	h := read("same.txt")
	if err := r.ReplaceWorktree("same.txt", h, next); err != nil {
		t.Fatal(err)
	}
	if got := disk("same.txt"); got != "reverted\n" {
		t.Errorf("an unchanged file: %q after the replace", got)
	}

	for name, change := range map[string]func(p string){
		"appended": func(p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("a save\n")
			f.Close()
		},
		"same size": func(p string) { os.WriteFile(p, []byte("AS READ\n"), 0o644) },
		"removed":   func(p string) { os.Remove(p) },
	} {
		rel := name + ".txt"
		writeFile(t, dir, rel, "as read\n")
		h := read(rel)
		change(filepath.Join(dir, rel))
		want := disk(rel)
		for _, n := range []Held{next, {}} {
			if err := r.ReplaceWorktree(rel, h, n); !errors.Is(err, ErrChanged) {
				t.Errorf("%s, then replaced by %v: %v, want ErrChanged", name, n.Exists, err)
			}
			if got := disk(rel); got != want {
				t.Errorf("%s: %q after a refused replace, want %q", name, got, want)
			}
		}
	}

	h = read("new/appeared.txt")
	writeFile(t, dir, "new/appeared.txt", "someone else's\n")
	if err := r.ReplaceWorktree("new/appeared.txt", h, next); !errors.Is(err, ErrChanged) {
		t.Errorf("a file that appeared: %v, want ErrChanged", err)
	}
	if got := disk("new/appeared.txt"); got != "someone else's\n" {
		t.Errorf("a file that appeared: %q", got)
	}

	writeFile(t, dir, "gone/only.txt", "as read\n")
	h = read("gone/only.txt")
	if err := r.ReplaceWorktree("gone/only.txt", h, Held{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory a removal left empty is still there: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".git", TempDirName)); len(ents) != 0 {
		t.Errorf("temp files left behind: %d", len(ents))
	}
}

// Writes prepared ahead are renamed into place one by one, each checked;
// those not used are discarded.
func TestPreparedWrites(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	defer r.Close()
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, "b.txt", "b\n")
	ha, _ := r.ReadHeld("a.txt")
	hb, _ := r.ReadHeld("b.txt")
	next := []Held{{Exists: true, Content: []byte("A\n"), Mode: 0o100755}, {Exists: true, Content: []byte("B\n"), Mode: 0o100644}, {}}
	prs, err := r.PrepareWrites([]string{"a.txt", "b.txt", "c.txt"}, next)
	if err != nil {
		t.Fatal(err)
	}
	if prs[2] != nil {
		t.Error("an absence was prepared")
	}
	writeFile(t, dir, "b.txt", "b saved meanwhile\n")
	if err := r.ReplacePrepared("a.txt", ha, next[0], prs[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.ReplacePrepared("b.txt", hb, next[1], prs[1]); !errors.Is(err, ErrChanged) {
		t.Errorf("b.txt changed after its read: %v, want ErrChanged", err)
	}
	r.DiscardPrepared(prs)
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "A\n" {
		t.Errorf("a.txt = %q", b)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a.txt")); fi.Mode()&0o100 == 0 {
		t.Errorf("a.txt mode %v, want executable", fi.Mode())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "b.txt")); string(b) != "b saved meanwhile\n" {
		t.Errorf("b.txt = %q", b)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".git", TempDirName)); len(ents) != 0 {
		t.Errorf("temp files left behind: %d", len(ents))
	}
}

// A save through a descriptor opened before the rename lands in the file
// the rename moved away: it is put back in place, never deleted.
func TestReplaceWorktreeKeepsAWriteThroughAnOpenDescriptor(t *testing.T) {
	dir := newGitRepo(t)
	r := openRepo(t, dir)
	defer r.Close()
	p := filepath.Join(dir, "open.txt")
	writeFile(t, dir, "open.txt", "as read\n")
	ageAll(t, dir)
	h, err := r.ReadHeld("open.txt")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- r.ReplaceWorktree("open.txt", h, Held{Exists: true, Content: []byte("reverted\n"), Mode: 0o100644})
	}()
	// Once the new content is in place, the old file is written and
	// closed.
	for {
		b, _ := os.ReadFile(p)
		if string(b) == "reverted\n" {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the replace ended (%v) before its rename was seen", err)
		default:
		}
	}
	f.WriteString("saved through the open file\n")
	f.Close()
	if err := <-done; !errors.Is(err, ErrChanged) {
		t.Errorf("replace: %v, want ErrChanged", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "as read\nsaved through the open file\n" {
		t.Errorf("open.txt = %q, want the save put back", b)
	}
}
