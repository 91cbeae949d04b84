package test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// undoOffered waits until the undo operation is offered idle with a
// description mentioning want.
func (e *opEnv) undoOffered(want string) protocol.ChangesetOperation {
	e.t.Helper()
	st := e.m.Wait("undo offered ("+want+")", func(st protocol.ChangesetState) bool {
		o := opIn(st, "undo")
		return ready(st) && o != nil && o.Status == protocol.OpIdle && strings.Contains(o.Description, want)
	})
	return *opIn(st, "undo")
}

// A revert's undo is kept in the state database: it is offered again
// after the daemon restarts, cleanly or killed, and puts back the bytes;
// and more than one is kept.
func TestUndoSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"sigterm", "kill -9"} {
		t.Run(how, func(t *testing.T) {
			repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
			notes := "my notes\nnot in git\n"
			writeFile(t, repo, "notes.txt", notes)
			writeFile(t, repo, "a.txt", "a edited\n")
			state := t.TempDir()
			e := attachOps(t, startDaemonIn(t, state, repo), repo)
			e.waitHas("notes.txt")
			e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)

			e.mustInvoke("revert", resTarget(e.id("a.txt")), nil)
			res := e.mustInvoke("revert", resTarget(e.id("notes.txt")), nil)
			if !strings.Contains(string(res.Message), "deleted notes.txt") || !strings.Contains(string(res.Message), "undo id") {
				t.Errorf("revert result %s does not say it deleted notes.txt and can be undone", res.Message)
			}
			if !e.absent("notes.txt") {
				t.Fatal("notes.txt not deleted by the revert")
			}
			e.undoOffered("deleted notes.txt")

			if how == "kill -9" {
				e.d.kill(t)
			} else if err := e.d.stop(); err != nil {
				t.Fatal(err)
			}
			e = attachOps(t, startDaemonIn(t, state, repo), repo)
			o := e.undoOffered("deleted notes.txt")
			if !strings.Contains(o.Description, "2 operations can be undone") {
				t.Errorf("undo after the restart: %q, want both reverts kept", o.Description)
			}
			e.mustInvoke("undo", nil, nil)
			if got := string(e.disk("notes.txt")); got != notes {
				t.Fatalf("notes.txt after undo = %q, want %q", got, notes)
			}
			// The older revert is next.
			e.undoOffered("Reverted 1 file")
			e.mustInvoke("undo", nil, nil)
			if got := string(e.disk("a.txt")); got != "a edited\n" {
				t.Errorf("a.txt after the second undo = %q", got)
			}
			e.m.Wait("no undo left", func(st protocol.ChangesetState) bool {
				return ready(st) && opIn(st, "undo") == nil && opIn(st, "dismissUndo") == nil
			})
		})
	}
}

// Forget Undo drops a kept revert for good, across a restart too.
func TestUndoDismissed(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "notes.txt", "notes\n")
	state := t.TempDir()
	e := attachOps(t, startDaemonIn(t, state, repo), repo)
	e.waitHas("notes.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	e.mustInvoke("revert", resTarget(e.id("notes.txt")), nil)
	e.undoOffered("deleted notes.txt")
	e.mustInvoke("dismissUndo", nil, nil)
	e.m.Wait("undo forgotten", func(st protocol.ChangesetState) bool { return ready(st) && opIn(st, "undo") == nil })
	if err := e.d.stop(); err != nil {
		t.Fatal(err)
	}
	e = attachOps(t, startDaemonIn(t, state, repo), repo)
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	if o := opIn(e.m.State(), "undo"); o != nil {
		t.Errorf("a dismissed undo is offered after a restart: %+v", o)
	}
}

// A directory revert checks every target before touching any: with a
// nested repository among them, nothing is deleted.
func TestRevertDirectoryCheckedFirst(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "tools/a-notes.txt", "notes\n")
	lib := filepath.Join(repo, "tools", "lib")
	writeFile(t, repo, "tools/lib/lib.txt", "lib\n")
	git(t, lib, "init", "-q")
	e := startOps(t, repo)
	e.m.Wait("tools' files", func(st protocol.ChangesetState) bool {
		return ready(st) && findFile(st, repo, "tools/a-notes.txt") != nil
	})
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	_, err := e.invoke("revert", resTarget(e.id("tools")), nil)
	if err == nil {
		t.Fatal("revert of a directory with a nested repository succeeded")
	}
	if rpcCode(err) == protocol.CodeInternalError {
		t.Errorf("revert refused as internal: %v", err)
	}
	if got := string(e.disk("tools/a-notes.txt")); got != "notes\n" {
		t.Errorf("tools/a-notes.txt = %q after a refused revert", got)
	}
	if e.absent("tools/lib/lib.txt") {
		t.Error("the nested repository's file was deleted")
	}
	if o := opIn(e.m.State(), "undo"); o != nil {
		t.Errorf("undo offered after a revert that did nothing: %+v", o)
	}
}

// In a repository without a commit, a revert of the working directory's
// root deletes every file: its confirmation counts and names them, and
// the undo puts them all back.
func TestRevertRootOfUnbornRepository(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if r, err := filepath.EvalSymlinks(repo); err == nil {
		repo = r
	}
	git(t, repo, "init", "-q")
	writeFile(t, repo, "one.txt", "one\n")
	writeFile(t, repo, "src/two.go", "package two\n")
	writeFile(t, repo, "src/three.go", "package three\n")
	e := startOps(t, repo)
	e.m.Wait("three new files", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 3 })
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	st := e.m.Wait("the confirmation naming them", func(st protocol.ChangesetState) bool {
		o := opIn(st, "revert")
		return o != nil && strings.Contains(string(o.Confirmation), "3 files")
	})
	conf := string(opIn(st, "revert").Confirmation)
	for _, name := range []string{"one.txt", "src/two.go", "src/three.go", "deleted"} {
		if !strings.Contains(conf, name) {
			t.Errorf("revert confirmation %s does not mention %s", conf, name)
		}
	}
	if strings.Contains(conf, "The file returns") {
		t.Errorf("revert confirmation speaks of one file: %s", conf)
	}
	res := e.mustInvoke("revert", resTarget(e.id("")), nil)
	if !strings.Contains(string(res.Message), "3 files") {
		t.Errorf("revert result %s does not count the deleted files", res.Message)
	}
	for _, rel := range []string{"one.txt", "src/two.go", "src/three.go"} {
		if !e.absent(rel) {
			t.Errorf("%s not deleted", rel)
		}
	}
	e.undoOffered("deleted")
	e.mustInvoke("undo", nil, nil)
	if got := string(e.disk("src/two.go")); got != "package two\n" {
		t.Errorf("src/two.go after undo = %q", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "one.txt")); err != nil {
		t.Error(err)
	}
}

// A whole-file revert honours _meta.expectedNonce as range reverts do.
func TestRevertExpectedNonce(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "A\n")
	e := startOps(t, repo)
	st := e.waitHas("a.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	_, err := e.invoke("revert", resTarget(e.id("a.txt")), map[string]any{"expectedNonce": "0000000000000000000000000000000000000000"})
	if rpcCode(err) != protocol.CodeConflict {
		t.Errorf("revert with a wrong expectedNonce: %v, want -32011", err)
	}
	if got := string(e.disk("a.txt")); got != "A\n" {
		t.Fatalf("a.txt = %q: the refused revert wrote", got)
	}
	nonce := findFile(st, repo, "a.txt").Edit.After.Content.Nonce
	e.mustInvoke("revert", resTarget(e.id("a.txt")), map[string]any{"expectedNonce": nonce})
	if got := string(e.disk("a.txt")); got != "a\n" {
		t.Errorf("a.txt = %q after a revert with the right nonce", got)
	}
}

// The commit's generated message and its confirmation name exactly what
// is committed: the staged file, not the untracked one.
func TestCommitMessageNamesWhatIsCommitted(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"base.txt": "base\n"})
	git(t, repo, "config", "user.name", "Reviewer")
	git(t, repo, "config", "user.email", "reviewer@example.com")
	writeFile(t, repo, "a.txt", "a\nsecond\n")
	writeFile(t, repo, "b.txt", "b\n")
	git(t, repo, "add", "a.txt")
	e := startOps(t, repo)
	st := e.m.Wait("a.txt and b.txt, a.txt staged", func(st protocol.ChangesetState) bool {
		o := opIn(st, "commit")
		return ready(st) && len(st.Files) == 2 && o != nil && strings.Contains(string(o.Confirmation), "staged")
	})
	conf := string(opIn(st, "commit").Confirmation)
	if !strings.Contains(conf, "1 file staged: a.txt") || !strings.Contains(conf, "Not committed (not staged): b.txt") {
		t.Errorf("commit confirmation %s does not name a.txt as committed and b.txt as left out", conf)
	}
	e.mustInvoke("commit", nil, nil)
	msg := e.git("log", "-1", "--format=%B")
	if !strings.HasPrefix(msg, "Update 1 file(s) (+2 -0)") || !strings.Contains(msg, "- add a.txt (+2 -0)") || strings.Contains(msg, "b.txt") {
		t.Errorf("generated message:\n%s\nwant one file, a.txt, and no b.txt", msg)
	}
	if got := e.git("show", "--name-only", "--format=", "HEAD"); got != "a.txt\n" {
		t.Errorf("commit holds %q", got)
	}
}

// A range revert of a file over the diff limit is refused first, naming
// the limit.
func TestRangeRevertTooLarge(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef\n", (9<<20)/17)
	repo := gitRepo(t, map[string]string{"big.txt": big})
	writeFile(t, repo, "big.txt", "changed\n"+big)
	e := startOps(t, repo)
	e.waitHas("big.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	_, err := e.invoke("revert", lineTarget(e.id("big.txt"), 0, 0), nil)
	if rpcCode(err) != protocol.CodeInvalidParams || !strings.Contains(err.Error(), "8 MiB") || protocol.ReasonOf(err) != protocol.ReasonTooLarge {
		t.Errorf("range revert of a 9 MiB file: %v (reason %q), want -32602 naming the 8 MiB limit", err, protocol.ReasonOf(err))
	}
}

// A commit during a merge is refused as a conflict with its reason, not
// as an internal error.
func TestCommitDuringMerge(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"m.txt": "base\n"})
	git(t, repo, "config", "user.name", "Reviewer")
	git(t, repo, "config", "user.email", "reviewer@example.com")
	git(t, repo, "checkout", "-q", "-b", "other")
	writeFile(t, repo, "m.txt", "other\n")
	git(t, repo, "commit", "-qam", "other")
	git(t, repo, "checkout", "-q", "-")
	writeFile(t, repo, "m.txt", "main\n")
	git(t, repo, "commit", "-qam", "main")
	cmd := gitCmd(repo, "merge", "other")
	_ = cmd.Run() // conflicts
	writeFile(t, repo, "m.txt", "resolved\n")
	git(t, repo, "add", "m.txt")
	e := startOps(t, repo)
	e.waitOffered("commit", protocol.ScopeChangeset)
	_, err := e.invoke("commit", nil, map[string]any{"message": "merge"})
	if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonMergeInProgress {
		t.Errorf("commit during a merge: %v (reason %q), want -32011 mergeInProgress", err, protocol.ReasonOf(err))
	}
}

// gitCmd is git run in dir with the tests' settings, for a command whose
// failure is expected (a merge that conflicts).
func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	return cmd
}

// startGated is startDaemonIn with the daemon's revert gate set: a revert
// stops at point, creating the file it returns, until the daemon stops.
func startGated(t *testing.T, state, repo, point string) (*daemon, string) {
	t.Helper()
	at := filepath.Join(t.TempDir(), "at-gate")
	d, _ := launchCmd(t, state, func(c *exec.Cmd) {
		c.Env = append(os.Environ(), "CHANGESETD_TEST_REVERT_GATE="+point+":"+at)
	}, "serve", "--listen", "127.0.0.1:0", "--state-dir", state, "--log-level", "debug", repo)
	return d, at
}

// A revert's undo is durable before its first write: the daemon killed
// with SIGKILL once the undo is stored and before any write, or after the
// first of several writes, starts again offering the undo, which puts back
// exactly the bytes the revert was to replace.
func TestUndoDurableBeforeRevertWrites(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"kept", "wrote"} {
		t.Run(point, func(t *testing.T) {
			repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
			want := map[string]string{
				"notes/one.txt": "first notes\nnot in git\n",
				"notes/two.txt": "second notes\r\nno newline at the end",
			}
			for rel, c := range want {
				writeFile(t, repo, rel, c)
			}
			state := t.TempDir()
			d, at := startGated(t, state, repo, point)
			e := attachOps(t, d, repo)
			e.m.Wait("both notes", func(st protocol.ChangesetState) bool {
				return ready(st) && findFile(st, repo, "notes/one.txt") != nil && findFile(st, repo, "notes/two.txt") != nil
			})
			e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
			failed := make(chan error, 1)
			go func() {
				_, err := e.invoke("revert", resTarget(e.id("notes")), nil)
				failed <- err
			}()
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(at); err == nil {
					break
				}
				select {
				case err := <-failed:
					t.Fatalf("the revert finished (%v) without reaching the gate %q", err, point)
				case <-time.After(10 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatalf("the revert did not reach the gate %q in 30s", point)
				}
			}
			gone := 0
			for rel := range want {
				if e.absent(rel) {
					gone++
				}
			}
			if wantGone := map[string]int{"kept": 0, "wrote": 1}[point]; gone != wantGone {
				t.Fatalf("at the gate %q %d notes are deleted, want %d", point, gone, wantGone)
			}
			e.d.kill(t)
			<-failed

			e = attachOps(t, startDaemonIn(t, state, repo), repo)
			e.undoOffered("deleted notes/one.txt and notes/two.txt")
			e.mustInvoke("undo", nil, nil)
			for rel, c := range want {
				if got := string(e.disk(rel)); got != c {
					t.Errorf("%s after the undo = %q, want %q", rel, got, c)
				}
			}
			e.m.Wait("no undo left", func(st protocol.ChangesetState) bool {
				return ready(st) && opIn(st, "undo") == nil && opIn(st, "dismissUndo") == nil
			})
		})
	}
}

// The daemon killed at random moments of a revert of many files loses
// nothing: after it starts again, either every file is as before, or the
// undo is offered and puts every one back exactly.
func TestUndoKilledDuringRevert(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	want := map[string]string{}
	for i := range 60 {
		rel := fmt.Sprintf("notes/n%02d.txt", i)
		want[rel] = strings.Repeat(fmt.Sprintf("note %d\n", i), 200)
		writeFile(t, repo, rel, want[rel])
	}
	state := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	undone := 0
	for round := range 8 {
		e := attachOps(t, startDaemonIn(t, state, repo), repo)
		e.m.Wait("every note", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == len(want) })
		e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.invoke("revert", resTarget(e.id("notes")), nil)
		}()
		time.Sleep(time.Duration(rng.IntN(25)) * time.Millisecond) // a moment during the revert; not an assertion
		e.d.kill(t)
		<-done

		e = attachOps(t, startDaemonIn(t, state, repo), repo)
		st := e.m.Wait("ready", ready)
		same := 0
		for rel, c := range want {
			if b, err := os.ReadFile(filepath.Join(repo, rel)); err == nil && string(b) == c {
				same++
			}
		}
		if same < len(want) {
			e.undoOffered("deleted")
			e.mustInvoke("undo", nil, nil)
			undone++
		} else if opIn(st, "dismissUndo") != nil {
			e.mustInvoke("dismissUndo", nil, nil)
		}
		for rel, c := range want {
			if got := string(e.disk(rel)); got != c {
				t.Fatalf("round %d: %s = %q after the restart and undo", round, rel, got)
			}
		}
		t.Logf("round %d: %d of %d notes were deleted when the daemon was killed", round, len(want)-same, len(want))
		if err := e.d.stop(); err != nil {
			t.Fatal(err)
		}
	}
	if undone == 0 {
		t.Log("no round killed the daemon after the revert had written")
	}
}
