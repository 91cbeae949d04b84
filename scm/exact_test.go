package scm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAssumeUnchangedHidden: a file marked "git update-index
// --assume-unchanged" is taken at its index entry whatever its working
// file holds, as git takes it: modified, deleted or rewritten with the
// same size, it is not shown; one whose index entry differs from HEAD is
// shown with the index's blob as its working side.
func TestAssumeUnchangedHidden(t *testing.T) {
	dir := baseRepo(t)
	writeFile(t, dir, "dir/c.txt", "charlie staged\n")
	gitRun(t, dir, "add", "dir/c.txt")
	gitRun(t, dir, "update-index", "--assume-unchanged", "a.txt", "b.txt", "dir/c.txt", "dir/sub/d.txt")
	warm := openRepo(t, dir)
	status(t, warm) // fill the caches before the edits

	writeFile(t, dir, "a.txt", "alpha, edited after the mark\n")
	must(t, os.Remove(filepath.Join(dir, "b.txt")))
	writeFile(t, dir, "dir/c.txt", "charlie staged, then edited\n")
	p := filepath.Join(dir, "dir/sub/d.txt")
	fi, err := os.Stat(p)
	must(t, err)
	writeFile(t, dir, "dir/sub/d.txt", "DELTA\n") // same size, mtime put back
	must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	writeFile(t, dir, "script.sh", "#!/bin/sh\necho edited\n") // not marked: shown

	stagedC := strings.TrimSpace(gitRun(t, dir, "rev-parse", ":dir/c.txt"))
	for name, r := range map[string]*Repo{"cold": openRepo(t, dir), "warm": warm} {
		st := status(t, r)
		want := gitView(t, dir, "")
		if d := diffLines(want, ourView(st.Changes)); d != "" {
			t.Errorf("%s: status mismatch (-git +ours):\n%s", name, d)
		}
		for _, c := range st.Changes {
			if c.Path == "dir/c.txt" && (c.Work == nil || c.Work.OID != stagedC) {
				t.Errorf("%s: dir/c.txt's working side %+v, want the index's blob %s", name, c.Work, stagedC)
			}
		}
		paths, err := r.StatusPaths(t.Context(), []string{"a.txt", "b.txt", "dir"})
		must(t, err)
		if v := ourView(paths); len(v) != 1 || v[0] != "M dir/c.txt" {
			t.Errorf("%s: StatusPaths of the marked files: %v, want only M dir/c.txt", name, v)
		}
	}
	if v := gitView(t, dir, ""); len(v) != 2 {
		t.Fatalf("git's own view changed meaning: %v", v)
	}
}

// TestIndexWithoutNanoseconds: an index written by a tool that leaves
// the nanosecond fields 0 is compared in whole seconds, as git built
// without USE_NSEC compares it: a clean tree is clean without hashing
// every file, and an edit of the same size within the entry's second is
// still seen (the racy rule, against the index file's own mtime).
func TestIndexWithoutNanoseconds(t *testing.T) {
	dir := baseRepo(t)
	// The symbolic link is as old as the files (ageAll sets regular
	// files only), so no entry is racy in the index's second.
	old := time.Now().Add(-time.Hour)
	tv := []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())}
	must(t, unix.Lutimes(filepath.Join(dir, "link"), tv))
	gitRun(t, dir, "update-index", "--refresh")
	zeroIndexNanos(t, dir)
	r := openRepo(t, dir)
	st := status(t, r)
	checkAgainstGit(t, dir, st, "")
	if len(st.Changes) != 0 {
		t.Fatalf("clean tree: %v", ourView(st.Changes))
	}
	if r.hashes != 0 {
		t.Errorf("a clean tree under an index without nanoseconds hashed %d files, want 0", r.hashes)
	}

	// A same-second, same-size edit after the index was written: the
	// entry's seconds match, and only the racy rule can see the edit.
	writeFile(t, dir, "a.txt", "fresh\n")
	gitRun(t, dir, "update-index", "a.txt")
	zeroIndexNanos(t, dir)
	p := filepath.Join(dir, "a.txt")
	fi, err := os.Stat(p)
	must(t, err)
	writeFile(t, dir, "a.txt", "FRESH\n")
	must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	st = status(t, openRepo(t, dir))
	if v := ourView(st.Changes); len(v) != 1 || v[0] != "M a.txt" {
		t.Errorf("same-second edit under an index without nanoseconds: %v, want M a.txt", v)
	}
	checkAgainstGit(t, dir, st, "")
}

// zeroIndexNanos rewrites the index with every entry's ctime and mtime
// nanoseconds 0, and the index file's mtime put back to what it was, as
// a tool that stores whole seconds leaves it.
func zeroIndexNanos(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, ".git", "index")
	fi, err := os.Stat(p)
	must(t, err)
	b, err := os.ReadFile(p)
	must(t, err)
	x, err := decodeIndex(b, nil)
	must(t, err)
	for _, e := range x.entries {
		e.CreatedAt = time.Unix(e.CreatedAt.Unix(), 0)
		e.ModifiedAt = time.Unix(e.ModifiedAt.Unix(), 0)
	}
	out, err := encodeIndex(x.version, x.entries, x.assumeValid, x.exts)
	must(t, err)
	must(t, os.WriteFile(p, out, 0o644))
	must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
}
