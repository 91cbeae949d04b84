package source

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/changesetd/changesetd/scm/snapstore"
	"github.com/changesetd/changesetd/session"
)

// TestMain isolates git from the machine's user and system configuration,
// and checks for leaked goroutines: every watcher a test starts must be
// stopped by the workspace's Close.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "source-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for k, v := range map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_ATTR_NOSYSTEM":   "1",
		"GIT_AUTHOR_NAME":     "T",
		"GIT_AUTHOR_EMAIL":    "t@example.com",
		"GIT_COMMITTER_NAME":  "T",
		"GIT_COMMITTER_EMAIL": "t@example.com",
	} {
		os.Setenv(k, v)
	}
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "CHANGESETD_WATCH", "CHANGESETD_POLL_INTERVAL"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	os.RemoveAll(home)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func gitRun(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// newRepo commits a small tree with nested directories and an ignore
// rule, on a main branch.
func newRepo(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not available")
	}
	dir := t.TempDir()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	gitRun(t, dir, "init", "-q", "-b", "main")
	gitRun(t, dir, "config", "user.name", "T")
	gitRun(t, dir, "config", "user.email", "t@example.com")
	gitRun(t, dir, "config", "commit.gpgsign", "false")
	writeFile(t, dir, "a.txt", "alpha\n")
	writeFile(t, dir, "b.txt", "bravo\nbravo\nbravo\n")
	writeFile(t, dir, "dir/c.txt", "charlie\n")
	writeFile(t, dir, "dir/sub/d.txt", "delta\n")
	writeFile(t, dir, ".gitignore", "*.log\nbuild/\n")
	ageAll(t, dir)
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "base")
	return dir
}

func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(content), 0o644))
}

// ageAll sets the mtime of every file below dir (outside .git) one hour
// back, so index entries written afterwards are not racily clean.
func ageAll(t testing.TB, dir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			return os.Chtimes(p, old, old)
		}
		return nil
	})
	must(t, err)
}

// open opens dir as a session's workspace, with its own snapshot store.
func open(t testing.TB, dir string) session.Workspace {
	t.Helper()
	snaps, err := snapstore.Open(t.TempDir())
	must(t, err)
	t.Cleanup(func() { snaps.Close() })
	w, err := Opener(slog.New(slog.NewTextHandler(io.Discard, nil)), snaps)(dir)
	must(t, err)
	return w
}

// openGit opens dir, which must be in a git repository, and closes the
// workspace (its watcher) when the test ends.
func openGit(t testing.TB, dir string) *gitWorkspace {
	t.Helper()
	w, ok := open(t, dir).(*gitWorkspace)
	if !ok {
		t.Fatalf("%s did not open as a git working tree", dir)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// gitPaths is what git reports changed in dir against HEAD: the paths of
// git diff HEAD --numstat -- . run there (without rename pairing, which
// status does not do), plus the untracked files there. Paths are relative
// to the repository's top.
func gitPaths(t testing.TB, dir string) []string {
	t.Helper()
	var paths []string
	out := gitRun(t, dir, "diff", "HEAD", "--numstat", "--no-renames", "-z", "--", ".")
	for rec := range strings.SplitSeq(out, "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\t", 3)
		if len(f) != 3 {
			t.Fatalf("numstat record %q", rec)
		}
		paths = append(paths, f[2])
	}
	for p := range strings.SplitSeq(gitRun(t, dir, "ls-files", "--others", "--exclude-standard", "--full-name", "-z"), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}
