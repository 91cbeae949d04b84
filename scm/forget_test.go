package scm

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestForgetSeesAnEditThatKeptItsStat: with core.trustCtime off, an
// in-place rewrite that keeps the size and the mtime is invisible to the
// stat comparison until Forget says the file was edited.
func TestForgetSeesAnEditThatKeptItsStat(t *testing.T) {
	dir := newGitRepo(t)
	gitRun(t, dir, "config", "core.trustctime", "false")
	gitRun(t, dir, "config", "core.checkStat", "minimal")
	writeFile(t, dir, "a.txt", "hello world\n")
	ageAll(t, dir)
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "init")
	r := openRepo(t, dir)
	ctx := context.Background()
	if got, err := r.StatusPaths(ctx, []string{"a.txt"}); err != nil || len(got) != 0 {
		t.Fatalf("clean file: %v %v", got, err)
	}

	p := filepath.Join(dir, "a.txt")
	fi, err := os.Stat(p)
	must(t, err)
	must(t, os.WriteFile(p, []byte("HELLO world\n"), 0o644))
	must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	if got, err := r.StatusPaths(ctx, []string{"a.txt"}); err != nil || len(got) != 0 {
		t.Fatalf("the stat comparison saw the edit (%v %v): the test proves nothing", got, err)
	}
	r.Forget("a.txt")
	got, err := r.StatusPaths(ctx, []string{"a.txt"})
	must(t, err)
	if d := diffLines([]string{"M a.txt"}, ourView(got)); d != "" {
		t.Errorf("after Forget (-want +got):\n%s", d)
	}
}
