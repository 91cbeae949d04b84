package test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// startHeld is startDaemonIn with an operation gate that holds at point:
// arriving there the daemon creates the first file returned, and it goes
// on once the test creates the second.
func startHeld(t *testing.T, state, repo, point string) (d *daemon, at, release string) {
	t.Helper()
	dir := t.TempDir()
	at, release = filepath.Join(dir, "at-gate"), filepath.Join(dir, "release")
	d, _ = launchCmd(t, state, func(c *exec.Cmd) {
		c.Env = append(os.Environ(), "CHANGESETD_TEST_REVERT_GATE="+point+":"+at+":"+release)
	}, "serve", "--listen", "127.0.0.1:0", "--state-dir", state, "--log-level", "debug", repo)
	return d, at, release
}

// waitFile waits for path to exist while the call whose outcome comes on
// done has not ended.
func waitFile(t *testing.T, path string, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the operation ended (%v) before reaching its gate", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the operation did not reach its gate in 30s")
		}
	}
}

// errFiles is data.files of a protocol error.
func errFiles(err error) []string {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return nil
	}
	data, _ := pe.Data.(map[string]any)
	return anyStrings(data["files"])
}

// A commit with nothing staged records exactly the files the changeset
// showed, at the content shown. A file written after the changeset was
// shown (a new secret.env, a.txt rewritten) makes it refuse, naming both,
// with HEAD and the index untouched; and the commit of what was shown
// records exactly those bytes.
func TestCommitTakesWhatWasShown(t *testing.T) {
	t.Parallel()
	t.Run("changed after it was shown", func(t *testing.T) {
		repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
		writeFile(t, repo, "a.txt", "a reviewed\n")
		d, at, release := startHeld(t, t.TempDir(), repo, "commit")
		e := attachOps(t, d, repo)
		e.m.Wait("a.txt shown alone", func(st protocol.ChangesetState) bool {
			f := findFile(st, repo, "a.txt")
			return ready(st) && len(st.Files) == 1 && f != nil && f.Edit.After != nil
		})
		e.waitOffered("commit", protocol.ScopeChangeset)
		head := e.git("rev-parse", "HEAD")
		done := make(chan error, 1)
		go func() {
			_, err := e.invoke("commit", nil, map[string]any{"message": "reviewed"})
			done <- err
		}()
		waitFile(t, at, done)
		// The user confirmed; before the commit stages, a tool writes.
		writeFile(t, repo, "secret.env", "TOKEN=hunter2\n")
		writeFile(t, repo, "a.txt", "a rewritten, never reviewed\n")
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		err := <-done
		if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonFileChanged {
			t.Fatalf("commit after files changed: %v (reason %q), want -32011 fileChanged", err, protocol.ReasonOf(err))
		}
		if files := errFiles(err); !slices.Equal(files, []string{"a.txt", "secret.env"}) {
			t.Errorf("refusal names %v, want [a.txt secret.env]", files)
		}
		for _, name := range []string{"a.txt", "secret.env"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("refusal %q does not name %s", err, name)
			}
		}
		if got := e.git("rev-parse", "HEAD"); got != head {
			t.Errorf("HEAD moved from %s to %s", head, got)
		}
		if got := e.git("show", "--name-only", "--format=", "HEAD"); got != "a.txt\n" {
			t.Errorf("HEAD records %q, want only the initial a.txt", got)
		}
		if got := e.git("diff", "--cached", "--name-only"); got != "" {
			t.Errorf("the refused commit staged %q", got)
		}
	})
	t.Run("exactly the bytes shown", func(t *testing.T) {
		repo := gitRepo(t, map[string]string{"a.txt": "a\n", "gone.txt": "gone\n"})
		writeFile(t, repo, "a.txt", "a reviewed\r\nsecond line\n")
		writeFile(t, repo, "new.txt", "new\n")
		if err := os.Remove(filepath.Join(repo, "gone.txt")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, repo, ".gitignore", "*.log\n")
		git(t, repo, "add", ".gitignore")
		git(t, repo, "commit", "-qm", "ignore logs")
		writeFile(t, repo, "build.log", "ignored\n")
		e := startOps(t, repo)
		st := e.m.Wait("three files shown", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 3 })
		shown := findFile(st, repo, "a.txt").Edit.After.Content.Nonce
		e.waitOffered("commit", protocol.ScopeChangeset)
		e.mustInvoke("commit", nil, map[string]any{"message": "reviewed"})
		if got := e.git("show", "HEAD:a.txt"); got != "a reviewed\r\nsecond line\n" {
			t.Errorf("HEAD:a.txt = %q", got)
		}
		if got := strings.TrimSpace(e.git("rev-parse", "HEAD:a.txt")); got != shown {
			t.Errorf("HEAD:a.txt is blob %s, the changeset showed %s", got, shown)
		}
		if got := e.git("show", "--name-status", "--format=", "HEAD"); got != "M\ta.txt\nD\tgone.txt\nA\tnew.txt\n" {
			t.Errorf("the commit records %q", got)
		}
		if got := e.git("status", "--porcelain", "--ignored"); got != "!! build.log\n" {
			t.Errorf("status after the commit: %q", got)
		}
	})
}

// lsFiles is git ls-files -s of path.
func (e *opEnv) lsFiles(path string) string { e.t.Helper(); return e.git("ls-files", "-s", "--", path) }

// Undo Revert puts back the index entries the revert replaced, not only
// the working tree: a file staged as S and edited to W is reverted to
// HEAD in both, and the undo brings back S in the index and W in the
// working tree, also after a restart and after the daemon was killed
// between the revert's writes and their settling.
func TestUndoRestoresTheIndex(t *testing.T) {
	t.Parallel()
	const S, W = "staged version\n", "working version\n"
	setup := func(t *testing.T) (repo, staged string) {
		repo = gitRepo(t, map[string]string{"f.txt": "committed\n", "other.txt": "other\n"})
		writeFile(t, repo, "f.txt", S)
		git(t, repo, "add", "f.txt")
		writeFile(t, repo, "f.txt", W)
		writeFile(t, repo, "added.txt", "added\n")
		git(t, repo, "add", "added.txt")
		return repo, string(gitOut(t, repo, "ls-files", "-s"))
	}
	check := func(t *testing.T, e *opEnv, staged string) {
		t.Helper()
		if got := e.git("show", ":f.txt"); got != S {
			t.Errorf(":f.txt after undo = %q, want the staged %q", got, S)
		}
		if got := string(e.disk("f.txt")); got != W {
			t.Errorf("f.txt after undo = %q, want %q", got, W)
		}
		if got := e.git("ls-files", "-s"); got != staged {
			t.Errorf("ls-files -s after undo:\n%s\nwant\n%s", got, staged)
		}
		if got := string(e.disk("added.txt")); got != "added\n" {
			t.Errorf("added.txt after undo = %q", got)
		}
	}
	revertBoth := func(t *testing.T, e *opEnv) {
		t.Helper()
		e.m.Wait("f.txt and added.txt", func(st protocol.ChangesetState) bool {
			return ready(st) && findFile(st, e.repo, "f.txt") != nil && findFile(st, e.repo, "added.txt") != nil
		})
		e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	}
	for _, how := range []string{"live", "sigterm", "kill -9"} {
		t.Run(how, func(t *testing.T) {
			repo, staged := setup(t)
			state := t.TempDir()
			e := attachOps(t, startDaemonIn(t, state, repo), repo)
			revertBoth(t, e)
			e.mustInvoke("revert", resTarget(e.id("f.txt")), nil)
			e.mustInvoke("revert", resTarget(e.id("added.txt")), nil)
			if got := e.git("show", ":f.txt"); got != "committed\n" {
				t.Fatalf(":f.txt after the revert = %q, want HEAD's", got)
			}
			if got := e.lsFiles("added.txt"); got != "" {
				t.Fatalf("added.txt still in the index after the revert: %q", got)
			}
			e.undoOffered("deleted added.txt")
			switch how {
			case "sigterm":
				if err := e.d.stop(); err != nil {
					t.Fatal(err)
				}
				e = attachOps(t, startDaemonIn(t, state, repo), repo)
			case "kill -9":
				e.d.kill(t)
				e = attachOps(t, startDaemonIn(t, state, repo), repo)
			}
			e.undoOffered("deleted added.txt")
			e.mustInvoke("undo", nil, nil)
			e.undoOffered("Reverted 1 file")
			e.mustInvoke("undo", nil, nil)
			check(t, e, staged)
		})
	}
	// Killed once the index is written, before the revert's undo record
	// is settled: the pending record puts the index back.
	for _, point := range []string{"wrote", "indexed"} {
		t.Run("killed at "+point, func(t *testing.T) {
			repo, staged := setup(t)
			state := t.TempDir()
			d, at := startGated(t, state, repo, point)
			e := attachOps(t, d, repo)
			revertBoth(t, e)
			done := make(chan error, 1)
			go func() {
				_, err := e.invoke("revert", resTarget(e.id("f.txt")), nil)
				done <- err
			}()
			waitFile(t, at, done)
			if point == "indexed" {
				if got := e.git("show", ":f.txt"); got != "committed\n" {
					t.Fatalf(":f.txt at the gate = %q, want HEAD's", got)
				}
			}
			e.d.kill(t)
			<-done
			e = attachOps(t, startDaemonIn(t, state, repo), repo)
			e.undoOffered("Reverted 1 file")
			e.mustInvoke("undo", nil, nil)
			check(t, e, staged)
		})
	}
}

// A revert writes what git checkout writes: the smudge side of the text,
// eol and ident attributes applied to the committed blob, for a whole
// file and for a range, checked against the git binary.
func TestRevertWritesWhatGitCheckoutWrites(t *testing.T) {
	t.Parallel()
	lines := func(two, eighteen string) string {
		var b strings.Builder
		for i := 1; i <= 20; i++ {
			l := strconv.Itoa(i)
			switch i {
			case 2:
				l = two
			case 18:
				l = eighteen
			}
			b.WriteString(l + "\r\n")
		}
		return b.String()
	}
	repo := gitRepo(t, map[string]string{
		".gitattributes": "*.txt text eol=crlf\n*.c ident\n",
		"a.txt":          "one\r\ntwo\r\n",
		"b.txt":          lines("2", "18"),
		"id.c":           "/* $Id$ */\nint x;\n",
	})
	checkedOut := map[string]string{}
	for _, rel := range []string{"a.txt", "id.c"} {
		if err := os.Remove(filepath.Join(repo, rel)); err != nil {
			t.Fatal(err)
		}
		git(t, repo, "checkout", "--", rel)
		checkedOut[rel] = string(readFileT(t, repo, rel))
	}
	if checkedOut["a.txt"] != "one\r\ntwo\r\n" || !strings.HasPrefix(checkedOut["id.c"], "/* $Id: ") {
		t.Fatalf("git checkout wrote %q", checkedOut)
	}
	writeFile(t, repo, "a.txt", "one\r\nTWO\r\n")
	writeFile(t, repo, "b.txt", lines("TWO", "EIGHTEEN"))
	writeFile(t, repo, "id.c", "/* $Id$ */\nint y;\n")
	e := startOps(t, repo)
	e.m.Wait("three files", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 3 })
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	for _, rel := range []string{"a.txt", "id.c"} {
		e.mustInvoke("revert", resTarget(e.id(rel)), nil)
		if got := string(e.disk(rel)); got != checkedOut[rel] {
			t.Errorf("%s after the revert = %q, git checkout writes %q", rel, got, checkedOut[rel])
		}
	}
	if got := e.git("status", "--porcelain", "--", "a.txt", "id.c"); got != "" {
		t.Errorf("git status after the reverts: %q", got)
	}
	e.m.Wait("b.txt's hunks", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "b.txt")
		return ready(st) && len(st.Files) == 1 && f != nil && diffCounts(f) == "+2 -2"
	})
	e.mustInvoke("revert", lineTarget(e.id("b.txt"), 17, 17), nil)
	if got, want := string(e.disk("b.txt")), lines("TWO", "18"); got != want {
		t.Errorf("b.txt after reverting line 18 = %q, want %q", got, want)
	}
}

// Expected refusals carry their own reason, never -32603: a commit the
// configuration wants signed, and a file the daemon may not read (named,
// with the cause).
func TestExpectedRefusalsHaveTheirReason(t *testing.T) {
	t.Parallel()
	t.Run("signing required", func(t *testing.T) {
		repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
		git(t, repo, "config", "commit.gpgsign", "true")
		git(t, repo, "config", "gpg.program", "/nonexistent/gpg")
		writeFile(t, repo, "a.txt", "a changed\n")
		e := startOps(t, repo)
		e.waitHas("a.txt")
		e.waitOffered("commit", protocol.ScopeChangeset)
		head := e.git("rev-parse", "HEAD")
		_, err := e.invoke("commit", nil, map[string]any{"message": "signed?"})
		if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonSigningRequired {
			t.Errorf("commit with commit.gpgsign: %v (code %d, reason %q), want -32011 %s", err, rpcCode(err), protocol.ReasonOf(err), protocol.ReasonSigningRequired)
		}
		if got := e.git("rev-parse", "HEAD"); got != head {
			t.Errorf("HEAD moved to %s", got)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		// As root the daemon runs as nobody: root reads a file of mode 000.
		repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
		git(t, repo, "config", "user.name", "Test")
		git(t, repo, "config", "user.email", "test@example.com")
		writeFile(t, repo, "a.txt", "a changed\n")
		writeFile(t, repo, "b.txt", "b changed\n")
		e := attachOps(t, startUnprivileged(t, repo), repo)
		e.m.Wait("two files", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 2 })
		e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
		e.waitOffered("commit", protocol.ScopeChangeset)
		head := e.git("rev-parse", "HEAD")
		if err := os.Chmod(filepath.Join(repo, "a.txt"), 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Join(repo, "a.txt"), 0o644) })
		unreadable := func(what string, err error) {
			t.Helper()
			if rpcCode(err) != protocol.CodePermissionDenied || protocol.ReasonOf(err) != protocol.ReasonUnreadable || !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "permission denied") {
				t.Errorf("%s touching an unreadable file: %v (code %d, reason %q), want -32009 %s naming it and the cause", what, err, rpcCode(err), protocol.ReasonOf(err), protocol.ReasonUnreadable)
			}
		}
		_, err := e.invoke("revert", resTarget(e.id("a.txt")), nil)
		unreadable("revert", err)
		_, err = e.invoke("commit", nil, map[string]any{"message": "everything"})
		unreadable("commit", err)
		if got := e.git("rev-parse", "HEAD"); got != head {
			t.Errorf("HEAD moved to %s", got)
		}
		if got := e.git("ls-files", "-s", "a.txt", "b.txt"); strings.Contains(got, hashObject(t, "b changed\n")) {
			t.Errorf("the refused commit staged b.txt:\n%s", got)
		}
	})
}
