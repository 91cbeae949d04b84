package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

// layoutCase is a repository laid out as people have them, made with the
// git binary. make returns the directory the session is started on.
type layoutCase struct {
	name string
	make func(t *testing.T) string
	// branch also checks the branch changeset against git, from the merge
	// base of this revision and HEAD.
	branch string
	// live, when set, edits the working tree while subscribed; the
	// changeset must follow git again.
	live func(t *testing.T, dir string)
	// wantSession, when set, is the file set of the session changeset
	// (baseline at start to now) after live.
	wantSession []string
	// check runs extra checks on the ready uncommitted changeset.
	check func(t *testing.T, c *fake.Client, dir, top, uri string, st protocol.ChangesetState)
}

// baseFiles is the committed content most cases start from.
var baseFiles = map[string]string{
	"a.txt":          lines(12, func(i int) string { return "a" + strconv.Itoa(i) }),
	"sub/b.txt":      "b1\nb2\nb3\n",
	"sub/deep/c.txt": "c1\nc2\n",
	"other/d.txt":    "d1\n",
}

// edit makes the usual uncommitted changes below dir: a modification in
// every directory, a deletion, an untracked and a staged new file.
func edit(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, dir, "a.txt", strings.Replace(baseFiles["a.txt"], "a3\n", "A3\nextra\n", 1))
	writeFile(t, dir, "sub/b.txt", "b1\nb2 changed\n")
	writeFile(t, dir, "other/d.txt", "d1\nd2\n")
	remove(t, dir, "sub/deep/c.txt")
	writeFile(t, dir, "sub/new.txt", "new\nfile\n")
	writeFile(t, dir, "other/untracked.txt", "u\n")
	writeFile(t, dir, "sub/staged.txt", "staged\n")
	git(t, dir, "add", "sub/staged.txt")
}

func layoutCases() []layoutCase {
	return []layoutCase{
		{
			name: "subdirectory",
			make: func(t *testing.T) string {
				repo := gitRepo(t, baseFiles)
				edit(t, repo)
				return filepath.Join(repo, "sub")
			},
			check: checkSubdirectory,
			live: func(t *testing.T, dir string) {
				writeFile(t, dir, "live.txt", "live\n")
				writeFile(t, dir, "deep/c.txt", "back\n")
				writeFile(t, dir, "../other/live.txt", "outside\n")
				writeFile(t, dir, "../a.txt", "outside edit\n")
			},
			wantSession: []string{"sub/live.txt", "sub/deep/c.txt"},
		},
		{
			// git sparse-checkout --sparse-index: other/ is one sparse
			// directory entry of the index, and not checked out.
			name: "sparse index",
			make: func(t *testing.T) string {
				repo := gitRepo(t, baseFiles)
				git(t, repo, "sparse-checkout", "set", "--cone", "--sparse-index", "sub")
				writeFile(t, repo, "a.txt", strings.Replace(baseFiles["a.txt"], "a3\n", "A3\nextra\n", 1))
				writeFile(t, repo, "sub/b.txt", "b1\nb2 changed\n")
				remove(t, repo, "sub/deep/c.txt")
				writeFile(t, repo, "sub/new.txt", "new\nfile\n")
				writeFile(t, repo, "sub/staged.txt", "staged\n")
				git(t, repo, "add", "sub/staged.txt")
				return repo
			},
			live: func(t *testing.T, dir string) {
				writeFile(t, dir, "sub/live.txt", "live\n")
				writeFile(t, dir, "sub/deep/c.txt", "back\n")
			},
			wantSession: []string{"sub/live.txt", "sub/deep/c.txt"},
		},
		{
			name: "shared clone",
			make: func(t *testing.T) string {
				src := gitRepo(t, baseFiles)
				dst := filepath.Join(realTemp(t), "clone")
				git(t, src, "clone", "-q", "--shared", src, dst)
				if _, err := os.Stat(filepath.Join(dst, ".git", "objects", "info", "alternates")); err != nil {
					t.Fatal(err)
				}
				git(t, dst, "checkout", "-q", "-b", "feature")
				writeFile(t, dst, "feature.txt", "f\n")
				commitAll(t, dst, "feature")
				edit(t, dst)
				return dst
			},
			branch: "origin/main",
			// The baseline snapshot reads HEAD's tree through the
			// alternates too: nothing changed since the start.
			wantSession: []string{},
		},
		{
			name: "reference clone",
			make: func(t *testing.T) string {
				src := gitRepo(t, baseFiles)
				dst := filepath.Join(realTemp(t), "clone")
				git(t, src, "clone", "-q", "--reference", src, "file://"+src, dst)
				edit(t, dst)
				return dst
			},
			branch: "origin/main",
		},
		{
			name: "linked worktree",
			make: func(t *testing.T) string {
				repo := gitRepo(t, baseFiles)
				wt := filepath.Join(realTemp(t), "wt")
				git(t, repo, "worktree", "add", "-q", "-b", "feat", wt)
				writeFile(t, wt, "feat.txt", "feat\n")
				commitAll(t, wt, "feat")
				edit(t, wt)
				// The main worktree's own edits must not show.
				writeFile(t, repo, "a.txt", "main worktree\n")
				return wt
			},
			branch: "main",
		},
		{
			name: "separate git dir",
			make: func(t *testing.T) string {
				dir := realTemp(t)
				repo, gd := filepath.Join(dir, "work"), filepath.Join(dir, "meta.git")
				git(t, dir, "init", "-q", "-b", "main", "--separate-git-dir", gd, repo)
				for name, content := range baseFiles {
					writeFile(t, repo, name, content)
				}
				commitAll(t, repo, "initial")
				edit(t, repo)
				return repo
			},
		},
		{
			name: "after gc aggressive",
			make: func(t *testing.T) string {
				repo := gitRepo(t, baseFiles)
				writeFile(t, repo, "a.txt", baseFiles["a.txt"]+"more\n")
				commitAll(t, repo, "second")
				git(t, repo, "gc", "-q", "--aggressive", "--prune=now")
				if m, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "*.pack")); len(m) == 0 {
					t.Fatal("gc left no pack")
				}
				edit(t, repo)
				return repo
			},
		},
		{
			name: "feature.manyFiles",
			make: func(t *testing.T) string {
				repo := gitRepo(t, baseFiles)
				git(t, repo, "config", "feature.manyFiles", "true")
				git(t, repo, "update-index", "--index-version", "4", "--untracked-cache")
				edit(t, repo)
				git(t, repo, "status", "--porcelain") // fills the untracked cache
				if v := readIndexVersion(t, repo); v != 4 {
					t.Fatalf("index version %d, want 4", v)
				}
				return repo
			},
		},
		{
			name: "split index",
			make: func(t *testing.T) string {
				repo := gitRepo(t, baseFiles)
				git(t, repo, "config", "core.splitIndex", "true")
				git(t, repo, "update-index", "--split-index")
				edit(t, repo)
				if m, _ := filepath.Glob(filepath.Join(repo, ".git", "sharedindex.*")); len(m) == 0 {
					t.Fatal("no shared index")
				}
				return repo
			},
		},
		{
			name: "unborn branch",
			make: func(t *testing.T) string {
				repo := realTemp(t)
				git(t, repo, "init", "-q", "-b", "main")
				writeFile(t, repo, "staged.txt", "s\n")
				git(t, repo, "add", "staged.txt")
				writeFile(t, repo, "sub/untracked.txt", "u\nv\n")
				return repo
			},
		},
		{
			name: "detached HEAD",
			make: func(t *testing.T) string {
				repo := gitRepo(t, baseFiles)
				writeFile(t, repo, "a.txt", "later\n")
				commitAll(t, repo, "second")
				git(t, repo, "checkout", "-q", "--detach", "HEAD~1")
				edit(t, repo)
				return repo
			},
		},
		{
			name: "merge in conflict",
			make: func(t *testing.T) string {
				repo := gitRepo(t, baseFiles)
				git(t, repo, "checkout", "-q", "-b", "other")
				writeFile(t, repo, "sub/b.txt", "b1\nother\nb3\n")
				writeFile(t, repo, "other/d.txt", "d1 from other\n")
				commitAll(t, repo, "other")
				git(t, repo, "checkout", "-q", "main")
				writeFile(t, repo, "sub/b.txt", "b1\nmain\nb3\n")
				commitAll(t, repo, "main")
				gitMayFail(t, repo, "merge", "-q", "other")
				if !strings.Contains(git(t, repo, "status", "--porcelain"), "UU sub/b.txt") {
					t.Fatal("the merge did not conflict")
				}
				writeFile(t, repo, "untracked.txt", "u\n")
				return repo
			},
		},
		{
			name: "submodule",
			make: func(t *testing.T) string {
				lib := gitRepo(t, map[string]string{"lib.go": "package lib\n"})
				repo := gitRepo(t, baseFiles)
				git(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib")
				commitAll(t, repo, "submodule")
				sub := filepath.Join(repo, "lib")
				writeFile(t, sub, "lib.go", "package lib\n\nconst V = 2\n")
				commitAll(t, sub, "v2")
				writeFile(t, repo, "a.txt", "super edit\n")
				return repo
			},
		},
		{
			name: "changed symlink",
			make: func(t *testing.T) string {
				repo := gitRepo(t, baseFiles)
				symlink(t, repo, "a.txt", "link")
				symlink(t, repo, "sub/b.txt", "sub-link")
				commitAll(t, repo, "links")
				remove(t, repo, "link")
				symlink(t, repo, "other/d.txt", "link")
				remove(t, repo, "sub-link")
				writeFile(t, repo, "sub-link", "now a file\n")
				symlink(t, repo, "sub", "dir-link")
				return repo
			},
			check: checkSymlinks,
		},
	}
}

// TestRepositoryLayoutsEndToEnd runs the daemon on each layout and checks
// that the uncommitted changeset is git diff HEAD --numstat plus the
// untracked files, file by file, with the counts.
func TestRepositoryLayoutsEndToEnd(t *testing.T) {
	for _, lc := range layoutCases() {
		t.Run(lc.name, func(t *testing.T) {
			t.Parallel()
			dir := lc.make(t)
			top := strings.TrimSpace(git(t, dir, "rev-parse", "--show-toplevel"))
			d := startDaemon(t, dir)
			c := d.client(t, "ide")
			sum := onlySession(t, c)
			cat := catalogue(t, c, sum.Resource)
			want := gitExpect(t, dir, "")
			m, uri := subscribeKind(t, c, cat, "uncommitted")
			st := waitFiles(m, top, want)
			checkCounts(t, top, st, want)
			checkSidesReadable(t, c, top, st)
			if lc.check != nil {
				lc.check(t, c, dir, top, uri, st)
			}
			if lc.live != nil {
				lc.live(t, dir)
				want := gitExpect(t, dir, "")
				st := waitFiles(m, top, want)
				checkCounts(t, top, st, want)
			}
			if lc.wantSession != nil {
				want := map[string]numstat{}
				for _, p := range lc.wantSession {
					want[p] = numstat{added: airLines(diskContent(t, top, p))}
				}
				m, _ := subscribeKind(t, c, cat, "session")
				checkCounts(t, top, waitFiles(m, top, want), want)
			}
			if lc.branch != "" {
				base := strings.TrimSpace(git(t, dir, "merge-base", lc.branch, "HEAD"))
				want := gitExpect(t, dir, base)
				m, _ := subscribeKind(t, c, cat, "branch")
				checkCounts(t, top, waitFiles(m, top, want), want)
			}
		})
	}
}

// numstat is git's count of one file; binary files have neither.
type numstat struct {
	added, removed int
	binary         bool
}

// gitExpect is what git says the changeset of dir holds: git diff <base>
// --numstat -- . run in dir (base "" is HEAD, or the empty tree on an
// unborn branch), plus the untracked files under dir, counted as git
// counts a creation. Keys are repository-relative paths.
func gitExpect(t *testing.T, dir, base string) map[string]numstat {
	t.Helper()
	if base == "" {
		base = "HEAD"
		if _, err := gitTry(dir, "rev-parse", "-q", "--verify", "HEAD"); err != nil {
			base = emptyTree
		}
	}
	out := git(t, dir, "-c", "core.quotepath=false", "diff", base, "--numstat", "--no-renames", "-z", "--", ".")
	want := map[string]numstat{}
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\t", 3)
		if len(f) != 3 {
			t.Fatalf("numstat record %q", rec)
		}
		if f[0] == "-" {
			want[f[2]] = numstat{binary: true}
			continue
		}
		a, _ := strconv.Atoi(f[0])
		r, _ := strconv.Atoi(f[1])
		want[f[2]] = numstat{added: a, removed: r}
	}
	top := strings.TrimSpace(git(t, dir, "rev-parse", "--show-toplevel"))
	for _, p := range strings.Split(git(t, dir, "ls-files", "--others", "--exclude-standard", "--full-name", "-z"), "\x00") {
		if p == "" {
			continue
		}
		b := diskContent(t, top, p)
		if bytes.IndexByte(b, 0) >= 0 {
			want[p] = numstat{binary: true}
		} else {
			want[p] = numstat{added: airLines(b)}
		}
	}
	return want
}

// gitOutErr runs git in dir and returns its stdout.
func gitOutErr(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	return cmd.Output()
}

func gitTry(dir string, args ...string) (string, error) {
	out, err := gitOutErr(dir, args...)
	return string(out), err
}

// gitMayFail runs git and ignores its exit status (a merge that
// conflicts).
func gitMayFail(t *testing.T, dir string, args ...string) {
	t.Helper()
	_, _ = gitOutErr(dir, append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
}

// subscribeKind subscribes to the session's changeset of kind.
func subscribeKind(t *testing.T, c *fake.Client, cat map[string]protocol.Changeset, kind string) (*changesetMirror, string) {
	t.Helper()
	cs, ok := cat[kind]
	if !ok {
		t.Fatalf("no %s changeset in the catalogue", kind)
	}
	uri := expand(t, cs.URITemplate, nil)
	return mirrorChangeset(t, c, uri), uri
}

// waitFiles waits until the changeset is ready with exactly the files of
// want.
func waitFiles(m *changesetMirror, top string, want map[string]numstat) protocol.ChangesetState {
	m.t.Helper()
	var ids []string
	for p := range want {
		ids = append(ids, fileURI(top, p))
	}
	return waitIDs(m, ids)
}

// checkCounts compares every file's counts with git's.
func checkCounts(t *testing.T, top string, st protocol.ChangesetState, want map[string]numstat) {
	t.Helper()
	for p, w := range want {
		f := findFile(st, top, p)
		if f == nil {
			t.Errorf("%s: missing", p)
			continue
		}
		d := f.Edit.Diff
		if w.binary {
			if d != nil {
				t.Errorf("%s: binary for git, counts %+v here", p, d)
			}
			continue
		}
		if d == nil || d.Added == nil || d.Removed == nil {
			t.Errorf("%s: no counts; git numstat %d %d", p, w.added, w.removed)
			continue
		}
		if *d.Added != w.added || *d.Removed != w.removed {
			t.Errorf("%s: counts +%d -%d, git numstat %d %d", p, *d.Added, *d.Removed, w.added, w.removed)
		}
	}
}

// checkSidesReadable reads both sides of every file: the before side is
// git's blob at the base, the after side what is on disk (a symbolic
// link's target, a submodule's side is not read).
func checkSidesReadable(t *testing.T, c *fake.Client, top string, st protocol.ChangesetState) {
	t.Helper()
	for _, f := range st.Files {
		if metaString(f.Meta, "changesetd", "fileType") == "submodule" {
			continue
		}
		rel := strings.TrimPrefix(f.ID, fileURI(top, ""))
		if b := f.Edit.Before; b != nil {
			got, err := readResource(t, c, b.Content.URI)
			want := gitOut(t, top, "cat-file", "blob", metaString(f.Meta, "changesetd", "oldBlob"))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: before side %s = %q, %v; want %q", rel, b.Content.URI, got, err, want)
			}
		}
		if a := f.Edit.After; a != nil {
			got, err := readResource(t, c, a.Content.URI)
			want := diskContent(t, top, rel)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: after side %s = %q, %v; want %q", rel, a.Content.URI, got, err, want)
			}
		}
	}
}

// checkSubdirectory: a session on repo/sub lists only files below sub,
// with URIs from the repository's top, and cannot reach the rest.
func checkSubdirectory(t *testing.T, c *fake.Client, dir, top, uri string, st protocol.ChangesetState) {
	t.Helper()
	if filepath.Base(dir) != "sub" || filepath.Dir(dir) != top {
		t.Fatalf("session dir %s, top %s", dir, top)
	}
	for _, f := range st.Files {
		if !strings.HasPrefix(f.ID, fileURI(top, "sub/")) {
			t.Errorf("file outside the session's directory: %s", f.ID)
		}
	}
	for _, p := range []string{"sub/b.txt", "sub/new.txt", "sub/staged.txt", "sub/deep/c.txt"} {
		if findFile(st, top, p) == nil {
			t.Errorf("%s missing", p)
		}
	}
	// The repository's other files are not served.
	if _, err := readResource(t, c, fileURI(top, "a.txt")); err == nil {
		t.Errorf("resourceRead of a file outside the session's directory succeeded")
	}
	// An operation on a file outside is refused.
	if _, err := invokeOn(t, c, uri, "revert", map[string]any{"resource": fileURI(top, "a.txt")}, nil); err == nil {
		t.Errorf("revert of a file outside the session's directory succeeded")
	}
	if !strings.Contains(git(t, top, "diff", "--stat", "--", "a.txt"), "a.txt") {
		t.Errorf("a.txt outside the session was reverted")
	}
}

// checkSymlinks: both sides of a retargeted link are the link targets,
// as git diffs them, and a link turned into a file is a type change.
func checkSymlinks(t *testing.T, c *fake.Client, dir, top, uri string, st protocol.ChangesetState) {
	t.Helper()
	f := findFile(st, top, "link")
	if f == nil || f.Edit.Before == nil || f.Edit.After == nil {
		t.Fatalf("link: %+v", f)
	}
	for _, side := range []struct {
		name, uri, want string
	}{{"before", f.Edit.Before.Content.URI, "a.txt"}, {"after", f.Edit.After.Content.URI, "other/d.txt"}} {
		got, err := readResource(t, c, side.uri)
		if err != nil || string(got) != side.want {
			t.Errorf("link %s side = %q, %v; want the target %q", side.name, got, err, side.want)
		}
	}
	if ct := f.Edit.After.Content.ContentType; ct != "inode/symlink" {
		t.Errorf("link after side content type %q", ct)
	}
	patch := filePatch(t, c, f)
	gitPatch := git(t, top, "diff", "HEAD", "--", "link")
	for _, l := range []string{"-a.txt", "+other/d.txt", "\\ No newline at end of file"} {
		if !strings.Contains(patch, l+"\n") || !strings.Contains(gitPatch, l+"\n") {
			t.Errorf("link patch lacks %q:\nours:\n%s\ngit:\n%s", l, patch, gitPatch)
		}
	}
}

func realTemp(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	return d
}

func readIndexVersion(t *testing.T, repo string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	if err != nil || len(b) < 8 {
		t.Fatalf("read index: %v", err)
	}
	return int(b[7])
}
