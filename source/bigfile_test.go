package source

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// TestSparseUntrackedNotHashed: a 40 GiB sparse untracked file is listed
// (and snapshotted, keeping nothing of it) without its content being
// read, as git status lists it; a file small enough to hash for its
// listing still is.
func TestSparseUntrackedNotHashed(t *testing.T) {
	dir := newRepo(t)
	w := openGit(t, dir)
	big := filepath.Join(dir, "big.bin")
	f, err := os.Create(big)
	must(t, err)
	must(t, f.Truncate(40<<30))
	must(t, f.Close())
	var st syscall.Stat_t
	must(t, syscall.Stat(big, &st))
	if st.Blocks*512 >= 40<<30 {
		t.Skip("the file system does not make sparse files")
	}
	writeFile(t, dir, "mid.bin", string(make([]byte, maxLoadedFile+1)))

	var mu sync.Mutex
	hashed := map[string]int{}
	w.hashWorktree = func(ctx context.Context, p string) (string, error) {
		mu.Lock()
		hashed[p]++
		mu.Unlock()
		return w.repo.HashWorktree(ctx, p)
	}
	list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(t, err)
	var found bool
	for _, fc := range list.Files {
		if fc.New == nil || fc.New.Path != "big.bin" {
			continue
		}
		found = true
		if fc.New.Size != 40<<30 || fc.New.OID != "" {
			t.Errorf("big.bin listed with size %d, id %q; want 40 GiB and no id", fc.New.Size, fc.New.OID)
		}
	}
	if !found {
		t.Fatalf("big.bin not listed: %v", listPaths(list))
	}
	if _, err := w.Snapshot(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if hashed["big.bin"] != 0 {
		t.Errorf("big.bin hashed %d times to be listed", hashed["big.bin"])
	}
	if hashed["mid.bin"] != 1 {
		t.Errorf("mid.bin hashed %d times, want 1", hashed["mid.bin"])
	}
}
