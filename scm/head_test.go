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
