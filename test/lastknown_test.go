package test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

// states replays what a mirror received: its snapshot, then the state
// after each envelope.
func states(m *changesetMirror) []protocol.ChangesetState {
	st := m.clone(m.base)
	out := []protocol.ChangesetState{st}
	for _, e := range m.c.Envelopes(m.uri) {
		if e.RejectionReason != "" || e.ServerSeq <= m.fromSeq {
			continue
		}
		st, _ = reducer.ApplyChangeset(st, e.Action.Action, reducer.Env{})
		out = append(out, st.Clone())
	}
	return out
}

// firstShown is the first state of a subscription that shows anything:
// not computing (which has no files yet).
func firstShown(t *testing.T, m *changesetMirror) protocol.ChangesetState {
	t.Helper()
	for _, st := range states(m) {
		if st.Status != protocol.StatusComputing {
			return st
		}
	}
	t.Fatal("the changeset showed nothing")
	return protocol.ChangesetState{}
}

// pathsOf lists a state's files by their path in repo.
func pathsOf(st protocol.ChangesetState, repo string) []string {
	var out []string
	for _, f := range st.Files {
		out = append(out, strings.TrimPrefix(f.ID, "file://"+repo+"/"))
	}
	slices.Sort(out)
	return out
}

// lastKnownRepo is fastPathRepo with a file of each kind of change: m.txt
// modified, n.txt untracked, dir/c.txt deleted.
func lastKnownRepo(t *testing.T) string {
	repo := fastPathRepo(t)
	writeFile(t, repo, "n.txt", "new\n")
	if err := os.Remove(filepath.Join(repo, "dir", "c.txt")); err != nil {
		t.Fatal(err)
	}
	return repo
}

// TestRestartShowsLastKnownView restarts the daemon on the state it
// saved: the uncommitted changeset's first view is the one from before
// the restart, marked recomputing, before any scan of the tree; then the
// verified view, ready and git's, with the edit made while the daemon
// was stopped.
func TestRestartShowsLastKnownView(t *testing.T) {
	t.Parallel()
	repo := lastKnownRepo(t)
	d := startDaemon(t, repo)
	before := gitUncommitted(t, repo)
	m := subscribeUncommitted(t, d)
	m.Wait("ready with git's view before the restart", matchesGit(repo, before))
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	writeFile(t, repo, "b.txt", "bravo, edited while stopped\n") // HEAD and the index unchanged
	want := gitUncommitted(t, repo)
	if _, ok := want["b.txt"]; !ok {
		t.Fatalf("git does not list b.txt: %v", sortedKeys(want))
	}

	restarted := startDaemonIn(t, d.StateDir, repo)
	m = subscribeUncommitted(t, restarted)
	m.Wait("ready with git's view after the restart: "+strings.Join(sortedKeys(want), " "), matchesGit(repo, want))
	first := firstShown(t, m)
	if first.Status != protocol.StatusRecomputing {
		t.Errorf("first view after the restart is %q, want recomputing", first.Status)
	}
	if got, w := pathsOf(first, repo), sortedKeys(before); !slices.Equal(got, w) {
		t.Errorf("first view after the restart lists %v, want the last-known %v", got, w)
	}
	if f := findFile(first, repo, "m.txt"); f == nil || f.Edit.Diff == nil || f.Edit.Diff.Added == nil || *f.Edit.Diff.Added != 1 {
		t.Errorf("the last-known m.txt has no counts: %+v", f)
	}
}

// TestRestartAfterCommitShowsNoLastKnownView commits while the daemon is
// stopped: the saved view is of another HEAD and index, so the restart
// shows nothing before the verified view.
func TestRestartAfterCommitShowsNoLastKnownView(t *testing.T) {
	t.Parallel()
	repo := lastKnownRepo(t)
	d := startDaemon(t, repo)
	m := subscribeUncommitted(t, d)
	m.Wait("ready before the restart", matchesGit(repo, gitUncommitted(t, repo)))
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	git(t, repo, "add", "m.txt")
	git(t, repo, "commit", "-q", "-m", "m")
	want := gitUncommitted(t, repo)

	restarted := startDaemonIn(t, d.StateDir, repo)
	m = subscribeUncommitted(t, restarted)
	m.Wait("ready with git's view after the commit", matchesGit(repo, want))
	if first := firstShown(t, m); first.Status != protocol.StatusReady {
		t.Errorf("first view after a commit made while stopped is %q with %v, want ready (the saved view is not trusted)", first.Status, pathsOf(first, repo))
	}
}

// TestRestartIgnoresCorruptState damages the saved state: it is not
// used, one log line says so, and the view is git's.
func TestRestartIgnoresCorruptState(t *testing.T) {
	t.Parallel()
	repo := lastKnownRepo(t)
	d := startDaemon(t, repo)
	m := subscribeUncommitted(t, d)
	m.Wait("ready before the restart", matchesGit(repo, gitUncommitted(t, repo)))
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	state := onlyState(t, d.StateDir)
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}

	restarted := startDaemonIn(t, d.StateDir, repo)
	m = subscribeUncommitted(t, restarted)
	m.Wait("ready with git's view", matchesGit(repo, gitUncommitted(t, repo)))
	if first := firstShown(t, m); first.Status != protocol.StatusReady {
		t.Errorf("first view from a corrupt state is %q with %v, want ready", first.Status, pathsOf(first, repo))
	}
	const line = "the saved working-tree state is not used"
	if !restarted.waitLog(line) {
		t.Fatalf("no log line %q", line)
	}
	if n := strings.Count(restarted.stderr.String(), line); n != 1 {
		t.Errorf("%d log lines %q, want one", n, line)
	}
}

// TestKillDuringStateWriteLeavesUsableState kills the daemon with SIGKILL
// and leaves what a kill in the middle of a state write leaves (a
// truncated temporary file beside the state): the next start uses the
// state, shows the last-known view and ends with git's.
func TestKillDuringStateWriteLeavesUsableState(t *testing.T) {
	t.Parallel()
	repo := lastKnownRepo(t)
	d := startDaemon(t, repo)
	before := gitUncommitted(t, repo)
	m := subscribeUncommitted(t, d)
	m.Wait("ready", matchesGit(repo, before))
	if err := d.stop(); err != nil { // saves the view
		t.Fatalf("stop: %v", err)
	}
	d = startDaemonIn(t, d.StateDir, repo)
	m = subscribeUncommitted(t, d)
	m.Wait("ready after a restart", matchesGit(repo, before))
	d.kill(t)

	state := onlyState(t, d.StateDir)
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state+".tmp-123", b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}

	restarted := startDaemonIn(t, d.StateDir, repo)
	m = subscribeUncommitted(t, restarted)
	m.Wait("ready with git's view after SIGKILL", matchesGit(repo, before))
	first := firstShown(t, m)
	if got, w := pathsOf(first, repo), sortedKeys(before); first.Status != protocol.StatusRecomputing || !slices.Equal(got, w) {
		t.Errorf("first view after SIGKILL is %q with %v, want recomputing with %v", first.Status, got, w)
	}
	if strings.Contains(restarted.stderr.String(), "is not used") {
		t.Errorf("the state left by SIGKILL was not used:\n%s", restarted.stderr)
	}
	if _, err := os.Stat(state + ".tmp-123"); err == nil {
		t.Errorf("the temporary file of the killed write is still there")
	}
}

// onlyState is the one working-tree state file under a state dir.
func onlyState(t *testing.T, stateDir string) string {
	t.Helper()
	states, _ := filepath.Glob(filepath.Join(stateDir, "snapshots.git", "worktree-state", "*.state"))
	if len(states) != 1 {
		t.Fatalf("working-tree states saved: %v, want one", states)
	}
	return states[0]
}

// TestLegacyClientOnRestartSeesLastKnownComputing: a 0.7 client, which
// knows no recomputing, is shown the last-known view of a restart as
// computing, then ready.
func TestLegacyClientOnRestartSeesLastKnownComputing(t *testing.T) {
	t.Parallel()
	repo := lastKnownRepo(t)
	d := startDaemon(t, repo)
	before := gitUncommitted(t, repo)
	m := subscribeUncommitted(t, d)
	m.Wait("ready before the restart", matchesGit(repo, before))
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	writeFile(t, repo, "b.txt", "bravo, edited while stopped\n")
	want := gitUncommitted(t, repo)

	restarted := startDaemonIn(t, d.StateDir, repo)
	old := restarted.dial(t)
	if res, err := old.Initialize(ctx(t), "old-ide", nil, "0.7.0"); err != nil || res.ProtocolVersion != "0.7.0" {
		t.Fatalf("initialize 0.7.0: %v %+v", err, res)
	}
	sum := onlySession(t, old)
	m = mirrorChangeset(t, old, expand(t, catalogue(t, old, sum.Resource)["uncommitted"].URITemplate, nil))
	m.Wait("ready with git's view after the restart", matchesGit(repo, want))
	listed := false
	for _, st := range states(m) {
		if st.Status == protocol.StatusRecomputing {
			t.Fatalf("the 0.7 client was shown recomputing")
		}
		if !listed && len(st.Files) > 0 {
			listed = true
			if got, w := pathsOf(st, repo), sortedKeys(before); st.Status != protocol.StatusComputing || !slices.Equal(got, w) {
				t.Errorf("the 0.7 client's first listing is %q with %v, want computing with the last-known %v", st.Status, got, w)
			}
		}
	}
}
