package fswatch

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestDeferTree: with DeferTree, no directory of the tree is watched
// until the caller arms it; Arm watches one directory, ArmTree a subtree,
// and an ignored directory or one outside Root stays unwatched.
func TestDeferTree(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
	for _, p := range []string{"a/old", "a/b/old", "n/m/old", "ign/old"} {
		write(t, filepath.Join(root, filepath.FromSlash(p)), "x")
	}
	w, r := start(t, Options{
		Root:         root,
		DeferTree:    true,
		SyncDir:      filepath.Join(root, ".git"),
		Ignore:       func(rel string, isDir bool) bool { return rel == "ign" },
		Quiet:        never,
		MaxLatency:   never,
		PollInterval: never,
	})
	if w.Mode() != ModeFsnotify {
		t.Fatalf("Mode() = %q (%s), want fsnotify", w.Mode(), w.ModeReason())
	}
	paths := func(mark int) []string {
		seen, over := r.delivered(mark)
		if over {
			t.Errorf("an overflow was reported")
		}
		var out []string
		for p := range seen {
			out = append(out, p)
		}
		slices.Sort(out)
		return out
	}

	m := r.mark()
	write(t, filepath.Join(root, "before"), "x")
	write(t, filepath.Join(root, "a", "before"), "x")
	w.mustSync(t)
	if got := paths(m); len(got) != 0 {
		t.Errorf("before any Arm, reported %q", got)
	}

	w.Arm(root)
	w.Arm(filepath.Join(root, "a"))
	w.ArmTree(filepath.Join(root, "n"))
	w.Arm(filepath.Join(root, "ign"))
	w.Arm(t.TempDir()) // outside Root
	m = r.mark()
	for _, p := range []string{"top", "a/after", "a/b/after", "n/m/after", "ign/after"} {
		write(t, filepath.Join(root, filepath.FromSlash(p)), "y")
	}
	w.mustSync(t)
	// a/b was not armed (a caller arms each directory it reads); a/b
	// itself is not new, so nothing reports it.
	want := []string{"a/after", "n/m/after", "top"}
	if got := paths(m); !slices.Equal(got, want) {
		t.Errorf("after Arm, reported %q, want %q", got, want)
	}
}
