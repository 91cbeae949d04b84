package source

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// TestBaselineWaitsForTheFirstView: a snapshot that is not a turn's (a
// new session's baseline) started while the workspace's first full view
// is computed waits for the view, and then stores the tree as it is;
// later views do not hold it.
func TestBaselineWaitsForTheFirstView(t *testing.T) {
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "alpha\nedited\n")
	writeFile(t, dir, "dir/c.txt", "charlie\nedited\n")
	w := openGit(t, dir)

	var mu sync.Mutex
	viewDone := false
	inView := make(chan struct{})
	release := make(chan struct{})
	var held atomic.Bool
	w.readWorktree = func(p string) ([]byte, uint32, error) {
		mu.Lock()
		done := viewDone
		mu.Unlock()
		if !done && !held.Swap(true) {
			close(inView) // the view's first read: held until released
			<-release
		}
		b, mode, _, err := w.repo.ReadWorktreeCanonical(p)
		return b, mode, err
	}
	// The snapshot, started during the view, either waits (as it
	// should) or reads a file: whichever comes first decides.
	decided := make(chan string, 2)
	w.firstView.mu.Lock()
	w.firstView.waiting = func() { decided <- "waited" }
	w.firstView.mu.Unlock()

	type view struct {
		list *session.ChangeList
		err  error
	}
	viewed := make(chan view, 1)
	go func() {
		list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
		mu.Lock()
		viewDone = true
		mu.Unlock()
		if err == nil && len(list.Files) != 2 {
			t.Errorf("view: %d files, want 2", len(list.Files))
		}
		viewed <- view{list, err}
	}()
	<-inView
	type snap struct {
		tree string
		err  error
	}
	snapped := make(chan snap, 1)
	go func() {
		tree, err := w.Snapshot(context.Background(), false)
		snapped <- snap{tree, err}
	}()
	var outcome string
	select {
	case outcome = <-decided:
	case s := <-snapped:
		outcome = "returned: " + s.tree
		snapped <- s
	}
	if outcome != "waited" {
		t.Errorf("snapshot during the first view: %s, want it to wait for the view", outcome)
	}
	close(release)
	v := <-viewed
	must(t, v.err)
	// Computed is not shown: the snapshot waits until the session says
	// the view was published (and its readers have had a moment).
	select {
	case s := <-snapped:
		t.Fatalf("the snapshot went on before the first view was shown: %+v", s)
	default:
	}
	if v.list.Shown == nil {
		t.Fatal("the first view's list has no Shown")
	}
	v.list.Shown()
	s := <-snapped
	must(t, s.err)
	// The snapshot holds the working tree: git's tree of it is the same.
	index := filepath.Join(t.TempDir(), "index")
	gitIndex := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitIndex("read-tree", "HEAD")
	gitIndex("add", "-u")
	if want := gitIndex("write-tree"); s.tree != want {
		t.Errorf("snapshot %s, want git's tree of the working tree %s", s.tree, want)
	}

	// The gate is the first view's only: a later full view does not
	// hold it.
	if end := w.firstView.begin(); end != nil {
		t.Errorf("a later full view holds the first view's gate")
	}
}
