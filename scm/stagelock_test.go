package scm

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStageAllStoresOutsideLock: staging everything (as a commit of all
// changes does) reads and stores large files before taking index.lock,
// as staging one path does, so another git is not locked out while they
// are hashed. Small files are still read under the lock.
func TestStageAllStoresOutsideLock(t *testing.T) {
	for _, scope := range []string{"", "d"} {
		dir := newGitRepo(t)
		big := strings.Repeat("0123456789abcdef", streamBlobMin/16+1)
		writeFile(t, dir, "d/tracked.bin", big)
		writeFile(t, dir, "small.txt", "small\n")
		gitRun(t, dir, "add", "-A")
		gitRun(t, dir, "commit", "-q", "-m", "files")
		writeFile(t, dir, "d/tracked.bin", big+"more")
		writeFile(t, dir, "d/new.bin", "x"+big)
		writeFile(t, dir, "d/small.txt", "changed\n")

		r := openRepo(t, dir)
		lock := filepath.Join(dir, ".git", "index.lock")
		locked := map[string]bool{}
		r.storing = func(rel string) {
			_, err := os.Lstat(lock)
			locked[rel] = locked[rel] || !errors.Is(err, fs.ErrNotExist)
		}
		var err error
		if scope == "" {
			err = r.StageAll(context.Background())
		} else {
			err = r.StagePath(context.Background(), scope)
		}
		must(t, err)
		for _, p := range []string{"d/tracked.bin", "d/new.bin"} {
			if l, ok := locked[p]; !ok || l {
				t.Errorf("scope %q: %s stored (%v) with index.lock held (%v)", scope, p, ok, l)
			}
			want := strings.TrimSpace(gitRun(t, dir, "hash-object", p))
			if got := gitRun(t, dir, "ls-files", "-s", p); !strings.Contains(got, want) {
				t.Errorf("scope %q: %s staged as %q, want blob %s", scope, p, got, want)
			}
		}
		if !locked["d/small.txt"] {
			t.Errorf("scope %q: small file not read under the lock: %v", scope, locked)
		}
		checkAgainstGit(t, dir, status(t, r), "")
		r.Close()
	}
}
