package scm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"go.uber.org/goleak"
)

// TestMain isolates git (and our config loading) from the machine's user
// and system configuration, and checks for leaked goroutines.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "scm-home-")
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
	os.Unsetenv("GIT_CONFIG_GLOBAL")
	os.Unsetenv("GIT_DIR")
	os.Unsetenv("GIT_WORK_TREE")
	os.Unsetenv("GIT_INDEX_FILE")
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

func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not available")
	}
}

// gitRun runs git in dir and returns stdout.
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

// newGitRepo makes a repository with a main branch.
func newGitRepo(t testing.TB) string {
	t.Helper()
	needGit(t)
	dir := t.TempDir()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	gitRun(t, dir, "init", "-q", "-b", "main")
	gitRun(t, dir, "config", "user.name", "T")
	gitRun(t, dir, "config", "user.email", "t@example.com")
	gitRun(t, dir, "config", "commit.gpgsign", "false")
	return dir
}

func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ageAll sets the mtime of every file below dir (outside .git) one hour
// back, so index entries written afterwards are not racily clean and the
// stat comparison, not the racy rule, decides.
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
	if err != nil {
		t.Fatal(err)
	}
}

func openRepo(t testing.TB, dir string) *Repo {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const emptyTreeOID = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// gitView is what git says changed: "<kind> <path>" lines plus "? <path>"
// lines for untracked paths, from `git diff <base> --name-status` and
// `git ls-files --others --exclude-standard` (which lists untracked files
// individually, like status -uall).
func gitView(t testing.TB, dir, base string) []string {
	t.Helper()
	if base == "" {
		base = "HEAD"
		if _, err := runGit(dir, "rev-parse", "-q", "--verify", "HEAD"); err != nil {
			base = emptyTreeOID
		}
	}
	var lines []string
	out := gitRun(t, dir, "-c", "core.quotepath=false", "diff", base, "--name-status", "--no-renames",
		"--ignore-submodules=dirty", "-z")
	f := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		lines = append(lines, f[i]+" "+f[i+1])
	}
	out = gitRun(t, dir, "ls-files", "--others", "--exclude-standard", "-z")
	for _, p := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		if p != "" {
			lines = append(lines, "? "+strings.TrimSuffix(p, "/"))
		}
	}
	sort.Strings(lines)
	return lines
}

func runGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return string(out), err
}

// ourView renders changes like gitView.
func ourView(changes []Change) []string {
	var lines []string
	for _, c := range changes {
		if c.Untracked && c.Head == nil {
			lines = append(lines, "? "+c.Path)
			continue
		}
		lines = append(lines, c.Kind.String()+" "+c.Path)
	}
	sort.Strings(lines)
	return lines
}

func diffLines(want, got []string) string {
	w := map[string]bool{}
	g := map[string]bool{}
	for _, l := range want {
		w[l] = true
	}
	for _, l := range got {
		g[l] = true
	}
	var b strings.Builder
	for _, l := range want {
		if !g[l] {
			fmt.Fprintf(&b, "-%s\n", l)
		}
	}
	for _, l := range got {
		if !w[l] {
			fmt.Fprintf(&b, "+%s\n", l)
		}
	}
	return b.String()
}

// checkAgainstGit compares a Status with git's view and checks every
// reported blob id against git (rev-parse for the base, hash-object for
// the working tree, which applies the same clean filters).
func checkAgainstGit(t *testing.T, dir string, st *Status, base string) {
	t.Helper()
	want := gitView(t, dir, base)
	got := ourView(st.Changes)
	if d := diffLines(want, got); d != "" {
		t.Errorf("status mismatch (-git +ours):\n%s", d)
	}
	if !sort.SliceIsSorted(st.Changes, func(i, j int) bool { return st.Changes[i].Path < st.Changes[j].Path }) {
		t.Errorf("changes not sorted")
	}
	for _, c := range st.Changes {
		if c.Work != nil && c.Work.OID != "" && (c.Work.Mode == 0o100644 || c.Work.Mode == 0o100755) {
			h := strings.TrimSpace(gitRun(t, dir, "hash-object", "--", c.Path))
			if h != c.Work.OID {
				t.Errorf("%s: work oid %s, git hash-object %s", c.Path, c.Work.OID, h)
			}
		}
		if c.Head != nil && base == "" && st.HeadOID != "" {
			h := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD:"+c.Path))
			if h != c.Head.OID {
				t.Errorf("%s: head oid %s, git %s", c.Path, c.Head.OID, h)
			}
		}
	}
}

func status(t testing.TB, r *Repo) *Status {
	t.Helper()
	st, err := r.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func execGit(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	return cmd
}

func blobID(content string) string {
	return plumbing.ComputeHash(plumbing.BlobObject, []byte(content)).String()
}
