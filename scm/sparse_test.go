package scm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sparseRepo is a committed repository checked out sparsely (cone mode,
// only sub/) with a sparse index: other/ and other/x/ are one sparse
// directory entry.
func sparseRepo(t *testing.T) string {
	dir := newGitRepo(t)
	for _, f := range []string{"a.txt", "sub/b.txt", "sub/deep/c.txt", "other/d.txt", "other/x/e.txt", "zz/f.txt"} {
		writeFile(t, dir, f, f+"\n")
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "files")
	// --sparse-index sets index.sparse and writes the index sparse.
	gitRun(t, dir, "sparse-checkout", "set", "--cone", "--sparse-index", "sub")
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	must(t, err)
	x, _, err := decodeIndexOnly(b)
	must(t, err)
	if !x.sparse {
		t.Fatal("git did not write a sparse index")
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
		t.Fatal("other/ is checked out")
	}
	return dir
}

// TestSparseIndex: a sparse index is read, its sparse directories
// expanded into skip-worktree entries, and status agrees with git; HEAD's
// unchanged sparse directories are taken from the expansion, not read
// again; a stage writes the index back whole, which git reads.
func TestSparseIndex(t *testing.T) {
	dir := sparseRepo(t)
	writeFile(t, dir, "a.txt", "changed\n")
	writeFile(t, dir, "sub/b.txt", "changed\n")
	must(t, os.Remove(filepath.Join(dir, "sub/deep/c.txt")))
	writeFile(t, dir, "sub/new.txt", "new\n")

	r := openRepo(t, dir)
	defer r.Close()
	checkAgainstGit(t, dir, status(t, r), "")
	if _, short := treeCounts(r); short < 2 {
		t.Errorf("%d directories taken from the index, want the two sparse ones (other, zz)", short)
	}
	full := gitRun(t, dir, "ls-files", "--stage") // git expands for ls-files
	r.mu.Lock()
	idx, err := r.indexLocked()
	r.mu.Unlock()
	must(t, err)
	var ours []string
	for _, n := range idx.names {
		e := idx.get(n).e
		ours = append(ours, fmt.Sprintf("%o %s 0\t%s", e.Mode, e.Hash, n))
	}
	if d := diffLines(strings.Split(strings.TrimSpace(full), "\n"), ours); d != "" {
		t.Errorf("expanded index (-git ls-files +ours):\n%s", d)
	}

	// git changes the index in the cone (and writes it sparse again): it
	// is read again, the trees outside the cone are not.
	gitRun(t, dir, "add", "sub/new.txt")
	gitRun(t, dir, "reset", "-q", "sub/new.txt")
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	must(t, err)
	if x, _, err := decodeIndexOnly(b); err != nil || !x.sparse {
		t.Fatalf("git wrote the index full (%v)", err)
	}
	r.mu.Lock()
	r.treeReads = 0
	_, err = r.indexLocked()
	reads := r.treeReads
	r.mu.Unlock()
	must(t, err)
	if reads != 0 {
		t.Errorf("%d trees read to expand the index again", reads)
	}

	must(t, r.StagePath(context.Background(), "sub/b.txt"))
	checkAgainstGit(t, dir, status(t, r), "")
	if got := gitRun(t, dir, "diff", "--cached", "--name-only"); got != "sub/b.txt\n" {
		t.Errorf("staged after our stage: %q", got)
	}
	if got := gitRun(t, dir, "ls-files", "-v", "other/x/e.txt"); got != "S other/x/e.txt\n" {
		t.Errorf("outside the cone after our stage: %q, want skip-worktree", got)
	}
	gitRun(t, dir, "commit", "-q", "-m", "staged")
	if got := strings.TrimSpace(gitRun(t, dir, "status", "--porcelain")); got != "M a.txt\n D sub/deep/c.txt\n?? sub/new.txt" && got != " M a.txt\n D sub/deep/c.txt\n?? sub/new.txt" {
		t.Errorf("git status after commit:\n%s", got)
	}
	checkAgainstGit(t, dir, status(t, openRepo(t, dir)), "")
}

// TestWorktreeConfigExtension: git sparse-checkout (without a sparse
// index) sets extensions.worktreeConfig, which go-git alone refuses; the
// repository opens, config.worktree is read, and status agrees with git.
func TestWorktreeConfigExtension(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, dir, "sub/b.txt", "b\n")
	writeFile(t, dir, "other/d.txt", "d\n")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "files")
	gitRun(t, dir, "sparse-checkout", "set", "--cone", "sub")
	if got := strings.TrimSpace(gitRun(t, dir, "config", "extensions.worktreeConfig")); got != "true" {
		t.Fatalf("extensions.worktreeConfig = %q", got)
	}
	writeFile(t, dir, "sub/b.txt", "changed\n")
	r := openRepo(t, dir)
	defer r.Close()
	checkAgainstGit(t, dir, status(t, r), "")
}
