package scm

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// --- helpers ---------------------------------------------------------------

// checkGit compares our Status with git's view of dir.
func checkGit(t *testing.T, dir string, r *Repo) {
	t.Helper()
	checkAgainstGit(t, dir, status(t, r), "")
}

// lsDebug maps each index path to git's view of its entry: mode, id,
// stage and all cached stat data and flags (ls-files --stage --debug).
func lsDebug(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := gitRun(t, dir, "ls-files", "--stage", "--debug")
	m := map[string]string{}
	var cur string
	for _, l := range strings.Split(out, "\n") {
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "  ") {
			m[cur] += l + "\n"
			continue
		}
		_, p, _ := strings.Cut(l, "\t")
		cur = p + " " + strings.Fields(l)[2] // path and stage
		m[cur] = l + "\n"
	}
	return m
}

// sameExcept checks that entries not under touched are unchanged.
func sameExcept(t *testing.T, before, after map[string]string, touched ...string) {
	t.Helper()
	isTouched := func(k string) bool {
		p := k[:strings.LastIndexByte(k, ' ')]
		for _, x := range touched {
			if p == x || strings.HasPrefix(p, x+"/") {
				return true
			}
		}
		return false
	}
	for k, v := range before {
		if isTouched(k) {
			continue
		}
		if after[k] != v {
			t.Errorf("untouched entry changed:\n%s\n=>\n%s", v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok && !isTouched(k) {
			t.Errorf("unexpected new entry %s", k)
		}
	}
}

// snapshotDir records every path below dir with its content or target.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			tgt, _ := os.Readlink(p)
			v += " -> " + tgt
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		}
		m[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func diffCached(t *testing.T, dir string) []string {
	t.Helper()
	out := gitRun(t, dir, "diff", "--cached", "--name-status", "--no-renames")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	sort.Strings(lines)
	return lines
}

func unsetEnv(t *testing.T, keys ...string) {
	for _, k := range keys {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func readIndex(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	must(t, err)
	return b
}

// --- working tree ---------------------------------------------------------

func TestWriteWorktree(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	outside := t.TempDir()
	writeFile(t, outside, "victim.txt", "keep me\n")
	must(t, os.Symlink(outside, filepath.Join(dir, "out")))
	must(t, os.Symlink("dir", filepath.Join(dir, "in")))
	before := snapshotDir(t, outside)

	must(t, r.WriteWorktree("n/m/new.txt", []byte("new\n"), 0o100644))
	must(t, r.WriteWorktree("a.txt", []byte("alpha exec\n"), 0o100755))
	must(t, r.WriteWorktree("script.sh", []byte("#!/bin/sh\n"), 0o100644))
	must(t, r.WriteWorktree("newlink", []byte("b.txt"), 0o120000))
	must(t, r.WriteWorktree("link", []byte("not a link\n"), 0o100644)) // symlink -> file
	must(t, r.WriteWorktree("b.txt", []byte("dir/c.txt"), 0o120000))   // file -> symlink
	must(t, os.Mkdir(filepath.Join(dir, "emptydir"), 0o755))
	must(t, r.WriteWorktree("emptydir", []byte("x\n"), 0o100644)) // empty dir -> file

	for _, c := range []struct {
		path string
		want string
		perm fs.FileMode
	}{
		{"n/m/new.txt", "new\n", 0o644},
		{"a.txt", "alpha exec\n", 0o755},
		{"script.sh", "#!/bin/sh\n", 0o644},
		{"link", "not a link\n", 0o644},
		{"emptydir", "x\n", 0o644},
	} {
		p := filepath.Join(dir, c.path)
		b, err := os.ReadFile(p)
		must(t, err)
		fi, err := os.Lstat(p)
		must(t, err)
		if string(b) != c.want || !fi.Mode().IsRegular() || fi.Mode().Perm() != c.perm {
			t.Errorf("%s: %q %v", c.path, b, fi.Mode())
		}
	}
	for p, want := range map[string]string{"newlink": "b.txt", "b.txt": "dir/c.txt"} {
		if got, err := os.Readlink(filepath.Join(dir, p)); err != nil || got != want {
			t.Errorf("%s: readlink %q %v", p, got, err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "n", "m"))
	if len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}

	must(t, os.MkdirAll(filepath.Join(dir, "full", "x"), 0o755))
	if err := r.WriteWorktree("full", []byte("x"), 0o100644); err == nil {
		t.Error("replaced a non-empty directory")
	}
	for _, p := range []string{"../x", "a/../../x", "/etc/passwd", filepath.Join(outside, "victim.txt"),
		".git/config", ".git/x", "sub/.git/x", ".GIT/x", "out/victim.txt", "out/new.txt", "out/sub/new.txt", "in/c.txt", ""} {
		if err := r.WriteWorktree(p, []byte("pwned\n"), 0o100644); !errors.Is(err, ErrOutsideWorktree) {
			t.Errorf("WriteWorktree(%q) = %v, want ErrOutsideWorktree", p, err)
		}
		if err := r.RemoveWorktree(p); !errors.Is(err, ErrOutsideWorktree) {
			t.Errorf("RemoveWorktree(%q) = %v, want ErrOutsideWorktree", p, err)
		}
		if err := r.RemoveWorktreeDir(p); !errors.Is(err, ErrOutsideWorktree) {
			t.Errorf("RemoveWorktreeDir(%q) = %v, want ErrOutsideWorktree", p, err)
		}
		if err := r.Chmod(p, 0o100755); !errors.Is(err, ErrOutsideWorktree) {
			t.Errorf("Chmod(%q) = %v, want ErrOutsideWorktree", p, err)
		}
	}
	if err := r.WriteWorktree("out", []byte("replace the link itself"), 0o100644); err != nil {
		t.Errorf("replacing a symlink at the root: %v", err)
	}
	if got := snapshotDir(t, outside); !equalMaps(before, got) {
		t.Errorf("outside directory changed:\n%v\n%v", before, got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "config")); bytes.Contains(b, []byte("pwned")) {
		t.Error(".git/config written")
	}
	checkGit(t, dir, r)
}

func TestRemoveWorktree(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	outside := t.TempDir()
	writeFile(t, outside, "victim.txt", "keep me\n")
	must(t, os.Symlink(outside, filepath.Join(dir, "out")))
	before := snapshotDir(t, outside)
	_ = status(t, r) // fill the stat cache

	must(t, r.RemoveWorktree("dir/sub/d.txt"))
	if _, err := os.Lstat(filepath.Join(dir, "dir", "sub")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty parent kept: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "dir", "c.txt")); err != nil {
		t.Errorf("sibling removed: %v", err)
	}
	writeFile(t, dir, "p/q/r/only.txt", "1\n")
	must(t, r.RemoveWorktree("p/q/r/only.txt"))
	if _, err := os.Lstat(filepath.Join(dir, "p")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty parents kept: %v", err)
	}
	if _, err := os.Lstat(dir); err != nil {
		t.Fatal("root removed")
	}
	must(t, r.RemoveWorktree("link")) // the symlink, not its target
	if _, err := os.Lstat(filepath.Join(dir, "a.txt")); err != nil {
		t.Errorf("symlink target removed: %v", err)
	}
	must(t, r.RemoveWorktree("out")) // a symlink to a directory is a file here
	if err := r.RemoveWorktree("dir"); err == nil {
		t.Error("removed a directory")
	}
	if err := r.RemoveWorktree("nope.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if got := snapshotDir(t, outside); !equalMaps(before, got) {
		t.Errorf("outside directory changed")
	}
	checkGit(t, dir, r)
}

func TestRemoveWorktreeDir(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	outside := t.TempDir()
	writeFile(t, outside, "victim.txt", "keep me\n")
	before := snapshotDir(t, outside)
	writeFile(t, dir, "junk/a/b.txt", "1\n")
	writeFile(t, dir, "junk/c.txt", "2\n")
	must(t, os.Symlink(outside, filepath.Join(dir, "junk", "a", "escape")))
	_ = status(t, r)
	must(t, r.RemoveWorktreeDir("junk"))
	if _, err := os.Lstat(filepath.Join(dir, "junk")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("junk kept: %v", err)
	}
	if got := snapshotDir(t, outside); !equalMaps(before, got) {
		t.Errorf("outside directory changed")
	}
	if err := r.RemoveWorktreeDir("dir"); err == nil || !strings.Contains(err.Error(), "tracked") {
		t.Errorf("removed a tracked directory: %v", err)
	}
	if err := r.RemoveWorktreeDir("dir/sub"); err == nil {
		t.Error("removed a tracked directory")
	}
	nested := filepath.Join(dir, "vendor", "nested")
	must(t, os.MkdirAll(nested, 0o755))
	gitRun(t, nested, "init", "-q")
	if err := r.RemoveWorktreeDir("vendor"); err == nil {
		t.Error("removed a nested repository")
	}
	must(t, os.Symlink("dir", filepath.Join(dir, "dlink")))
	if err := r.RemoveWorktreeDir("dlink"); err == nil {
		t.Error("removed through a symlink")
	}
	if _, err := os.Stat(filepath.Join(dir, "dir", "c.txt")); err != nil {
		t.Error(err)
	}
	checkGit(t, dir, r)
}

func TestChmod(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	_ = status(t, r)
	must(t, r.Chmod("a.txt", 0o100755))
	must(t, r.Chmod("script.sh", 0o100644))
	for p, want := range map[string]fs.FileMode{"a.txt": 0o755, "script.sh": 0o644} {
		fi, err := os.Stat(filepath.Join(dir, p))
		must(t, err)
		if fi.Mode().Perm() != want {
			t.Errorf("%s: %v", p, fi.Mode())
		}
	}
	if err := r.Chmod("link", 0o100755); err == nil {
		t.Error("chmod of a symlink")
	}
	if err := r.Chmod("a.txt", 0o100600); err == nil {
		t.Error("accepted a non-git mode")
	}
	checkGit(t, dir, r)
}

// --- index ------------------------------------------------------------------

func TestStagePath(t *testing.T) {
	dir := baseRepo(t)
	gitRun(t, dir, "update-index", "--assume-unchanged", "keep/tracked.log")
	r := openRepo(t, dir)
	ctx := context.Background()
	writeFile(t, dir, "a.txt", "alpha modified\n")
	writeFile(t, dir, "n/new.txt", "new\n")
	must(t, os.Remove(filepath.Join(dir, "b.txt")))
	must(t, os.Chmod(filepath.Join(dir, "dir/c.txt"), 0o755))
	must(t, os.Symlink("dir/c.txt", filepath.Join(dir, "newlink")))
	must(t, os.Remove(filepath.Join(dir, "link")))
	must(t, os.Symlink("b.txt", filepath.Join(dir, "link")))
	writeFile(t, dir, "unstaged.txt", "left alone\n")
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{"a.txt", "n/new.txt", "dir/c.txt"} {
		must(t, os.Chtimes(filepath.Join(dir, p), old, old))
	}
	checkGit(t, dir, r)
	before := lsDebug(t, dir)

	paths := []string{"a.txt", "n/new.txt", "b.txt", "dir/c.txt", "newlink", "link"}
	for _, p := range paths {
		must(t, r.StagePath(ctx, p))
	}
	// Stat data must be right: diff-files compares it without refreshing.
	if out := gitRun(t, dir, "diff-files", "--name-status"); out != "" {
		t.Errorf("diff-files after staging:\n%s", out)
	}
	sameExcept(t, before, lsDebug(t, dir), paths...)
	if out := gitRun(t, dir, "ls-files", "-v", "keep/tracked.log"); !strings.HasPrefix(out, "h ") {
		t.Errorf("assume-unchanged flag lost: %q", out)
	}
	want := []string{"A n/new.txt", "A newlink", "D b.txt", "M a.txt", "M dir/c.txt", "M link"}
	if got := diffCached(t, dir); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("diff --cached: %v, want %v", got, want)
	}
	porcelain := gitRun(t, dir, "status", "--porcelain")
	for _, l := range strings.Split(strings.TrimSpace(porcelain), "\n") {
		if l[1] != ' ' && !strings.HasPrefix(l, "?? unstaged.txt") {
			t.Errorf("status --porcelain: unexpected unstaged state %q", l)
		}
	}
	if got := gitRun(t, dir, "show", ":n/new.txt"); got != "new\n" {
		t.Errorf("staged blob %q", got)
	}
	if got := strings.Fields(gitRun(t, dir, "ls-files", "-s", "dir/c.txt"))[0]; got != "100755" {
		t.Errorf("exec bit: %s", got)
	}
	if got := strings.Fields(gitRun(t, dir, "ls-files", "-s", "newlink"))[0]; got != "120000" {
		t.Errorf("symlink mode: %s", got)
	}
	// The staged files are aged, so the index's stat data must let a
	// status skip hashing them.
	r.mu.Lock()
	h0 := r.hashes
	r.mu.Unlock()
	checkGit(t, dir, r)
	r.mu.Lock()
	if r.hashes != h0 {
		t.Errorf("status hashed %d files after staging", r.hashes-h0)
	}
	r.mu.Unlock()
	ok, err := r.HasStaged(ctx)
	if err != nil || !ok {
		t.Errorf("HasStaged = %v, %v", ok, err)
	}
	oid, mode, ok, err := r.IndexBlob("a.txt")
	if err != nil || !ok || mode != 0o100644 || oid != blobID("alpha modified\n") {
		t.Errorf("IndexBlob = %s %o %v %v", oid, mode, ok, err)
	}
	oid, _, ok, err = r.HeadBlob("a.txt")
	if err != nil || !ok || oid != blobID("alpha\n") {
		t.Errorf("HeadBlob = %s %v %v", oid, ok, err)
	}
	if _, _, ok, _ := r.IndexBlob("b.txt"); ok {
		t.Error("IndexBlob of a removed entry")
	}
	if _, _, ok, _ := r.HeadBlob("n/new.txt"); ok {
		t.Error("HeadBlob of a new file")
	}
}

func TestStagePathDirectoryAndReplace(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	ctx := context.Background()
	// A file becomes a directory and a directory becomes a file.
	must(t, os.Remove(filepath.Join(dir, "b.txt")))
	writeFile(t, dir, "b.txt/inner.txt", "inner\n")
	must(t, os.RemoveAll(filepath.Join(dir, "dir", "sub")))
	writeFile(t, dir, "dir/sub", "now a file\n")
	writeFile(t, dir, "dir/new.txt", "n\n")
	writeFile(t, dir, "dir/ignored.log", "i\n")
	must(t, r.StagePath(ctx, "b.txt/inner.txt"))
	must(t, r.StagePath(ctx, "dir"))
	got := diffCached(t, dir)
	want := []string{"A b.txt/inner.txt", "A dir/new.txt", "A dir/sub", "D b.txt", "D dir/sub/d.txt"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("diff --cached: %v, want %v", got, want)
	}
	if out := gitRun(t, dir, "ls-files", "dir/ignored.log"); out != "" {
		t.Errorf("ignored file staged")
	}
	checkGit(t, dir, r)
}

func TestStageContent(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	ctx := context.Background()
	writeFile(t, dir, "a.txt", "one\ntwo\nthree\n")
	partial := []byte("one\nalpha\n")
	must(t, r.StageContent(ctx, "a.txt", partial, 0o100644))
	if got := gitRun(t, dir, "show", ":a.txt"); got != string(partial) {
		t.Errorf("git show :a.txt = %q", got)
	}
	must(t, r.StageContent(ctx, "fresh.txt", []byte("only in the index\n"), 0o100755))
	if got := strings.Fields(gitRun(t, dir, "ls-files", "-s", "fresh.txt")); got[0] != "100755" || got[1] != blobID("only in the index\n") {
		t.Errorf("ls-files: %v", got)
	}
	if got := diffCached(t, dir); strings.Join(got, ",") != "A fresh.txt,M a.txt" {
		t.Errorf("diff --cached: %v", got)
	}
	// Both the staged and the unstaged halves differ.
	if out := gitRun(t, dir, "diff", "--name-status"); !strings.Contains(out, "a.txt") || !strings.Contains(out, "fresh.txt") {
		t.Errorf("git diff: %q", out)
	}
	checkGit(t, dir, r)
	// Staging the whole worktree content makes the file clean against the
	// index even though the entry's stat data was zeroed.
	must(t, r.StageContent(ctx, "a.txt", []byte("one\ntwo\nthree\n"), 0o100644))
	if out := gitRun(t, dir, "diff", "--name-only", "a.txt"); out != "" {
		t.Errorf("a.txt still differs: %q", out)
	}
	checkGit(t, dir, r)
	if err := r.StageContent(ctx, "x", nil, 0o040000); err == nil {
		t.Error("accepted a tree mode")
	}
}

func TestUnstagePath(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	ctx := context.Background()
	writeFile(t, dir, "a.txt", "staged change\n")
	writeFile(t, dir, "new.txt", "new\n")
	gitRun(t, dir, "add", "a.txt", "new.txt")
	gitRun(t, dir, "rm", "-q", "--cached", "b.txt")
	gitRun(t, dir, "update-index", "--chmod=+x", "dir/c.txt")
	ageAll(t, dir)
	gitRun(t, dir, "status", "--porcelain")
	before := lsDebug(t, dir)

	for _, p := range []string{"a.txt", "new.txt", "b.txt", "dir"} {
		must(t, r.UnstagePath(ctx, p))
	}
	if got := diffCached(t, dir); got != nil {
		t.Errorf("still staged: %v", got)
	}
	if out := gitRun(t, dir, "ls-files", "new.txt"); out != "" {
		t.Errorf("new.txt still in the index")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "new.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("new.txt on disk: %q %v", b, err)
	}
	// b.txt matches HEAD on disk: its stat data was refreshed.
	if out := gitRun(t, dir, "diff-files", "--name-status"); out != "M\ta.txt\n" {
		t.Errorf("diff-files: %q", out)
	}
	sameExcept(t, before, lsDebug(t, dir), "a.txt", "new.txt", "b.txt", "dir/c.txt")
	checkGit(t, dir, r)
	ok, err := r.HasStaged(ctx)
	if err != nil || ok {
		t.Errorf("HasStaged = %v, %v", ok, err)
	}
}

func TestStageAll(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	ctx := context.Background()
	writeFile(t, dir, "a.txt", "changed\n")
	must(t, os.Remove(filepath.Join(dir, "b.txt")))
	must(t, os.RemoveAll(filepath.Join(dir, "dir", "sub")))
	writeFile(t, dir, "x/y/new.txt", "new\n")
	writeFile(t, dir, "build/out.o", "ignored\n")
	writeFile(t, dir, "skip.log", "ignored\n")
	writeFile(t, dir, "keep/tracked.log", "tracked in an ignored dir\n")
	must(t, os.Chmod(filepath.Join(dir, "script.sh"), 0o644))
	must(t, os.Symlink("x", filepath.Join(dir, "xl")))
	// What git add -A makes of the same tree.
	twin := filepath.Join(t.TempDir(), "twin")
	gitRun(t, dir, "worktree", "list") // make sure git sees a sane repo
	cp := execGit(dir, "clone", "-q", "--no-local", dir, twin)
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("clone: %v %s", err, out)
	}
	copyTree(t, dir, twin)
	gitRun(t, twin, "add", "-A")
	wantTree := strings.TrimSpace(gitRun(t, twin, "write-tree"))

	must(t, r.StageAll(ctx))
	if got := strings.TrimSpace(gitRun(t, dir, "write-tree")); got != wantTree {
		t.Errorf("tree after StageAll %s, git add -A %s\n%s", got, wantTree, gitRun(t, dir, "status", "--porcelain"))
	}
	if out := gitRun(t, dir, "status", "--porcelain"); strings.Contains(out, "??") || strings.Contains(out, " M") {
		t.Errorf("status after StageAll:\n%s", out)
	}
	checkGit(t, dir, r)
}

// copyTree copies the working tree of src (not .git) over dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == ".git" {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			os.Remove(target)
			return os.Symlink(l, target)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			os.Remove(target)
			return os.WriteFile(target, b, fi.Mode().Perm())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// Deletions.
	filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dst, p)
		if rel == ".git" {
			return filepath.SkipDir
		}
		if _, err := os.Lstat(filepath.Join(src, rel)); errors.Is(err, fs.ErrNotExist) {
			os.RemoveAll(p)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
}

func TestIndexLocked(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	ctx := context.Background()
	writeFile(t, dir, "a.txt", "changed\n")
	lock := filepath.Join(dir, ".git", "index.lock")
	must(t, os.WriteFile(lock, []byte("someone else's"), 0o644))
	orig := readIndex(t, dir)
	calls := map[string]func() error{
		"StagePath":    func() error { return r.StagePath(ctx, "a.txt") },
		"StageContent": func() error { return r.StageContent(ctx, "a.txt", []byte("x\n"), 0o100644) },
		"UnstagePath":  func() error { return r.UnstagePath(ctx, "a.txt") },
		"StageAll":     func() error { return r.StageAll(ctx) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrIndexLocked) {
			t.Errorf("%s with index.lock: %v", name, err)
		}
		if b, err := os.ReadFile(lock); err != nil || string(b) != "someone else's" {
			t.Fatalf("%s touched the foreign lock: %q %v", name, b, err)
		}
		if !bytes.Equal(readIndex(t, dir), orig) {
			t.Fatalf("%s changed the index", name)
		}
	}
	must(t, os.Remove(lock))
	must(t, r.StagePath(ctx, "a.txt"))
	if _, err := os.Lstat(lock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("our lock left behind: %v", err)
	}
	if got := diffCached(t, dir); strings.Join(got, ",") != "M a.txt" {
		t.Errorf("diff --cached: %v", got)
	}
	// A failing edit releases our lock and leaves the index alone.
	orig = readIndex(t, dir)
	writeFile(t, dir, "f.bin", "x")
	writeFile(t, dir, ".gitattributes", "*.bin filter=custom\n")
	gitRun(t, dir, "config", "filter.custom.clean", "cat")
	if err := r.StagePath(ctx, "f.bin"); err == nil {
		t.Error("staged through an unsupported filter")
	}
	if _, err := os.Lstat(lock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock left behind after a failure: %v", err)
	}
	if !bytes.Equal(readIndex(t, dir), orig) {
		t.Error("failed edit changed the index")
	}
	checkGit(t, dir, r)
}

func TestIndexFormatsAndExtensions(t *testing.T) {
	dir := baseRepo(t)
	ctx := context.Background()
	// A resolved conflict leaves a REUC extension.
	gitRun(t, dir, "checkout", "-q", "-b", "other")
	writeFile(t, dir, "a.txt", "other\n")
	gitRun(t, dir, "commit", "-q", "-am", "other")
	gitRun(t, dir, "checkout", "-q", "main")
	writeFile(t, dir, "a.txt", "mine\n")
	gitRun(t, dir, "commit", "-q", "-am", "mine")
	if _, err := runGit(dir, "merge", "-q", "other"); err == nil {
		t.Fatal("merge did not conflict")
	}
	writeFile(t, dir, "a.txt", "resolved\n")
	gitRun(t, dir, "add", "a.txt")
	gitRun(t, dir, "commit", "-q", "--no-edit")
	gitRun(t, dir, "update-index", "--assume-unchanged", "b.txt")
	gitRun(t, dir, "update-index", "--skip-worktree", "dir/c.txt")
	reuc := gitRun(t, dir, "ls-files", "--resolve-undo")
	if reuc == "" {
		t.Skip("git recorded no resolve-undo data")
	}
	r := openRepo(t, dir)
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			gitRun(t, dir, "update-index", "--no-skip-worktree", "dir/c.txt")
			if version != "2" {
				gitRun(t, dir, "update-index", "--skip-worktree", "dir/c.txt")
			}
			gitRun(t, dir, "update-index", "--index-version", version)
			ageAll(t, dir)
			gitRun(t, dir, "status", "--porcelain")
			before := lsDebug(t, dir)
			name := "v" + version + ".txt"
			writeFile(t, dir, name, version+"\n")
			must(t, r.StagePath(ctx, name))
			idx := readIndex(t, dir)
			if got := idx[7]; string(rune('0'+got)) != version {
				t.Errorf("index version %d, want %s", got, version)
			}
			sameExcept(t, before, lsDebug(t, dir), name)
			if got := gitRun(t, dir, "ls-files", "--resolve-undo"); got != reuc {
				t.Errorf("resolve-undo lost: %q", got)
			}
			v := gitRun(t, dir, "ls-files", "-v", "b.txt", "dir/c.txt")
			if version != "2" && v != "h b.txt\nS dir/c.txt\n" || version == "2" && v != "h b.txt\nH dir/c.txt\n" {
				t.Errorf("flags: %q", v)
			}
			gitRun(t, dir, "fsck", "--strict", "--no-dangling")
			checkGit(t, dir, r)
		})
	}
	if err := r.StagePath(ctx, "dir/c.txt"); err == nil {
		t.Error("staged a skip-worktree path")
	}
}

// An entry that was racily clean in the old index must not become
// trusted in the new one when its file changed (git smudges its size).
func TestRacyEntrySmudged(t *testing.T) {
	dir := baseRepo(t)
	gitRun(t, dir, "config", "core.trustctime", "false")
	r := openRepo(t, dir)
	ctx := context.Background()
	p := filepath.Join(dir, "a.txt")
	future := time.Now().Add(300 * time.Millisecond)
	writeFile(t, dir, "a.txt", "AAAAA\n")
	must(t, os.Chtimes(p, future, future))
	gitRun(t, dir, "add", "a.txt") // entry mtime = future > index mtime: racy
	writeFile(t, dir, "a.txt", "BBBBB\n")
	must(t, os.Chtimes(p, future, future))
	time.Sleep(time.Until(future) + 50*time.Millisecond)
	writeFile(t, dir, "other.txt", "o\n")
	must(t, r.StagePath(ctx, "other.txt")) // new index mtime > entry mtime
	if out := gitRun(t, dir, "diff-files", "--name-only"); out != "a.txt\n" {
		t.Errorf("diff-files = %q, want a.txt (racy entry trusted)", out)
	}
	checkGit(t, dir, r)
}

func TestStageConflictResolution(t *testing.T) {
	dir := baseRepo(t)
	gitRun(t, dir, "checkout", "-q", "-b", "other")
	writeFile(t, dir, "a.txt", "other\n")
	gitRun(t, dir, "commit", "-q", "-am", "other")
	gitRun(t, dir, "checkout", "-q", "main")
	writeFile(t, dir, "a.txt", "mine\n")
	gitRun(t, dir, "commit", "-q", "-am", "mine")
	if _, err := runGit(dir, "merge", "-q", "other"); err == nil {
		t.Fatal("merge did not conflict")
	}
	r := openRepo(t, dir)
	ctx := context.Background()
	if _, err := r.Commit(ctx, "x"); err == nil {
		t.Error("committed with unmerged paths")
	}
	writeFile(t, dir, "a.txt", "resolved\n")
	must(t, r.StagePath(ctx, "a.txt"))
	if out := gitRun(t, dir, "ls-files", "-u"); out != "" {
		t.Errorf("still unmerged: %q", out)
	}
	if got := gitRun(t, dir, "show", ":a.txt"); got != "resolved\n" {
		t.Errorf("staged %q", got)
	}
	if _, err := r.Commit(ctx, "merge"); err == nil || !strings.Contains(err.Error(), "MERGE_HEAD") {
		t.Errorf("commit during a merge: %v", err)
	}
	checkGit(t, dir, r)
}

// --- commit -------------------------------------------------------------------

func TestCommit(t *testing.T) {
	unsetEnv(t, "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL")
	dir := baseRepo(t)
	gitRun(t, dir, "config", "user.name", "Repo User")
	gitRun(t, dir, "config", "user.email", "repo@example.com")
	r := openRepo(t, dir)
	ctx := context.Background()
	parent := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
	if _, err := r.Commit(ctx, "nothing"); !errors.Is(err, ErrNothingStaged) {
		t.Errorf("empty commit: %v", err)
	}
	writeFile(t, dir, "a.txt", "alpha\nmore\n")
	writeFile(t, dir, "dir/sub/deeper/new.txt", "new\n")
	writeFile(t, dir, "untracked.txt", "u\n")
	must(t, os.Remove(filepath.Join(dir, "b.txt")))
	for _, p := range []string{"a.txt", "dir/sub/deeper/new.txt", "b.txt"} {
		must(t, r.StagePath(ctx, p))
	}
	oid, err := r.Commit(ctx, "  Subject line  \n\n\n body text \n\n")
	must(t, err)
	if got := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD")); got != oid {
		t.Errorf("HEAD %s, commit %s", got, oid)
	}
	if got := gitRun(t, dir, "log", "-1", "--format=%an%n%ae%n%cn%n%ce%n%s%n%b%n%P"); got != "Repo User\nrepo@example.com\nRepo User\nrepo@example.com\n  Subject line\n body text\n\n"+parent+"\n" {
		t.Errorf("log: %q", got)
	}
	stat := gitRun(t, dir, "show", "--stat", "--format=", "HEAD")
	for _, want := range []string{"a.txt", "b.txt", "dir/sub/deeper/new.txt", "3 files changed"} {
		if !strings.Contains(stat, want) {
			t.Errorf("show --stat lacks %q:\n%s", want, stat)
		}
	}
	if strings.Contains(stat, "untracked") {
		t.Errorf("untracked file committed:\n%s", stat)
	}
	if got := gitRun(t, dir, "reflog", "-1", "--format=%gs"); got != "commit: Subject line\n" {
		t.Errorf("reflog: %q", got)
	}
	if got := gitRun(t, dir, "reflog", "show", "-1", "--format=%gs", "main"); got != "commit: Subject line\n" {
		t.Errorf("branch reflog: %q", got)
	}
	gitRun(t, dir, "fsck", "--strict", "--no-dangling")
	if got := diffCached(t, dir); got != nil {
		t.Errorf("staged after commit: %v", got)
	}
	st := status(t, r)
	checkAgainstGit(t, dir, st, "")
	if st.HeadOID != oid {
		t.Errorf("Status.HeadOID %s, want %s", st.HeadOID, oid)
	}
	if ok, err := r.HasStaged(ctx); err != nil || ok {
		t.Errorf("HasStaged after commit = %v, %v", ok, err)
	}
	if _, err := r.Commit(ctx, "again"); !errors.Is(err, ErrNothingStaged) {
		t.Errorf("second commit: %v", err)
	}

	// The environment wins over the config, as in git.
	t.Setenv("GIT_AUTHOR_NAME", "Env Author")
	t.Setenv("GIT_AUTHOR_EMAIL", "env@example.com")
	t.Setenv("GIT_AUTHOR_DATE", "1700000000 +0200")
	must(t, r.StageContent(ctx, "a.txt", []byte("env\n"), 0o100644))
	_, err = r.Commit(ctx, "by env")
	must(t, err)
	if got := gitRun(t, dir, "log", "-1", "--format=%an %ae %at %ai|%cn %ce"); got != "Env Author env@example.com 1700000000 2023-11-15 00:13:20 +0200|Repo User repo@example.com\n" {
		t.Errorf("env identity: %q", got)
	}
	if got := gitRun(t, dir, "rev-list", "--count", "HEAD"); got != "3\n" {
		t.Errorf("commit count %s", got)
	}

	// Detached HEAD: the commit moves HEAD only.
	gitRun(t, dir, "checkout", "-q", "--detach")
	main := strings.TrimSpace(gitRun(t, dir, "rev-parse", "main"))
	must(t, r.StageContent(ctx, "a.txt", []byte("detached\n"), 0o100644))
	oid, err = r.Commit(ctx, "detached")
	must(t, err)
	if got := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD")); got != oid {
		t.Errorf("detached HEAD %s, want %s", got, oid)
	}
	if got := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD^")); got != main {
		t.Errorf("detached parent %s, want %s", got, main)
	}
	if got := strings.TrimSpace(gitRun(t, dir, "rev-parse", "main")); got != main {
		t.Errorf("main moved")
	}
	checkGit(t, dir, r)
}

func TestCommitUnbornAndIdentity(t *testing.T) {
	unsetEnv(t, "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	dir := newGitRepo(t)
	gitRun(t, dir, "config", "--unset", "user.name")
	gitRun(t, dir, "config", "--unset", "user.email")
	r := openRepo(t, dir)
	ctx := context.Background()
	if _, err := r.Commit(ctx, "first"); !errors.Is(err, ErrNothingStaged) {
		t.Errorf("unborn, nothing staged: %v", err)
	}
	writeFile(t, dir, "README", "hello\n")
	writeFile(t, dir, "src/main.go", "package main\n")
	writeFile(t, dir, ".gitignore", "*.o\n")
	writeFile(t, dir, "x.o", "o\n")
	must(t, r.StageAll(ctx))
	_, err := r.Commit(ctx, "first")
	if !errors.Is(err, ErrNoIdentity) || !strings.Contains(err.Error(), "git config --global user.email") {
		t.Fatalf("no identity: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git", "refs", "heads", "main")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("branch created without a commit")
	}
	// The XDG config, then ~/.gitconfig (which wins).
	writeFile(t, home, ".config/git/config", "[user]\n\tname = Xdg User\n\temail = xdg@example.com\n")
	writeFile(t, home, ".gitconfig", "[user]\n\temail = home@example.com\n")
	oid, err := r.Commit(ctx, "first")
	must(t, err)
	if got := gitRun(t, dir, "log", "--format=%an %ae %P|%s"); got != "Xdg User home@example.com |first\n" {
		t.Errorf("log: %q", got)
	}
	if got := strings.TrimSpace(gitRun(t, dir, "rev-parse", "main")); got != oid {
		t.Errorf("main = %s, want %s", got, oid)
	}
	if got := gitRun(t, dir, "reflog", "-1", "--format=%gs"); got != "commit (initial): first\n" {
		t.Errorf("reflog: %q", got)
	}
	if got := gitRun(t, dir, "ls-tree", "-r", "--name-only", "HEAD"); got != ".gitignore\nREADME\nsrc/main.go\n" {
		t.Errorf("tree: %q", got)
	}
	gitRun(t, dir, "fsck", "--strict", "--no-dangling")
	checkGit(t, dir, r)

	// Another process holding the branch lock: refused, nothing moved.
	lock := filepath.Join(dir, ".git", "refs", "heads", "main.lock")
	must(t, os.WriteFile(lock, nil, 0o644))
	must(t, r.StageContent(ctx, "README", []byte("second\n"), 0o100644))
	if _, err := r.Commit(ctx, "second"); err == nil {
		t.Error("committed with main.lock held")
	}
	if _, err := os.Lstat(lock); err != nil {
		t.Error("foreign ref lock removed")
	}
	must(t, os.Remove(lock))
	_, err = r.Commit(ctx, "second")
	must(t, err)
	if got := gitRun(t, dir, "log", "--format=%s"); got != "second\nfirst\n" {
		t.Errorf("log: %q", got)
	}
}

func TestCleanupMessage(t *testing.T) {
	for in, want := range map[string]string{
		"subject":                     "subject\n",
		"\n\n  subject \t\n\n\n\nb\n": "  subject\n\nb\n",
		"a\r\nb\r\n":                  "a\nb\n",
		" \n\t\n":                     "",
	} {
		if got := cleanupMessage(in); got != want {
			t.Errorf("cleanupMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConcurrentWrites(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			name := "c" + string(rune('0'+i)) + ".txt"
			for j := range 3 {
				if err := r.WriteWorktree(name, []byte(strings.Repeat("x", j+1)), 0o100644); err != nil {
					t.Error(err)
				}
				if err := r.StagePath(ctx, name); err != nil {
					t.Error(err)
				}
				if _, err := r.Status(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	checkGit(t, dir, r)
	if got := diffCached(t, dir); len(got) != 4 {
		t.Errorf("diff --cached: %v", got)
	}
}

// In a linked worktree the index and HEAD live in its own git dir, the
// branch and objects in the common dir; the branch may be packed.
func TestCommitLinkedWorktree(t *testing.T) {
	dir := baseRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	gitRun(t, dir, "worktree", "add", "-q", "-b", "wtb", wt)
	gitRun(t, dir, "pack-refs", "--all")
	if _, err := os.Lstat(filepath.Join(dir, ".git", "refs", "heads", "wtb")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("branch not packed: %v", err)
	}
	r := openRepo(t, wt)
	ctx := context.Background()
	parent := strings.TrimSpace(gitRun(t, wt, "rev-parse", "HEAD"))
	writeFile(t, wt, "a.txt", "in the worktree\n")
	must(t, r.StagePath(ctx, "a.txt"))
	if got := diffCached(t, wt); strings.Join(got, ",") != "M a.txt" {
		t.Errorf("worktree diff --cached: %v", got)
	}
	if got := diffCached(t, dir); got != nil {
		t.Errorf("main worktree index changed: %v", got)
	}
	oid, err := r.Commit(ctx, "from the worktree")
	must(t, err)
	if got := strings.TrimSpace(gitRun(t, dir, "rev-parse", "wtb")); got != oid {
		t.Errorf("wtb = %s, want %s", got, oid)
	}
	if got := strings.TrimSpace(gitRun(t, wt, "rev-parse", "HEAD^")); got != parent {
		t.Errorf("parent %s, want %s", got, parent)
	}
	if got := strings.TrimSpace(gitRun(t, dir, "rev-parse", "main")); got != parent {
		t.Errorf("main moved to %s", got)
	}
	if got := gitRun(t, wt, "reflog", "-1", "--format=%gs"); got != "commit: from the worktree\n" {
		t.Errorf("worktree HEAD reflog: %q", got)
	}
	checkGit(t, wt, r)
	checkGit(t, dir, openRepo(t, dir))
}
