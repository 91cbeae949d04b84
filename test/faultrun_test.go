package test

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

var (
	faultrunLong    = flag.Bool("faultrun.long", false, "run the kill -9 fault run for many more rounds (FAULTRUN_SEED sets the seed)")
	faultrunLenient = flag.Bool("faultrun.lenient", false, "log, instead of failing on, a revert killed unacknowledged that leaves no undo")
)

// faultRepoClean checks what a killed daemon may leave in the repository:
// no index.lock, no half-written object, and git fsck finds nothing.
// With staleLockOK an index.lock or a temporary object is logged and
// removed instead: git's lockfile protocol cannot release a lock whose
// holder was killed with SIGKILL (git itself leaves one behind then, and
// its temporary objects), and this daemon does not yet recognise what its
// previous run left; it returns whether there was any.
func faultRepoClean(t *testing.T, repo, when string, staleLockOK bool) (staleLock bool) {
	t.Helper()
	lock := filepath.Join(repo, ".git", "index.lock")
	if _, err := os.Lstat(lock); !errors.Is(err, fs.ErrNotExist) {
		if !staleLockOK {
			t.Errorf("%s: index.lock left behind (%v)", when, err)
		} else {
			t.Logf("%s: index.lock left behind by the killed daemon; removed by hand", when)
			if err := os.Remove(lock); err != nil {
				t.Fatal(err)
			}
			staleLock = true
		}
	}
	_ = filepath.WalkDir(filepath.Join(repo, ".git", "objects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "tmp_obj_") {
			if !staleLockOK {
				t.Errorf("%s: %s left behind", when, p)
			} else {
				// Likewise a killed git: git gc prunes these later.
				t.Logf("%s: %s left behind by the killed daemon; removed by hand", when, p)
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				staleLock = true
			}
		}
		return nil
	})
	if out, err := gitOutErr(repo, "fsck", "--no-progress", "--no-dangling"); err != nil {
		t.Errorf("%s: git fsck: %v\n%s", when, err, out)
	}
	return staleLock
}

// TestFaultRunKillNine starts operations (the revert of an untracked
// file, a range revert, a stage, a commit) on the real daemon and kills it
// with SIGKILL at a random moment, round after round. After each kill the
// repository must be whole and every file either as it was or as the
// operation leaves it; after the restart a revert that took effect is
// undone and gives back the bytes. The seed is logged; FAULTRUN_SEED
// replays a run and -faultrun.long makes it long.
func TestFaultRunKillNine(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FAULTRUN_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("FAULTRUN_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (FAULTRUN_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	rounds := 8
	if *faultrunLong {
		rounds = 200
	}
	orig := numbered(30)
	repo := gitRepo(t, map[string]string{"m.txt": joinLines(orig), "keep.txt": "keep\n"})
	git(t, repo, "config", "user.name", "Reviewer")
	git(t, repo, "config", "user.email", "reviewer@example.com")
	state := t.TempDir()
	start := time.Now()
	staleLocks, losses := 0, 0
	defer func() {
		if losses > 0 {
			t.Logf("%d unacknowledged reverts left no undo", losses)
		}
		if staleLocks > 0 {
			t.Logf("%d kills left index.lock or a temporary object behind", staleLocks)
		}
	}()
	for round := range rounds {
		if !*faultrunLong && time.Since(start) > 40*time.Second {
			t.Logf("stopping after %d rounds to stay short", round)
			break
		}
		// Changes for every kind of operation.
		untracked := fmt.Sprintf("u%d.txt", round)
		uBytes := fmt.Sprintf("notes of round %d\nnot in git\n", round)
		writeFile(t, repo, untracked, uBytes)
		mod := joinLines(orig)
		mod = strings.Replace(mod, "line 05\n", "line 05 edited\n", 1)
		mod = strings.Replace(mod, "line 25\n", "line 25 edited\n", 1)
		writeFile(t, repo, "m.txt", mod)
		rangeAfter := strings.Replace(mod, "line 05 edited\n", "line 05\n", 1)
		staged := fmt.Sprintf("s%d.txt", round)
		writeFile(t, repo, staged, fmt.Sprintf("stage me %d\n", round))
		headBefore := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))

		e := attachOps(t, startDaemonIn(t, state, repo), repo)
		e.waitHas(untracked)
		e.waitHas(staged)
		e.m.Wait("m.txt with both edits", func(st protocol.ChangesetState) bool {
			return ready(st) && diffCounts(findFile(st, repo, "m.txt")) == "+2 -2"
		})
		e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)

		op := []string{"revert", "range", "stage", "commit"}[rng.IntN(4)]
		var call func() error
		switch op {
		case "revert":
			call = func() error { _, err := e.invoke("revert", resTarget(e.id(untracked)), nil); return err }
		case "range":
			call = func() error { _, err := e.invoke("revert", lineTarget(e.id("m.txt"), 4, 4), nil); return err }
		case "stage":
			call = func() error { _, err := e.invoke("stage", resTarget(e.id(staged)), nil); return err }
		case "commit":
			e.mustInvoke("stage", resTarget(e.id(staged)), nil)
			call = func() error {
				_, err := e.invoke("commit", nil, map[string]any{"message": "round " + strconv.Itoa(round)})
				return err
			}
		}
		delay := time.Duration(rng.IntN(40_000)) * time.Microsecond
		done := make(chan error, 1)
		go func() { done <- call() }()
		time.Sleep(delay) // where the kill lands: the seed decides
		e.d.kill(t)
		callErr := <-done
		t.Logf("round %d: %s killed after %v (call: %v)", round, op, delay, callErr)
		when := fmt.Sprintf("round %d (%s killed after %v)", round, op, delay)
		if faultRepoClean(t, repo, when, true) {
			staleLocks++
		}

		// Each file is as it was or as the operation leaves it.
		reverted := false
		if b, err := os.ReadFile(filepath.Join(repo, untracked)); err == nil {
			if string(b) != uBytes {
				t.Errorf("%s: %s torn: %q", when, untracked, b)
			}
		} else if errors.Is(err, fs.ErrNotExist) && op == "revert" {
			reverted = true
		} else {
			t.Errorf("%s: %s: %v", when, untracked, err)
		}
		switch got := string(e.disk("m.txt")); got {
		case mod:
		case rangeAfter:
			if op != "range" {
				t.Errorf("%s: m.txt range-reverted by a %s", when, op)
			}
			reverted = true
		default:
			t.Errorf("%s: m.txt torn: %q", when, got)
		}
		if got := string(e.disk(staged)); got != fmt.Sprintf("stage me %d\n", round) {
			t.Errorf("%s: %s changed: %q", when, staged, got)
		}
		headAfter := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
		if headAfter != headBefore {
			if op != "commit" {
				t.Errorf("%s: HEAD moved", when)
			} else if files := git(t, repo, "show", "--name-only", "--format=", "HEAD"); strings.TrimSpace(files) != staged {
				t.Errorf("%s: the commit holds %q, want only %s", when, files, staged)
			}
		}
		if op == "stage" || op == "commit" {
			if ls := git(t, repo, "ls-files", "-s", "--", staged); ls != "" {
				if want := strings.TrimSpace(git(t, repo, "hash-object", "--", staged)); !strings.Contains(ls, want) {
					t.Errorf("%s: %s staged as %q, want blob %s", when, staged, ls, want)
				}
			}
		}

		// Restart on the same state: a revert that took effect is undone.
		e = attachOps(t, startDaemonIn(t, state, repo), repo)
		faultRepoClean(t, repo, when+", restarted", false)
		if reverted {
			what := "deleted " + untracked
			if op == "range" {
				what = "Reverted 1 file"
			}
			if !e.undoKept(what) {
				// The revert was killed after writing the file and before
				// its undo was kept: what it replaced cannot be put back.
				msg := fmt.Sprintf("%s: LOSS: the revert took effect (call: %v) but no undo is offered after the restart; FAULTRUN_SEED=%d", when, callErr, seed)
				if !*faultrunLenient || callErr == nil {
					t.Fatal(msg)
				}
				t.Log(msg)
				losses++
				if err := e.d.stop(); err != nil {
					t.Fatal(err)
				}
				git(t, repo, "reset", "-q", "--hard")
				git(t, repo, "clean", "-qfd")
				continue
			}
			e.mustInvoke("undo", nil, nil)
			if op == "revert" {
				if got, err := os.ReadFile(filepath.Join(repo, untracked)); err != nil || string(got) != uBytes {
					t.Errorf("%s: %s after undo = %q, %v; want %q", when, untracked, got, err, uBytes)
				}
			} else if got := string(e.disk("m.txt")); got != mod {
				t.Errorf("%s: m.txt after undo = %q, want %q", when, got, mod)
			}
		}
		if err := e.d.stop(); err != nil {
			t.Fatal(err)
		}
		// Next round starts from a clean slate.
		if out, err := gitOutErr(repo, "reset", "-q", "--hard"); err != nil {
			t.Logf("%s: git reset --hard: %v %s; once more", when, err, out)
			time.Sleep(time.Second)
			git(t, repo, "reset", "-q", "--hard")
		}
		git(t, repo, "clean", "-qfd")
		if t.Failed() {
			t.Fatalf("stopping at %s; FAULTRUN_SEED=%d replays it", when, seed)
		}
	}
}

// TestRevertRightAfterCheckout: a checkout lands just before a revert of
// the changeset published before it. The revert either is refused with
// -32011 and touches nothing, or (when the daemon had already seen the
// checkout) acts on the new HEAD; nothing else is written.
func TestRevertRightAfterCheckout(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"m.txt": "m\n", "keep.txt": "keep\n"})
	git(t, repo, "checkout", "-q", "-b", "other")
	writeFile(t, repo, "y.txt", "only on other\n")
	git(t, repo, "add", "y.txt")
	git(t, repo, "commit", "-q", "-m", "other")
	git(t, repo, "checkout", "-q", "main")
	writeFile(t, repo, "m.txt", "m edited\n")
	e := startOps(t, repo)
	e.waitHas("m.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	git(t, repo, "checkout", "-q", "other") // m.txt's edit is carried over
	_, err := e.invoke("revert", resTarget(e.id("m.txt")), nil)
	switch {
	case err == nil:
		t.Logf("the daemon had seen the checkout: the revert acted on the new HEAD")
		if got := string(e.disk("m.txt")); got != "m\n" {
			t.Errorf("m.txt after the revert = %q", got)
		}
	case rpcCode(err) == protocol.CodeConflict:
		if got := string(e.disk("m.txt")); got != "m edited\n" {
			t.Errorf("a refused revert changed m.txt: %q", got)
		}
	default:
		t.Errorf("revert right after a checkout: %v, want -32011 or success", err)
	}
	if got := string(e.disk("y.txt")); got != "only on other\n" {
		t.Errorf("y.txt = %q", got)
	}
	faultRepoClean(t, repo, "after the revert", false)
}

// undoKept reports whether the undo is offered with a description
// mentioning want within a few seconds of the changeset being ready.
func (e *opEnv) undoKept(want string) bool {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		st := e.m.State()
		if o := opIn(st, "undo"); ready(st) && o != nil && o.Status == protocol.OpIdle && strings.Contains(o.Description, want) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
