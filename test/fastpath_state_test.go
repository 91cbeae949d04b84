package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSavedStateAcrossRestart stops the daemon and, with HEAD and the
// index unchanged (so the working-tree state and the diffs it saved are
// trusted), edits the tree in the ways a saved stat entry must not be
// fooled by: a changed file rewritten in place with the same size and its
// mtime put back, a same-size replacement that keeps the mtime, and a new
// file under a directory whose mtime is put back. The restarted daemon's
// changeset must be git's.
func TestSavedStateAcrossRestart(t *testing.T) {
	t.Parallel()
	repo := fastPathRepo(t)
	d := startDaemon(t, repo)
	m := subscribeUncommitted(t, d)
	m.Wait("ready with git's view before the restart", matchesGit(repo, gitUncommitted(t, repo)))
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	states, _ := filepath.Glob(filepath.Join(d.StateDir, "snapshots.git", "worktree-state", "*.state"))
	if len(states) != 1 {
		t.Fatalf("working-tree states saved: %v, want one", states)
	}

	p := filepath.Join(repo, "m.txt")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("MIKE, EDITED\n"), 0); err != nil { // same size, same inode
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	sameSizeReplacement(t, repo)
	newFileUnderListedDir(t, repo)

	want := gitUncommitted(t, repo)
	for _, p := range []string{"b.txt", "dir/sub/e.txt", "m.txt"} {
		if _, ok := want[p]; !ok {
			t.Fatalf("git does not list %s as changed: %v; the scenario proves nothing", p, sortedKeys(want))
		}
	}
	restarted := startDaemonIn(t, d.StateDir, repo)
	m = subscribeUncommitted(t, restarted)
	m.Wait("ready with git's view after the edits made while stopped: "+strings.Join(sortedKeys(want), " "), matchesGit(repo, want))
}
