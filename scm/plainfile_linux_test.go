package scm

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadPlainFile: the one-call read takes a regular file reached
// through real directories only, and leaves everything else (a symbolic
// link at the end or on the way, a directory, a FIFO, a missing file)
// to the careful path.
func TestReadPlainFile(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a", "b", "f.txt"), []byte("plain\n"), 0o644))
	must(os.Symlink("b", filepath.Join(root, "a", "link")))
	must(os.Symlink("f.txt", filepath.Join(root, "a", "b", "to-f")))
	must(syscall.Mkfifo(filepath.Join(root, "a", "fifo"), 0o644))

	b, fi, ok := readPlainFile(root, "a/b/f.txt")
	if noOpenat2.Load() {
		t.Skip("openat2 is not available here")
	}
	if !ok || string(b) != "plain\n" || fi.Size() != 6 {
		t.Fatalf("a/b/f.txt: %q, %v", b, ok)
	}
	for _, rel := range []string{"a/link/f.txt", "a/b/to-f", "a/b", "a/fifo", "a/b/missing"} {
		if b, _, ok := readPlainFile(root, rel); ok {
			t.Errorf("%s read in one call (%q): it is for the careful path", rel, b)
		}
	}
	// Through a symbolic link in the root's own path: the careful path too.
	via := filepath.Join(t.TempDir(), "r")
	must(os.Symlink(root, via))
	if _, _, ok := readPlainFile(via, "a/b/f.txt"); ok {
		t.Errorf("read in one call through a symbolic link to the root")
	}
}

// TestReadWorktreeSameEitherWay: ReadWorktree gives the same answer
// whether the one-call read is available or not.
func TestReadWorktreeSameEitherWay(t *testing.T) {
	dir := newGitRepo(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "d"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "d", "x.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "y.txt"), []byte("y\n"), 0o644))
	must(os.Symlink("d", filepath.Join(dir, "dl")))
	must(os.Symlink("y.txt", filepath.Join(dir, "yl")))
	r := openRepo(t, dir)
	type answer struct {
		content string
		mode    uint32
		err     string
	}
	read := func() map[string]answer {
		out := map[string]answer{}
		for _, p := range []string{"d/x.sh", "y.txt", "dl/x.sh", "yl", "d", "missing", "../y.txt", ".git/HEAD"} {
			b, m, err := r.ReadWorktree(p)
			a := answer{content: string(b), mode: m}
			if err != nil {
				a.err = err.Error()
			}
			out[p] = a
		}
		return out
	}
	fast := read()
	noOpenat2.Store(true)
	defer noOpenat2.Store(false)
	careful := read()
	for p, a := range careful {
		if fast[p] != a {
			t.Errorf("%s: %+v with one call, %+v the careful way", p, fast[p], a)
		}
	}
	if a := fast["d/x.sh"]; a.err != "" || a.mode != 0o100755 {
		t.Errorf("d/x.sh: %+v", a)
	}
}
