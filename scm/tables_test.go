package scm

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// TestIndexSnapshotLookups: the index's entries are found by binary
// search, and a directory's range holds exactly the paths below it, not
// "a.b" or "a0", which sort among them bytewise ('.' < '/' < '0').
func TestIndexSnapshotLookups(t *testing.T) {
	names := []string{"a", "a.b", "a/b", "a/c/d", "a0", "b"}
	x := &indexSnapshot{names: names, ents: make([]idxEntry, len(names))}
	for i, n := range names {
		if x.get(n) != &x.ents[i] {
			t.Errorf("get(%q) is not its entry", n)
		}
	}
	for _, n := range []string{"", "a/", "a/c", "c"} {
		if x.get(n) != nil {
			t.Errorf("get(%q) found an entry", n)
		}
	}
	for dir, want := range map[string][]string{"": names, "a": {"a/b", "a/c/d"}, "a/c": {"a/c/d"}, "a.b": nil, "c": nil} {
		lo, hi := x.below(dir)
		if got := names[lo:hi]; !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("below(%q) = %q, want %q", dir, got, want)
		}
	}
	ft := &flatTree{}
	for i, p := range []string{"b", "a/c", "a.b"} {
		ft.add(p, treeEntry{mode: filemode.Regular, hash: plumbing.Hash{byte(i)}})
	}
	ft.sortPaths()
	if !slices.Equal(ft.paths, []string{"a.b", "a/c", "b"}) {
		t.Fatalf("sorted paths %q", ft.paths)
	}
	if e, ok := ft.get("b"); !ok || e.hash != (plumbing.Hash{0}) {
		t.Errorf("get(b) = %v, %v: the entry did not move with its path", e, ok)
	}
}

// TestIndexEntryKeepsWhatStatusCompares: the resident index's compact
// entries give back the stat data, times included, exactly as go-git's
// decoded entries held them, for an index git wrote (with nanoseconds)
// and for entries without stat data.
func TestIndexEntryKeepsWhatStatusCompares(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, "d/b.sh", "#!/bin/sh\n")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "update-index", "--chmod=+x", "d/b.sh")
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := decodeIndex(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	entries := append(x.entries, &index.Entry{Name: "no-stat", Mode: filemode.Regular, SkipWorktree: true})
	for _, e := range entries {
		c := newIndexEntry(e)
		got := index.Entry{Name: e.Name, Hash: c.Hash, Mode: c.Mode, Size: c.Size, Inode: c.Inode, UID: c.UID, GID: c.GID,
			Dev: e.Dev, Stage: e.Stage, CreatedAt: c.changeTime(), ModifiedAt: c.modTime(),
			IntentToAdd: c.IntentToAdd, SkipWorktree: c.SkipWorktree}
		if !got.ModifiedAt.Equal(e.ModifiedAt) || !got.CreatedAt.Equal(e.CreatedAt) || got.ModifiedAt.IsZero() != e.ModifiedAt.IsZero() {
			t.Errorf("%s: times %v %v, decoded %v %v", e.Name, got.ModifiedAt, got.CreatedAt, e.ModifiedAt, e.CreatedAt)
		}
		got.ModifiedAt, got.CreatedAt = e.ModifiedAt, e.CreatedAt
		if got != *e {
			t.Errorf("%s: kept %+v, decoded %+v", e.Name, got, *e)
		}
	}
}
