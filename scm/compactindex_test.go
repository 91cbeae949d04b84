package scm

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// sameSnapshot checks that compactSnapshot reads b as the full decoder
// does whenever it takes it, and fails where the full decoder fails.
func sameSnapshot(t *testing.T, name string, b []byte) (compact bool) {
	t.Helper()
	full, ferr := (&Repo{}).fullSnapshot(b, "")
	got, ok, err := compactSnapshot(b)
	switch {
	case err != nil:
		if ferr == nil {
			t.Fatalf("%s: compact: %v; the full decoder reads it", name, err)
		}
	case !ok:
	case ferr != nil:
		t.Fatalf("%s: compact read an index the full decoder refuses (%v)", name, ferr)
	case !reflect.DeepEqual(got.names, full.names) || !reflect.DeepEqual(got.ents, full.ents) || !reflect.DeepEqual(got.tree, full.tree):
		t.Fatalf("%s: compact differs from full:\n%+v\n%v\n%+v\nwant\n%+v\n%v\n%+v", name, got.names, got.ents, got.tree, full.names, full.ents, full.tree)
	}
	return ok && err == nil
}

// TestCompactIndexMatchesFull: the indexes git writes, of every version,
// with conflicts, assume-unchanged, skip-worktree and intent-to-add
// entries and a cache-tree, are read straight into the compact entries,
// exactly as through the full decoder; a split index is left to it.
func TestCompactIndexMatchesFull(t *testing.T) {
	for i, b := range seedIndexes(t) {
		if !sameSnapshot(t, "seed", b) {
			t.Errorf("seed %d not taken by the compact reader", i)
		}
	}
	dir := newGitRepo(t)
	for _, p := range []string{"a.txt", "d/b.txt", "d/c.txt", "d/e/f.txt", "z.txt"} {
		writeFile(t, dir, p, p+"\n")
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "one")
	gitRun(t, dir, "checkout", "-q", "-b", "other")
	writeFile(t, dir, "d/b.txt", "other\n")
	gitRun(t, dir, "commit", "-q", "-am", "other")
	gitRun(t, dir, "checkout", "-q", "main")
	writeFile(t, dir, "d/b.txt", "main\n")
	gitRun(t, dir, "commit", "-q", "-am", "main")
	if out, err := runGit(dir, "merge", "-q", "other"); err == nil {
		t.Fatalf("merge did not conflict: %s", out)
	}
	gitRun(t, dir, "update-index", "--assume-unchanged", "a.txt")
	gitRun(t, dir, "update-index", "--skip-worktree", "d/c.txt")
	writeFile(t, dir, "new.txt", "n\n")
	gitRun(t, dir, "add", "-N", "new.txt")
	index := filepath.Join(dir, ".git", "index")
	for _, v := range []string{"2", "3", "4"} {
		if v == "2" {
			// Extended flags need version 3: without them, 2.
			gitRun(t, dir, "update-index", "--no-skip-worktree", "d/c.txt")
			gitRun(t, dir, "rm", "-q", "--cached", "new.txt")
		}
		gitRun(t, dir, "update-index", "--index-version", v)
		b, err := os.ReadFile(index)
		must(t, err)
		if !sameSnapshot(t, "version "+v, b) {
			t.Errorf("version %s not taken by the compact reader", v)
		}
	}
	gitRun(t, dir, "update-index", "--split-index")
	b, err := os.ReadFile(index)
	must(t, err)
	if sameSnapshot(t, "split", b) {
		t.Errorf("a split index was taken by the compact reader")
	}
}

// FuzzCompactIndex: no input makes the compact reader panic or read an
// index otherwise than the full decoder.
func FuzzCompactIndex(f *testing.F) {
	for _, b := range seedIndexes(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sameSnapshot(t, "input", b)
	})
}
