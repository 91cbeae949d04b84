package snapstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/scm/internal/gittest"
	"github.com/go-git/go-git/v5/plumbing"
)

// readsLikeGit reads every object of repo through s and compares it with
// git's reading.
func readsLikeGit(t *testing.T, s *Store, repo, when string) {
	t.Helper()
	objs := gittest.AllObjects(t, repo)
	if len(objs) == 0 {
		t.Fatalf("%s: no objects", when)
	}
	for _, g := range objs {
		if !s.has(g.ID) {
			t.Fatalf("%s: Has(%s) = false", when, g.ID)
		}
		typ, b, err := s.readObject(g.ID)
		if err != nil {
			t.Fatalf("%s: read %s: %v", when, g.ID, err)
		}
		if typ != g.Type || !bytes.Equal(b, g.Data) {
			t.Fatalf("%s: read %s: %s of %d bytes, git reads %s of %d bytes", when, g.ID, typ, len(b), g.Type, len(g.Data))
		}
	}
}

// commitVersions commits n versions of a few files that differ by a
// line, so that git stores most of them as deltas once packed.
func commitVersions(t *testing.T, repo string, from, n int) {
	t.Helper()
	for v := from; v < from+n; v++ {
		files := map[string]file{}
		for f := range 3 {
			files[fmt.Sprintf("d%d/file%d.txt", f%2, f)] = reg(gittest.VersionText(v))
		}
		tree := indexTree(t, repo, files)
		commit := git(t, repo, nil, "", "commit-tree", "-p", "HEAD", "-m", fmt.Sprint("version ", v), tree)
		git(t, repo, nil, "", "update-ref", "HEAD", commit)
	}
}

// packDeltas counts the delta entries in repo's packs, as `git
// verify-pack -v` lists them (OFS and REF deltas look alike there: the
// caller chooses the kind by the repack it runs).
func packDeltas(t *testing.T, repo string) int {
	t.Helper()
	idx, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "*.idx"))
	n := 0
	for _, p := range idx {
		for line := range strings.SplitSeq(git(t, repo, nil, "", "verify-pack", "-v", p), "\n") {
			// A delta's line has two more fields: its depth and its base.
			if f := strings.Fields(line); len(f) == 7 && plumbing.IsHash(f[6]) {
				n++
			}
		}
	}
	return n
}

// TestPackedAlternateAsGitReads reads every object of a project through
// the store, compared with git's own reading, while the project goes
// through the states git leaves an object directory in: loose objects
// only, loose beside several packs, `git gc` run while the store is open
// (its packs already opened), an aggressive repack into delta chains with
// offset bases, and a repack with REF_DELTA bases.
func TestPackedAlternateAsGitReads(t *testing.T) {
	needGit(t)
	repo, _ := makeRepo(t, map[string]file{"start": reg("start\n")})
	s := openStore(t)
	if err := s.AddAlternate(filepath.Join(repo, ".git", "objects")); err != nil {
		t.Fatal(err)
	}
	commitVersions(t, repo, 0, 6)
	readsLikeGit(t, s, repo, "loose")

	for i := range 3 {
		commitVersions(t, repo, 6+6*i, 6)
		git(t, repo, nil, "", "repack", "-q", "-d")
	}
	commitVersions(t, repo, 24, 3) // left loose beside the packs
	if n := len(packFiles(t, repo)); n != 3 {
		t.Fatalf("%d packs, want 3", n)
	}
	readsLikeGit(t, s, repo, "three packs and loose objects")

	root := git(t, repo, nil, "", "rev-list", "--max-parents=0", "HEAD")
	start := git(t, repo, nil, "", "rev-parse", root+":start")
	if _, err := s.ReadBlob(start); err != nil {
		t.Fatal(err)
	}
	commitVersions(t, repo, 27, 10)
	git(t, repo, nil, "", "gc", "-q")
	if n := len(packFiles(t, repo)); n != 1 {
		t.Fatalf("%d packs after gc, want 1", n)
	}
	if n := len(looseObjects(t, filepath.Join(repo, ".git"))); n != 0 {
		t.Fatalf("%d loose objects after gc", n)
	}
	// An object the old packs held too: found in the new pack, with the
	// old ones closed (their disk space freed), not read from them.
	if _, err := s.ReadBlob(start); err != nil {
		t.Fatal(err)
	}
	if held := deletedPacksHeld(t, repo); len(held) > 0 {
		t.Fatalf("the store still holds packs git gc removed: %q", held)
	}
	readsLikeGit(t, s, repo, "after git gc under the open store")

	commitVersions(t, repo, 37, 10)
	git(t, repo, nil, "", "repack", "-q", "-a", "-d", "-f", "--depth=50", "--window=50")
	if n := packDeltas(t, repo); n < 20 {
		t.Fatalf("%d deltas after the aggressive repack, want most versions as deltas", n)
	}
	readsLikeGit(t, s, repo, "after git repack -a -d -f (offset deltas)")

	commitVersions(t, repo, 47, 4)
	git(t, repo, nil, "", "-c", "pack.useDeltaBaseOffset=false", "-c", "repack.useDeltaBaseOffset=false", "repack", "-q", "-a", "-d", "-f")
	if n := packDeltas(t, repo); n < 20 {
		t.Fatalf("%d deltas after the REF_DELTA repack", n)
	}
	readsLikeGit(t, s, repo, "after git repack -a -d with REF_DELTA bases")
}

func packFiles(t *testing.T, repo string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPackedReadKeepsNoPackMap reads one object from a pack of 30,000
// and checks what that costs the heap: the object and a few buffers, not
// a table of the pack. Through go-git's storage the first read decoded
// the whole index onto the heap and built a map from every offset in the
// pack to its id (idxfile's genOffsetHash), several megabytes here and
// 157 MB at a million files, kept for the life of the process.
func TestPackedReadKeepsNoPackMap(t *testing.T) {
	needGit(t)
	repo := t.TempDir()
	git(t, repo, nil, "", "init", "-q", "-b", "main")
	const n = 30000
	var in strings.Builder
	for i := range n {
		s := fmt.Sprintf("file %d\n", i)
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(s), s)
	}
	fmt.Fprintf(&in, "commit refs/heads/main\ncommitter T <t@example.com> 0 +0000\ndata 5\nblobs\n")
	for i := range n {
		fmt.Fprintf(&in, "M 100644 :%d d%02d/f%05d\n", i+1, i%50, i)
	}
	git(t, repo, nil, in.String(), "fast-import", "--quiet")
	git(t, repo, nil, "", "repack", "-q", "-a", "-d")
	if len(packFiles(t, repo)) != 1 {
		t.Fatal("want one pack")
	}
	id := plumbing.NewHash(git(t, repo, nil, "", "rev-parse", "main:d07/f12357"))

	s := openStore(t)
	if err := s.AddAlternate(filepath.Join(repo, ".git", "objects")); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	typ, b, err := s.readObject(id)
	runtime.ReadMemStats(&after)
	if err != nil || typ != plumbing.BlobObject || string(b) != "file 12357\n" {
		t.Fatalf("read = %s %q, %v", typ, b, err)
	}
	// The zlib reader and its window are the most of it (~50 KB).
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Fatalf("reading one object from a pack of %d allocated %d bytes: a table of the pack?", n, got)
	}
}

// deletedPacksHeld lists the removed pack files of repo this process
// still has open (their disk space is not freed while it does).
func deletedPacksHeld(t *testing.T, repo string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	var held []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, repo) && strings.HasSuffix(target, ".pack (deleted)") {
			held = append(held, target)
		}
	}
	return held
}
