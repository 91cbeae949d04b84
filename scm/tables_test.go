package scm

import (
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
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
