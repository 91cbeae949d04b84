package scm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Writes are prepared under .git: the working tree never holds a temp
// file, not even for a moment, and leftovers of an earlier process are
// removed when the repository is opened.
func TestWriteTempsLiveUnderGit(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	must(t, r.WriteWorktree("n/new.txt", []byte("new\n"), 0o100644))
	must(t, r.WriteWorktree("a.txt", []byte("changed\n"), 0o100644))
	must(t, r.WriteWorktree("lnk", []byte("a.txt"), 0o120000))
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if strings.HasSuffix(d.Name(), ".tmp") {
			t.Errorf("temp file in the working tree: %s", p)
		}
		return nil
	})
	must(t, err)

	tmpDir := filepath.Join(dir, ".git", TempDirName)
	ents, err := os.ReadDir(tmpDir)
	must(t, err)
	if len(ents) != 0 {
		t.Errorf("temp dir holds %d entries after successful writes", len(ents))
	}
	// A crash of another process left these behind.
	must(t, os.WriteFile(filepath.Join(tmpDir, "1-abc.tmp"), []byte("half"), 0o600))
	must(t, os.Symlink("x", filepath.Join(tmpDir, "2-def.tmp")))
	mine := filepath.Join(tmpDir, tempPrefix()+"live.tmp")
	must(t, os.WriteFile(mine, nil, 0o600))
	openRepo(t, dir)
	ents, err = os.ReadDir(tmpDir)
	must(t, err)
	if len(ents) != 1 || ents[0].Name() != filepath.Base(mine) {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("after open, temp dir holds %v; want only this process's %s", names, filepath.Base(mine))
	}
	out := gitRun(t, dir, "status", "--porcelain", "--untracked-files=all")
	if strings.Contains(out, ".tmp") || strings.Contains(out, TempDirName) {
		t.Errorf("git status shows temp files:\n%s", out)
	}
}

// A large file is staged from a blob stored streaming before index.lock
// is taken; git reads the object and agrees on its id.
func TestStageLargeFileStreams(t *testing.T) {
	dir := baseRepo(t)
	var b strings.Builder
	for i := 0; b.Len() < 3*streamBlobMin; i++ {
		b.WriteString("a line of a large file, number ")
		b.WriteString(strings.Repeat("x", i%17))
		b.WriteString("\n")
	}
	writeFile(t, dir, "large.txt", b.String())
	r := openRepo(t, dir)
	must(t, r.StagePath(t.Context(), "large.txt"))
	want := strings.TrimSpace(gitRun(t, dir, "hash-object", "large.txt"))
	got := strings.Fields(gitRun(t, dir, "ls-files", "-s", "large.txt"))
	if len(got) < 2 || got[1] != want {
		t.Fatalf("staged %v, git hash-object says %s", got, want)
	}
	if out := gitRun(t, dir, "cat-file", "-p", want); out != b.String() {
		t.Fatalf("git cat-file returns %d bytes, want %d", len(out), b.Len())
	}
	gitRun(t, dir, "fsck", "--no-dangling")
	if out := gitRun(t, dir, "status", "--porcelain", "large.txt"); out != "A  large.txt\n" {
		t.Fatalf("status after staging: %q", out)
	}
}

// A ref or index lock a crashed daemon left is removed when the
// repository is next opened, so git can move the ref again; a lock that
// is not the one the note names (another git's, created since) is kept.
func TestStaleLockOfACrashIsRemoved(t *testing.T) {
	dir := baseRepo(t)
	r := openRepo(t, dir)
	crash := func(path string) {
		t.Helper()
		l, err := acquireNotedLock(path, r.tempDir())
		must(t, err)
		l.f.Close() // killed: neither committed nor rolled back
		if l.note == "" {
			t.Fatal("no note written for the lock")
		}
		// As if an earlier process had written it.
		must(t, os.Rename(l.note, filepath.Join(filepath.Dir(l.note), "1-"+strings.TrimPrefix(filepath.Base(l.note), tempPrefix()))))
	}
	ref := filepath.Join(dir, ".git", "refs", "heads", "main")
	index := filepath.Join(dir, ".git", "index")
	crash(ref)
	crash(index)
	processStart = time.Now().Add(time.Second) // the reopening process started after the crash
	defer func() { processStart = time.Now() }()
	_, err := r.RemoveStaleTemps()
	must(t, err)
	for _, p := range []string{ref, index} {
		if _, err := os.Lstat(p + ".lock"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s.lock after reopening: %v, want it removed", p, err)
		}
	}
	gitRun(t, dir, "commit", "-q", "--allow-empty", "-m", "after the crash")

	// Another git's lock where the note's was (another file, made while
	// ours still existed, so another inode): kept.
	crash(ref)
	must(t, os.WriteFile(ref+".theirs", []byte("theirs\n"), 0o644))
	must(t, os.Remove(ref+".lock"))
	must(t, os.Rename(ref+".theirs", ref+".lock"))
	_, err = r.RemoveStaleTemps()
	must(t, err)
	if b, err := os.ReadFile(ref + ".lock"); err != nil || string(b) != "theirs\n" {
		t.Errorf("another process's lock: %q, %v; want it kept", b, err)
	}
}
