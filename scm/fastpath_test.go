package scm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// treeCounts returns how many tree objects the last HEAD flattening read
// and how many directories it took from the index's cache-tree.
func treeCounts(r *Repo) (reads, shortcuts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.treeReads, r.treeShortcuts
}

// TestCacheTreeShortcut checks that HEAD is compared through the index's
// cache-tree only where git vouches for it, against git's own view, as
// the index and HEAD move apart in the ways that invalidate it.
func TestCacheTreeShortcut(t *testing.T) {
	dir := baseRepo(t) // "git commit" leaves a fully valid cache-tree
	writeFile(t, dir, "dir/sub/d.txt", "DELTA, longer\n")
	writeFile(t, dir, "dir/new.txt", "new\n")

	r := openRepo(t, dir)
	checkAgainstGit(t, dir, status(t, r), "")
	if reads, short := treeCounts(r); reads != 0 || short != 1 {
		t.Errorf("clean cache-tree: %d tree reads, %d shortcuts; want 0 and 1 (the root)", reads, short)
	}

	// Staging invalidates dir/sub, dir and the root: those three trees
	// are read, every other directory comes from the cache-tree.
	gitRun(t, dir, "add", "dir/sub/d.txt")
	r = openRepo(t, dir)
	checkAgainstGit(t, dir, status(t, r), "")
	if reads, short := treeCounts(r); reads != 3 || short != 1 {
		t.Errorf("after git add: %d tree reads, %d shortcuts; want 3 (root, dir, dir/sub) and 1 (keep)", reads, short)
	}

	// HEAD moves without the index (reset --soft): the cache-tree still
	// describes the index, whose trees now differ from HEAD's.
	gitRun(t, dir, "commit", "-q", "-m", "second")
	gitRun(t, dir, "reset", "-q", "--soft", "HEAD~1")
	r = openRepo(t, dir)
	st := status(t, r)
	checkAgainstGit(t, dir, st, "")
	if v := ourView(st.Changes); len(v) != 2 {
		t.Errorf("after reset --soft: %v, want the staged d.txt and untracked new.txt", v)
	}

	// An intent-to-add entry invalidates up to the root.
	gitRun(t, dir, "add", "-N", "dir/new.txt")
	checkAgainstGit(t, dir, status(t, openRepo(t, dir)), "")

	// A checkout between scans, on the same Repo and on a fresh one.
	gitRun(t, dir, "reset", "-q", "--hard")
	must(t, os.RemoveAll(filepath.Join(dir, "dir/new.txt"))) // reset --hard may have removed it
	gitRun(t, dir, "checkout", "-q", "-b", "other")
	writeFile(t, dir, "dir/c.txt", "other charlie\n")
	must(t, os.Remove(filepath.Join(dir, "b.txt")))
	gitRun(t, dir, "commit", "-q", "-a", "-m", "other")
	r = openRepo(t, dir)
	checkAgainstGit(t, dir, status(t, r), "")
	gitRun(t, dir, "checkout", "-q", "main")
	checkAgainstGit(t, dir, status(t, r), "")
	if reads, _ := treeCounts(r); reads != 0 {
		t.Errorf("after checkout: %d tree reads, want 0 (checkout writes the cache-tree)", reads)
	}
	writeFile(t, dir, "dir/c.txt", "edited\n")
	checkAgainstGit(t, dir, status(t, r), "")
	checkAgainstGit(t, dir, status(t, openRepo(t, dir)), "")
}

// TestCacheTreeParse checks the decoder against the entries git writes,
// including invalid ones (no id) with valid subtrees.
func TestCacheTreeParse(t *testing.T) {
	dir := baseRepo(t)
	writeFile(t, dir, "dir/sub/d.txt", "changed\n")
	gitRun(t, dir, "add", "dir/sub/d.txt")
	idx := openRepo(t, dir)
	idx.mu.Lock()
	snap, err := idx.indexLocked()
	idx.mu.Unlock()
	must(t, err)
	for _, d := range []string{"", "dir", "dir/sub"} {
		if _, ok := snap.tree[d]; ok {
			t.Errorf("cache-tree %q valid after git add below it", d)
		}
	}
	ct, ok := snap.tree["keep"]
	if !ok {
		t.Fatalf("cache-tree keep missing: %v", snap.tree)
	}
	if want := gitRun(t, dir, "rev-parse", "HEAD:keep"); ct.oid.String() != want[:40] || ct.count != 1 {
		t.Errorf("keep: %s %d, want %s 1", ct.oid, ct.count, want[:40])
	}
	if parseCacheTree([]byte("\x003 0\n")) != nil {
		t.Errorf("truncated extension accepted")
	}
}

// TestRacyEntry: a file rewritten with the same size and mtime within
// the second of the index write (racily clean in git's terms) must still
// be compared by content, by a fresh Repo and by one that scanned before.
func TestRacyEntry(t *testing.T) {
	dir := baseRepo(t)
	warm := openRepo(t, dir)
	if st := status(t, warm); len(st.Changes) != 0 {
		t.Fatalf("not clean: %v", ourView(st.Changes))
	}
	p := filepath.Join(dir, "dir/c.txt")
	writeFile(t, dir, "dir/c.txt", "charlie\n")
	gitRun(t, dir, "update-index", "dir/c.txt") // entry and index written now
	fi, err := os.Stat(p)
	must(t, err)
	mt := fi.ModTime()
	writeFile(t, dir, "dir/c.txt", "CHARLIE\n") // same size
	must(t, os.Chtimes(p, mt, mt))              // and the same mtime
	for name, r := range map[string]*Repo{"cold": openRepo(t, dir), "warm": warm} {
		st := status(t, r)
		if v := ourView(st.Changes); len(v) != 1 || v[0] != "M dir/c.txt" {
			t.Errorf("%s: racy same-size edit: %v, want M dir/c.txt", name, v)
		}
	}
}

// TestNewFileInScannedDirectory checks that a file created in a directory
// an earlier scan listed (and found clean) is found by the next scan.
func TestNewFileInScannedDirectory(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	if st := status(t, r); len(st.Changes) != 0 {
		t.Fatalf("not clean: %v", ourView(st.Changes))
	}
	writeFile(t, dir, "dir/sub/e.txt", "echo\n")
	st := status(t, r)
	checkAgainstGit(t, dir, st, "")
	if v := ourView(st.Changes); len(v) != 1 {
		t.Errorf("new file: %v", v)
	}
}

// indexSize returns the size git recorded in the index entry for rel
// ("git ls-files --debug"): 0 when git smudged a racily clean entry.
func indexSize(t *testing.T, dir, rel string) string {
	t.Helper()
	out := gitRun(t, dir, "ls-files", "--debug", "--", rel)
	_, rest, ok := strings.Cut(out, "size: ")
	if !ok {
		t.Fatalf("ls-files --debug %s: %q", rel, out)
	}
	return strings.Fields(rest)[0]
}

// TestRacyEntryOnlyTheRuleCatches isolates git's racy-clean rule: with
// core.trustctime off and the file rewritten in place (same inode), the
// only thing that tells the edit apart from a clean file is that the
// entry's mtime is not older than the index file. The entry is recorded
// with an mtime ahead of the index write, and git leaves it unsmudged
// because "git update-index" has just checked it.
func TestRacyEntryOnlyTheRuleCatches(t *testing.T) {
	dir := baseRepo(t)
	gitRun(t, dir, "config", "core.trustctime", "false")
	p := filepath.Join(dir, "dir/c.txt")
	ahead := time.Now().Add(time.Hour).Truncate(time.Second)
	must(t, os.Chtimes(p, ahead, ahead))
	gitRun(t, dir, "update-index", "dir/c.txt") // index written now, entry an hour ahead
	if size := indexSize(t, dir, "dir/c.txt"); size == "0" {
		t.Fatalf("git smudged the entry: the size check, not the racy rule, would catch the edit")
	}
	warm := openRepo(t, dir)
	checkAgainstGit(t, dir, status(t, warm), "")

	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("CHARLIE\n"), 0) // same size, same inode
	must(t, err)
	must(t, f.Close())
	must(t, os.Chtimes(p, ahead, ahead))
	for name, r := range map[string]*Repo{"cold": openRepo(t, dir), "warm": warm} {
		st := status(t, r)
		if v := ourView(st.Changes); len(v) != 1 || v[0] != "M dir/c.txt" {
			t.Errorf("%s: racily clean entry rewritten: %v, want M dir/c.txt", name, v)
		}
		checkAgainstGit(t, dir, st, "")
	}
}

// TestReplacedSameSizeKeptMtime: a file replaced (written beside it, then
// renamed over it) by one of the same size with the old mtime put back is
// caught the way git catches it: the ctime and the inode differ from the
// index entry's. With core.trustctime off the inode alone must do it.
func TestReplacedSameSizeKeptMtime(t *testing.T) {
	for _, trustCtime := range []string{"true", "false"} {
		t.Run("trustctime="+trustCtime, func(t *testing.T) {
			dir := baseRepo(t) // entries an hour old: not racy
			gitRun(t, dir, "config", "core.trustctime", trustCtime)
			warm := openRepo(t, dir)
			if st := status(t, warm); len(st.Changes) != 0 {
				t.Fatalf("not clean: %v", ourView(st.Changes))
			}
			p := filepath.Join(dir, "b.txt")
			fi, err := os.Stat(p)
			must(t, err)
			tmp := filepath.Join(dir, "b.txt.tmp")
			must(t, os.WriteFile(tmp, []byte("BRAVO\n"), 0o644)) // same size
			must(t, os.Chtimes(tmp, fi.ModTime(), fi.ModTime()))
			must(t, os.Rename(tmp, p))
			for name, r := range map[string]*Repo{"cold": openRepo(t, dir), "warm": warm} {
				st := status(t, r)
				if v := ourView(st.Changes); len(v) != 1 || v[0] != "M b.txt" {
					t.Errorf("%s: same-size replacement with the mtime kept: %v, want M b.txt", name, v)
				}
				checkAgainstGit(t, dir, st, "")
			}
		})
	}
}

// TestNewFileInDirectoryWithRestoredMtime: a file created in a directory
// a scan already listed, with the directory's mtime put back afterwards,
// is still found. A listing cache keyed by the directory's stat data
// would miss it; git without an untracked cache lists every directory.
func TestNewFileInDirectoryWithRestoredMtime(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	if st := status(t, r); len(st.Changes) != 0 {
		t.Fatalf("not clean: %v", ourView(st.Changes))
	}
	sub := filepath.Join(dir, "dir/sub")
	fi, err := os.Stat(sub)
	must(t, err)
	writeFile(t, dir, "dir/sub/e.txt", "echo\n")
	must(t, os.Chtimes(sub, fi.ModTime(), fi.ModTime()))
	for name, r := range map[string]*Repo{"cold": openRepo(t, dir), "warm": r} {
		st := status(t, r)
		if v := ourView(st.Changes); len(v) != 1 || v[0] != "? dir/sub/e.txt" {
			t.Errorf("%s: new file under a directory with its mtime restored: %v", name, v)
		}
		checkAgainstGit(t, dir, st, "")
	}
}
