package scm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/scm/internal/gittest"
	"github.com/go-git/go-git/v5/plumbing"
)

func TestDecodeTreeMatchesGit(t *testing.T) {
	dir := newGitRepo(t)
	gittest.MakeHistory(t, dir, 2)
	writeFile(t, dir, "x/run.sh", "#!/bin/sh\n")
	os.Chmod(filepath.Join(dir, "x/run.sh"), 0o755)
	os.Symlink("x/run.sh", filepath.Join(dir, "link"))
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "modes")
	r := openRepo(t, dir)
	defer r.Close()
	for _, g := range gittest.AllObjects(t, dir) {
		if g.Type != plumbing.TreeObject {
			continue
		}
		entries, err := decodeTree(g.Data)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for _, e := range entries {
			kind := "blob"
			switch e.Mode {
			case 0o040000:
				kind = "tree"
			case 0o160000:
				kind = "commit"
			}
			fmt.Fprintf(&got, "%06o %s %s\t%s\n", uint32(e.Mode), kind, e.Hash, e.Name)
		}
		if want := gitRun(t, dir, "ls-tree", g.ID.String()); got.String() != want {
			t.Fatalf("tree %s:\n%s\nwant\n%s", g.ID, got.String(), want)
		}
	}
	if _, err := decodeTree([]byte("100644 name\x00short")); !errors.Is(err, errCorrupt) {
		t.Fatalf("truncated tree: %v", err)
	}
}

func TestRepoReadBlobThroughReader(t *testing.T) {
	dir := newGitRepo(t)
	gittest.MakeHistory(t, dir, 10)
	gitRun(t, dir, "gc", "-q")
	r := openRepo(t, dir)
	id := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD:d0/file0.txt"))
	want := gitRun(t, dir, "cat-file", "blob", id)
	got, err := r.ReadBlob(id)
	if err != nil || string(got) != want {
		t.Fatalf("ReadBlob = %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	if !r.objs.opened() {
		t.Fatal("ReadBlob did not use the object reader")
	}
	if _, err := r.ReadBlob(blobID("never stored")); err == nil {
		t.Fatal("ReadBlob of a missing blob succeeded")
	}
	tree := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD^{tree}"))
	if _, err := r.ReadBlob(tree); err == nil {
		t.Fatal("ReadBlob of a tree succeeded")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	got, err = r.ReadBlob(id)
	if err != nil || string(got) != want {
		t.Fatalf("ReadBlob after Close = %d bytes, %v; want the go-git answer", len(got), err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestRepoTreeThroughReader(t *testing.T) {
	dir := newGitRepo(t)
	gittest.MakeHistory(t, dir, 6)
	writeFile(t, dir, "x/y/z/deep.txt", "deep\n")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "deep")
	gitRun(t, dir, "gc", "-q")
	// Without an index there is no cache-tree: every tree is read.
	if err := os.Remove(filepath.Join(dir, ".git", "index")); err != nil {
		t.Fatal(err)
	}
	r := openRepo(t, dir)
	defer r.Close()
	head := plumbing.NewHash(strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD")))
	wantTree := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD^{tree}"))
	if got, err := r.commitTree(head); err != nil || got.String() != wantTree {
		t.Fatalf("commitTree = %s, %v; want %s", got, err, wantTree)
	}
	r.mu.Lock()
	ft, err := r.treeLocked(t.Context(), head)
	reads := r.treeReads
	r.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if reads < 5 || !r.objs.opened() {
		t.Fatalf("%d tree reads, reader %v: want every tree read through the reader", reads, r.objs.opened())
	}
	var got strings.Builder
	for i, p := range ft.paths {
		e := ft.ents[i]
		fmt.Fprintf(&got, "%06o blob %s\t%s\n", uint32(e.mode), e.hash, p)
	}
	if want := gitRun(t, dir, "ls-tree", "-r", "HEAD"); got.String() != want {
		t.Fatalf("flattened tree:\n%s\nwant\n%s", got.String(), want)
	}
}

// TestRepoGoGitReadsKeepNoPackMap: what go-git reads for the Repo (HEAD's
// commit here) comes through gitobj, so the first packed read builds no
// table of the pack. go-git's own packed path decodes the pack's index
// onto the heap and maps every offset in it to its id: megabytes here,
// 157 MB at a million files, resident for the process's life.
func TestRepoGoGitReadsKeepNoPackMap(t *testing.T) {
	dir := newGitRepo(t)
	const n = 30000
	var in strings.Builder
	for i := range n {
		s := fmt.Sprintf("file %d\n", i)
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(s), s)
	}
	fmt.Fprintf(&in, "commit refs/heads/main\ncommitter T <t@example.com> 0 +0000\ndata 5\nblobs\n")
	for i := range n {
		fmt.Fprintf(&in, "M 100644 :%d d%02d/f%05d\n", i+1, i%50, i)
	}
	cmd := execGit(dir, "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
	gitRun(t, dir, "repack", "-q", "-a", "-d")
	if n := len(looseIDs(t, dir)); n != 0 {
		t.Fatalf("%d loose objects: want HEAD's commit packed", n)
	}
	r := openRepo(t, dir)
	defer r.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	commit, tree, err := r.HeadTree()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD", "HEAD^{tree}")); commit+"\n"+tree != want {
		t.Fatalf("HeadTree = %s %s, git says %s", commit, tree, want)
	}
	// The zlib reader and its window are the most of it (~50 KB).
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Fatalf("reading HEAD's commit from a pack of %d objects allocated %d bytes: a table of the pack?", n, got)
	}
}

// looseIDs lists the loose objects of the repository at dir.
func looseIDs(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "??", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
