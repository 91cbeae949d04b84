package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// The daemon skips hashing a tracked file when its stat data matches the
// index entry, and skips nothing else: these tests change a tree in the
// ways that must defeat that fast path and compare the uncommitted
// changeset with what the git binary says of the same tree.

// fastPathRepo is a repository on main with a second branch, every file
// an hour old when committed (so no entry starts racily clean), one dirty
// file that a checkout carries over, and core.trustctime off: then the
// racy-clean rule alone catches an in-place edit that keeps the mtime,
// and the inode alone a replacement that keeps it.
func fastPathRepo(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	if real, err := filepath.EvalSymlinks(repo); err == nil {
		repo = real
	}
	git(t, repo, "init", "-q", "-b", "main")
	for name, content := range map[string]string{
		"a.txt":         "alpha\n",
		"b.txt":         "bravo\n",
		"dir/c.txt":     "charlie\n",
		"dir/sub/d.txt": "delta\n",
		"m.txt":         "mike\n",
		"x.txt":         "x on main\n",
	} {
		writeFile(t, repo, name, content)
	}
	ageTree(t, repo)
	git(t, repo, "config", "core.trustctime", "false")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "main")
	git(t, repo, "checkout", "-q", "-b", "other")
	writeFile(t, repo, "x.txt", "x on the other branch\n")
	writeFile(t, repo, "y.txt", "only on the other branch\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "other")
	git(t, repo, "checkout", "-q", "main")
	writeFile(t, repo, "m.txt", "mike, edited\n")
	return repo
}

// ageTree sets every file's mtime below dir (outside .git) an hour back.
func ageTree(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Name() == ".git" {
			if err == nil {
				err = filepath.SkipDir
			}
			return err
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

// racyEdit records dir/c.txt in the index with an mtime ahead of the
// index write (a racily clean entry, which git leaves unsmudged because
// update-index has just checked it), then rewrites it in place with the
// same size and puts the mtime back. Only the racy rule can see it.
func racyEdit(t *testing.T, repo string) {
	t.Helper()
	p := filepath.Join(repo, "dir/c.txt")
	ahead := time.Now().Add(time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, ahead, ahead); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "update-index", "dir/c.txt")
	if out := git(t, repo, "ls-files", "--debug", "dir/c.txt"); strings.Contains(out, "size: 0\t") {
		t.Fatalf("git smudged dir/c.txt: the size, not the racy rule, would catch the edit:\n%s", out)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("CHARLIE\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, ahead, ahead); err != nil {
		t.Fatal(err)
	}
}

// newFileUnderListedDir creates dir/sub/e.txt and puts the directory's
// mtime back, as a cached listing keyed by it would not notice.
func newFileUnderListedDir(t *testing.T, repo string) {
	t.Helper()
	sub := filepath.Join(repo, "dir/sub")
	fi, err := os.Stat(sub)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "dir/sub/e.txt", "echo\n")
	if err := os.Chtimes(sub, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// sameSizeReplacement replaces b.txt by a file of the same size written
// beside it, with b.txt's mtime: only its inode (and ctime, which the
// repository is told not to trust) differs.
func sameSizeReplacement(t *testing.T, repo string) {
	t.Helper()
	p := filepath.Join(repo, "b.txt")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(repo, "b.txt.new")
	if err := os.WriteFile(tmp, []byte("BRAVO\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// gitUncommitted is git's uncommitted view of repo: each changed or
// untracked path with the blob id of its working-tree content ("" when
// deleted), from git diff HEAD, ls-files --others and hash-object.
func gitUncommitted(t *testing.T, repo string) map[string]string {
	t.Helper()
	want := map[string]string{}
	changed := string(gitOut(t, repo, "diff", "HEAD", "--name-only", "--no-renames", "-z"))
	others := string(gitOut(t, repo, "ls-files", "--others", "--exclude-standard", "-z"))
	for _, p := range strings.Split(changed+others, "\x00") {
		if p == "" {
			continue
		}
		want[p] = ""
		if _, err := os.Lstat(filepath.Join(repo, p)); err == nil {
			want[p] = strings.TrimSpace(string(gitOut(t, repo, "hash-object", "--", p)))
		}
	}
	return want
}

// matchesGit reports whether st is ready with exactly git's paths, each
// with git's working-tree blob.
func matchesGit(repo string, want map[string]string) func(protocol.ChangesetState) bool {
	return func(st protocol.ChangesetState) bool {
		if !ready(st) || len(st.Files) != len(want) {
			return false
		}
		for p, oid := range want {
			f := findFile(st, repo, p)
			if f == nil {
				return false
			}
			if oid != "" && (f.Edit.After == nil || f.Edit.After.Content.Nonce != oid) {
				return false
			}
		}
		return true
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestFastPathsAcrossRestart stops the daemon, changes the tree in every
// way its stat comparison must not be fooled by (a checkout, a racily
// clean entry, a new file under a directory whose mtime is put back, a
// same-size replacement that keeps the mtime), and starts it again on the
// same state: the restarted daemon's changeset must be git's.
func TestFastPathsAcrossRestart(t *testing.T) {
	t.Parallel()
	repo := fastPathRepo(t)
	d := startDaemon(t, repo)
	m := subscribeUncommitted(t, d)
	before := gitUncommitted(t, repo)
	m.Wait("ready with git's view before the restart", matchesGit(repo, before))
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	git(t, repo, "checkout", "-q", "other") // m.txt's edit is carried over
	racyEdit(t, repo)
	newFileUnderListedDir(t, repo)
	sameSizeReplacement(t, repo)

	want := gitUncommitted(t, repo)
	for _, p := range []string{"b.txt", "dir/c.txt", "dir/sub/e.txt", "m.txt"} {
		if _, ok := want[p]; !ok {
			t.Fatalf("git does not list %s as changed: %v; the scenario proves nothing", p, sortedKeys(want))
		}
	}
	restarted := startDaemonIn(t, d.StateDir, repo)
	m = subscribeUncommitted(t, restarted)
	m.Wait("ready with git's view after the checkout and the edits: "+strings.Join(sortedKeys(want), " "), matchesGit(repo, want))
}

// TestFastPathsWhileRunning makes the same changes while the daemon runs
// and watches: the edit events and the rescans they cause must end where
// git does.
func TestFastPathsWhileRunning(t *testing.T) {
	t.Parallel()
	repo := fastPathRepo(t)
	d := startDaemon(t, repo)
	m := subscribeUncommitted(t, d)
	m.Wait("ready with git's view", matchesGit(repo, gitUncommitted(t, repo)))

	racyEdit(t, repo)
	newFileUnderListedDir(t, repo)
	sameSizeReplacement(t, repo)
	want := gitUncommitted(t, repo)
	m.Wait("ready with git's view after the edits: "+strings.Join(sortedKeys(want), " "), matchesGit(repo, want))

	git(t, repo, "checkout", "-q", "other")
	want = gitUncommitted(t, repo)
	m.Wait("ready with git's view after the checkout: "+strings.Join(sortedKeys(want), " "), matchesGit(repo, want))
}

// TestLaterSubscribersStartFromTheCurrentState: a second subscriber is
// served the state the first one holds, and one that comes after an edit
// starts from the edited state, not from the one served before it.
func TestLaterSubscribersStartFromTheCurrentState(t *testing.T) {
	t.Parallel()
	repo := fastPathRepo(t)
	d := startDaemon(t, repo)
	first := subscribeUncommitted(t, d)
	held := first.Wait("ready with git's view", matchesGit(repo, gitUncommitted(t, repo)))

	sameState := func(who string, held protocol.ChangesetState) {
		t.Helper()
		m := subscribeUncommitted(t, d)
		got := m.base // the snapshot, before any later action
		if !ready(got) {
			t.Fatalf("%s: snapshot status %q, want ready", who, got.Status)
		}
		a, _ := json.Marshal(got.Files)
		b, _ := json.Marshal(held.Files)
		if string(a) != string(b) {
			t.Errorf("%s: snapshot files differ from the first subscriber's state:\n%s\nwant:\n%s", who, a, b)
		}
	}
	sameState("second subscriber", held)

	writeFile(t, repo, "a.txt", "alpha, edited\n")
	held = first.Wait("the edit", matchesGit(repo, gitUncommitted(t, repo)))
	sameState("subscriber after the edit", held)
}
