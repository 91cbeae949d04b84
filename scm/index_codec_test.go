package scm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// debugView renders x as git ls-files --debug does: name, times, stat and
// git's in-memory flags (on-disk flags without the name length, extended
// flags in the upper half).
func debugView(x *indexFile) string {
	var b strings.Builder
	secs := func(e *index.Entry, m bool) string {
		t := e.CreatedAt
		if m {
			t = e.ModifiedAt
		}
		if t.IsZero() {
			return "0:0"
		}
		return fmt.Sprintf("%d:%d", t.Unix(), t.Nanosecond())
	}
	for _, e := range x.entries {
		flags := uint32(e.Stage) << 12
		var ext uint32
		if e.SkipWorktree {
			ext |= extSkipWorktree
		}
		if e.IntentToAdd {
			ext |= extIntentToAdd
		}
		if ext != 0 {
			flags |= flagExtended | ext<<16
		}
		if x.assumeValid[e] {
			flags |= flagAssumeValid
		}
		fmt.Fprintf(&b, "%s\n  ctime: %s\n  mtime: %s\n  dev: %d\tino: %d\n  uid: %d\tgid: %d\n  size: %d\tflags: %x\n",
			e.Name, secs(e, false), secs(e, true), e.Dev, e.Inode, e.UID, e.GID, e.Size, flags)
	}
	return b.String()
}

// checkDebugAgainstGit compares our decoding of dir's index, stat data
// and flags included, with git ls-files --debug, and modes and ids with
// git ls-files --stage.
func checkDebugAgainstGit(t *testing.T, dir string) *indexFile {
	t.Helper()
	gd := strings.TrimSpace(gitRun(t, dir, "rev-parse", "--absolute-git-dir"))
	x, err := readIndexFile(filepath.Join(gd, "index"), gd)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(gitRun(t, dir, "ls-files", "--debug"), "\n")
	for i, l := range want {
		// git prints its in-memory flags; keep the bits the file holds
		// (stage, extended, assume-valid, skip-worktree, intent-to-add).
		if pre, hex, ok := strings.Cut(l, "flags: "); ok {
			f, err := strconv.ParseUint(hex, 16, 32)
			if err != nil {
				t.Fatalf("ls-files --debug: %q", l)
			}
			want[i] = fmt.Sprintf("%sflags: %x", pre, f&0x6000f000)
		}
	}
	got := strings.Split(debugView(x), "\n")
	if d := diffLines(want, got); d != "" {
		t.Errorf("ls-files --debug (-git +ours):\n%s", d)
	}
	checkIndexAgainstGit(t, dir)
	return x
}

// assumeUnchangedRepo is a committed repository of 300 files with the
// assume-unchanged bit on every other one, and on files whose names look
// like the numbers and signs a position would be written with.
func assumeUnchangedRepo(t *testing.T) string {
	dir := newGitRepo(t)
	writeFile(t, dir, "a", "first\n") // shifts every n%03d one position on
	var marked []string
	for i := range 300 {
		name := fmt.Sprintf("n%03d", i)
		writeFile(t, dir, name, name+"\n")
		if i%2 == 0 {
			marked = append(marked, name)
		}
	}
	for _, name := range []string{"z999", "v-1", "x+1", "w0x10"} {
		writeFile(t, dir, name, name+"\n")
		marked = append(marked, name)
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "files")
	gitRun(t, dir, append([]string{"update-index", "--assume-unchanged"}, marked...)...)
	return dir
}

// lsV is git ls-files -v as lines.
func lsV(t *testing.T, dir string) []string {
	return strings.Split(strings.TrimSpace(gitRun(t, dir, "ls-files", "-v")), "\n")
}

// TestAssumeUnchangedMany decodes an index where many entries carry the
// assume-valid bit, some named like numbers, and checks that staging
// through us keeps every bit git set, split index or not.
func TestAssumeUnchangedMany(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			dir := assumeUnchangedRepo(t)
			if split {
				gitRun(t, dir, "update-index", "--split-index")
				// A change after the split lands in the split index.
				gitRun(t, dir, "update-index", "--no-assume-unchanged", "n010")
				gitRun(t, dir, "update-index", "--assume-unchanged", "n011")
			}
			x := checkDebugAgainstGit(t, dir)
			if split != x.split {
				t.Fatalf("split %v, want %v", x.split, split)
			}
			before := lsV(t, dir)
			writeFile(t, dir, "new.txt", "new\n")
			r := openRepo(t, dir)
			if err := r.StagePath(context.Background(), "new.txt"); err != nil {
				t.Fatal(err)
			}
			after := slices.DeleteFunc(lsV(t, dir), func(l string) bool { return l == "H new.txt" })
			if d := diffLines(before, after); d != "" {
				t.Errorf("ls-files -v after our stage (-before +after):\n%s", d)
			}
			checkDebugAgainstGit(t, dir)
		})
	}
}

// TestIndexDecodeMatchesGit cross-checks the decoder with git ls-files
// --debug on the indexes git writes.
func TestIndexDecodeMatchesGit(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"plain", func(t *testing.T, dir string) {}},
		{"assume-unchanged", func(t *testing.T, dir string) {
			gitRun(t, dir, "update-index", "--assume-unchanged", "a.txt", "dir/b.txt")
		}},
		{"skip-worktree", func(t *testing.T, dir string) {
			gitRun(t, dir, "update-index", "--skip-worktree", "dir/sub/c.txt")
		}},
		{"intent-to-add", func(t *testing.T, dir string) {
			writeFile(t, dir, "dir/ita.txt", "ita\n")
			gitRun(t, dir, "add", "-N", "dir/ita.txt")
		}},
		{"version 4", func(t *testing.T, dir string) {
			gitRun(t, dir, "update-index", "--index-version", "4")
			gitRun(t, dir, "update-index", "--assume-unchanged", "dir/sub/c.txt")
		}},
		{"split index", func(t *testing.T, dir string) {
			gitRun(t, dir, "update-index", "--split-index")
			writeFile(t, dir, "dir/b.txt", "changed\n")
			writeFile(t, dir, "e.txt", "new\n")
			gitRun(t, dir, "add", "dir/b.txt", "e.txt")
			gitRun(t, dir, "update-index", "--assume-unchanged", "a.txt")
			gitRun(t, dir, "update-index", "--skip-worktree", "dir/sub/c.txt")
		}},
		{"conflict", func(t *testing.T, dir string) {
			gitRun(t, dir, "checkout", "-q", "-b", "side")
			writeFile(t, dir, "a.txt", "side\n")
			gitRun(t, dir, "commit", "-q", "-am", "side")
			gitRun(t, dir, "checkout", "-q", "main")
			writeFile(t, dir, "a.txt", "main\n")
			gitRun(t, dir, "commit", "-q", "-am", "main")
			if _, err := runGit(dir, "merge", "-q", "side"); err == nil {
				t.Fatal("merge did not conflict")
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := newGitRepo(t)
			writeFile(t, dir, "a.txt", "a\n")
			writeFile(t, dir, "dir/b.txt", "b\n")
			writeFile(t, dir, "dir/sub/c.txt", "c\n")
			writeFile(t, dir, "d.txt", "d\n")
			gitRun(t, dir, "add", "-A")
			gitRun(t, dir, "commit", "-q", "-m", "files")
			c.setup(t, dir)
			x := checkDebugAgainstGit(t, dir)
			// What we would write back reads the same.
			b, err := encodeIndex(x.version, x.entries, x.assumeValid, nil)
			if err != nil {
				t.Fatal(err)
			}
			y, err := decodeIndex(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := debugView(y), debugView(x); got != want {
				t.Errorf("re-encoded index reads\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestStageKeepsCacheTree checks that staging invalidates the cache-tree
// only above the staged path: the other directories keep entries that
// equal the trees git writes, and git and we agree on the result.
func TestStageKeepsCacheTree(t *testing.T) {
	dir := newGitRepo(t)
	for _, f := range []string{"top.txt", "a/f.txt", "a/deep/g.txt", "b/x/h.txt", "b/i.txt", "c/j.txt"} {
		writeFile(t, dir, f, f+"\n")
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "files") // a fully valid cache-tree
	ageAll(t, dir)
	writeFile(t, dir, "a/f.txt", "changed\n")
	writeFile(t, dir, "b/x/new.txt", "new\n")
	r := openRepo(t, dir)
	for _, p := range []string{"a/f.txt", "b/x/new.txt"} {
		if err := r.StagePath(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	x := checkDebugAgainstGit(t, dir)
	checkAgainstGit(t, dir, status(t, r), "")
	// Our own fast path survives too: a/deep and c come from the index,
	// only the invalidated directories are read.
	if _, short := treeCounts(r); short != 2 {
		t.Errorf("%d directories taken from the cache-tree after our stage, want 2 (a/deep, c)", short)
	}
	if x.tree == nil {
		t.Fatal("the index lost its cache-tree")
	}
	valid := x.validTree()
	for _, d := range []string{"", "a", "b", "b/x"} {
		if _, ok := valid[d]; ok {
			t.Errorf("cache-tree %q still valid after staging below it", d)
		}
	}
	// The trees of an index rebuilt from the same entries without a
	// cache-tree are what git writes from scratch; what we kept must
	// name the same trees, and git's write-tree (which trusts it) the
	// same root.
	scratch := filepath.Join(t.TempDir(), "index")
	load := execGit(dir, "update-index", "--index-info")
	load.Env = append(os.Environ(), "GIT_INDEX_FILE="+scratch)
	load.Stdin = strings.NewReader(gitRun(t, dir, "ls-files", "--stage"))
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("update-index --index-info: %v\n%s", err, out)
	}
	write := execGit(dir, "write-tree")
	write.Env = append(os.Environ(), "GIT_INDEX_FILE="+scratch)
	out, err := write.Output()
	if err != nil {
		t.Fatal(err)
	}
	fresh := strings.TrimSpace(string(out))
	for _, d := range []string{"a/deep", "c"} {
		ct, ok := valid[d]
		if !ok {
			t.Errorf("cache-tree %q dropped though nothing below it changed", d)
			continue
		}
		if want := strings.TrimSpace(gitRun(t, dir, "rev-parse", fresh+":"+d)); ct.oid.String() != want {
			t.Errorf("cache-tree %q: %s, git writes %s", d, ct.oid, want)
		}
	}
	if tree := strings.TrimSpace(gitRun(t, dir, "write-tree")); tree != fresh {
		t.Errorf("git write-tree %s through our cache-tree, %s from scratch", tree, fresh)
	}
	gitRun(t, dir, "commit", "-q", "-m", "staged")
	if st := strings.TrimSpace(gitRun(t, dir, "status", "--porcelain")); st != "" {
		t.Errorf("git status after commit: %q", st)
	}
}

// TestCacheTreeInvalidate pins git's cache_tree_invalidate_path: every
// entry above the path loses its count, and a subtree named by the path
// itself is dropped.
func TestCacheTreeInvalidate(t *testing.T) {
	root := &treeNode{count: 3, down: []*treeNode{
		{name: "a", count: 2, down: []*treeNode{{name: "b", count: 1}}},
		{name: "c", count: 1},
	}}
	root.invalidate("a/b")
	if got := string(encodeCacheTree(root)); got != "\x00-1 2\na\x00-1 0\nc\x001 0\n"+string(make([]byte, 20)) {
		t.Errorf("after invalidating a/b: %q", got)
	}
	root.invalidate("c/new")
	if got := root.down[1].count; got != -1 {
		t.Errorf("c count %d after a path below it, want -1", got)
	}
}
