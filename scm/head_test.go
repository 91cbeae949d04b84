package scm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGarbageHead: a HEAD file git would not accept makes git refuse the
// directory as a repository; Open refuses it too, naming the file, and a
// Repo whose HEAD is damaged after Open fails its reads instead of taking
// every committed file for new.
func TestGarbageHead(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, dir, "a.txt", "a\n")
	gitRun(t, dir, "add", "a.txt")
	gitRun(t, dir, "commit", "-q", "-m", "a")
	head := filepath.Join(dir, ".git", "HEAD")
	good, err := os.ReadFile(head)
	must(t, err)
	commit := strings.TrimSpace(gitRun(t, dir, "rev-parse", "main"))
	r := openRepo(t, dir)
	defer r.Close()

	for _, bad := range []string{"garbage\n", "", "ref: heads/main\n", "0123456789abcdef\n"} {
		must(t, os.WriteFile(head, []byte(bad), 0o644))
		if out, err := runGit(dir, "rev-parse", "HEAD"); err == nil {
			t.Fatalf("git accepts HEAD %q: %s", bad, out)
		}
		_, err := Open(dir)
		if !errors.Is(err, ErrBadHead) || !strings.Contains(err.Error(), head) {
			t.Errorf("Open with HEAD %q: %v; want ErrBadHead naming %s", bad, err, head)
		}
		if st, err := r.Status(context.Background()); !errors.Is(err, ErrBadHead) {
			n := 0
			if st != nil {
				n = len(st.Changes)
			}
			t.Errorf("Status with HEAD %q: %v, %d changes; want ErrBadHead", bad, err, n)
		}
	}

	for _, ok := range []string{string(good), "ref:refs/heads/main", commit + "\n"} {
		must(t, os.WriteFile(head, []byte(ok), 0o644))
		r2, err := Open(dir)
		if err != nil {
			t.Errorf("Open with HEAD %q: %v", ok, err)
			continue
		}
		if st := status(t, r2); len(st.Changes) != 0 {
			t.Errorf("HEAD %q: changes %v", ok, ourView(st.Changes))
		}
		r2.Close()
	}
}

// TestHeadFollowsRefChanges: HEAD's remembered resolution is dropped by
// each way git moves it: a commit, a checkout of another branch, the
// refs packed, the branch moved by update-ref, and a detached HEAD.
func TestHeadFollowsRefChanges(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, dir, "a.txt", "a\n")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "one")
	r := openRepo(t, dir)
	check := func(step string) {
		t.Helper()
		c, _, err := r.HeadTree()
		must(t, err)
		if want := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD")); c != want {
			t.Errorf("%s: HEAD %s, git %s", step, c, want)
		}
	}
	check("first")
	writeFile(t, dir, "a.txt", "b\n")
	gitRun(t, dir, "commit", "-q", "-am", "two")
	check("commit")
	gitRun(t, dir, "checkout", "-q", "-b", "other", "HEAD~1")
	check("checkout")
	gitRun(t, dir, "pack-refs", "--all")
	check("pack-refs")
	gitRun(t, dir, "update-ref", "refs/heads/other", "main")
	check("update-ref")
	gitRun(t, dir, "checkout", "-q", "--detach", "HEAD~1")
	check("detached")
	gitRun(t, dir, "checkout", "-q", "main")
	check("back on main")
}
