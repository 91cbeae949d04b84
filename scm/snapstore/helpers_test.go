package snapstore

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain isolates git from the machine's user and system configuration,
// and checks for leaked goroutines.
func TestMain(m *testing.M) {
	if os.Getenv(crashHelperEnv) != "" {
		crashHelper()
		return
	}
	home, err := os.MkdirTemp("", "snapstore-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for k, v := range map[string]string{
		"HOME":                  home,
		"XDG_CONFIG_HOME":       filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM":   "1",
		"GIT_ATTR_NOSYSTEM":     "1",
		"GIT_AUTHOR_NAME":       "T",
		"GIT_AUTHOR_EMAIL":      "t@example.com",
		"GIT_COMMITTER_NAME":    "T",
		"GIT_COMMITTER_EMAIL":   "t@example.com",
		"GIT_LITERAL_PATHSPECS": "1",
	} {
		os.Setenv(k, v)
	}
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	cleanupBench()
	os.RemoveAll(home)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not available")
	}
}

// git runs git in dir with extra environment and returns its trimmed
// stdout, failing the test on error.
func git(t testing.TB, dir string, env []string, stdin string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, env, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gitErr(dir string, env []string, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// file is a test tree entry: content for blobs and symlinks, a commit id
// for gitlinks.
type file struct {
	mode    uint32
	content string
}

func reg(s string) file  { return file{ModeFile, s} }
func exe(s string) file  { return file{ModeExec, s} }
func sym(s string) file  { return file{ModeSymlink, s} }
func link(s string) file { return file{ModeGitlink, s} }

// hashObjects stores contents as blobs in repo with git and returns their ids.
func hashObjects(t testing.TB, repo string, env []string, contents []string) []string {
	t.Helper()
	if len(contents) == 0 {
		return nil
	}
	tmp := t.TempDir()
	var paths []string
	for i, c := range contents {
		p := filepath.Join(tmp, fmt.Sprint(i))
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out := git(t, repo, env, strings.Join(paths, "\n")+"\n", "hash-object", "-w", "--no-filters", "--stdin-paths")
	ids := strings.Fields(out)
	if len(ids) != len(contents) {
		t.Fatalf("hash-object returned %d ids for %d files", len(ids), len(contents))
	}
	return ids
}

// makeRepo creates a repository whose HEAD commit holds files (built with
// the index plumbing, so no checkout is needed) and returns its directory
// and HEAD tree.
func makeRepo(t testing.TB, files map[string]file) (string, string) {
	t.Helper()
	repo := t.TempDir()
	git(t, repo, nil, "", "init", "-q", "-b", "main")
	tree := indexTree(t, repo, files)
	commit := git(t, repo, nil, "", "commit-tree", "-m", "base", tree)
	git(t, repo, nil, "", "update-ref", "HEAD", commit)
	return repo, tree
}

// indexTree writes files into a fresh temporary index of repo and returns
// the tree `git write-tree` makes of it.
func indexTree(t testing.TB, repo string, files map[string]file) string {
	t.Helper()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	git(t, repo, env, "", "read-tree", "--empty")
	var paths, contents []string
	for p, f := range files {
		if f.mode != ModeGitlink {
			paths = append(paths, p)
			contents = append(contents, f.content)
		}
	}
	ids := hashObjects(t, repo, nil, contents)
	var info strings.Builder
	for i, p := range paths {
		fmt.Fprintf(&info, "%o %s\t%s\n", files[p].mode, ids[i], p)
	}
	for p, f := range files {
		if f.mode == ModeGitlink {
			fmt.Fprintf(&info, "%o %s\t%s\n", f.mode, f.content, p)
		}
	}
	git(t, repo, env, info.String(), "update-index", "--add", "--index-info")
	return git(t, repo, env, "", "write-tree")
}

// gitOverlay applies changes to base in a temporary index of repo with git
// and returns `git write-tree`'s tree. New objects go to a temporary object
// directory that borrows repo's, so repo itself is not written to.
func gitOverlay(t testing.TB, repo, base string, changes []Change) string {
	t.Helper()
	tmp := t.TempDir()
	objects := filepath.Join(tmp, "objects")
	if err := os.Mkdir(objects, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"GIT_INDEX_FILE=" + filepath.Join(tmp, "index"),
		"GIT_OBJECT_DIRECTORY=" + objects,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(repo, ".git", "objects"),
	}
	if base == "" || base == EmptyTree {
		git(t, repo, env, "", "read-tree", "--empty")
	} else {
		git(t, repo, env, "", "read-tree", base)
	}
	var contents []string
	for _, c := range changes {
		if !c.Delete && c.Content != nil {
			contents = append(contents, string(c.Content))
		}
	}
	ids := hashObjects(t, repo, env, contents)
	// Consecutive additions go in one update-index call; a deletion
	// removes every index entry at or under its path.
	var info strings.Builder
	flush := func() {
		if info.Len() > 0 {
			git(t, repo, env, info.String(), "update-index", "--add", "--replace", "--index-info")
			info.Reset()
		}
	}
	for _, c := range changes {
		if c.Delete {
			flush()
			if ls := git(t, repo, env, "", "ls-files", "-z", "--", c.Path); ls != "" {
				git(t, repo, env, ls, "update-index", "-z", "--force-remove", "--stdin")
			}
			continue
		}
		oid := c.OID
		if c.Content != nil {
			oid, ids = ids[0], ids[1:]
		}
		mode := c.Mode
		if mode == 0 {
			mode = ModeFile
		}
		fmt.Fprintf(&info, "%o %s\t%s\n", mode, oid, c.Path)
	}
	flush()
	return git(t, repo, env, "", "write-tree")
}

// looseObjects lists the loose object ids in a store or .git directory.
func looseObjects(t testing.TB, gitDir string) []string {
	t.Helper()
	var ids []string
	objects := filepath.Join(gitDir, "objects")
	fans, err := os.ReadDir(objects)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fans {
		if !f.IsDir() || len(f.Name()) != 2 {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(objects, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if _, ok := parseOID(f.Name() + e.Name()); ok {
				ids = append(ids, f.Name()+e.Name())
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// tmpFiles lists leftover temporary files under a store's objects.
func tmpFiles(t testing.TB, gitDir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(gitDir, "objects", "*", "tmp_obj_*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func openStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "snapshots.git"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
