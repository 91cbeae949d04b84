package snapstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	commitA = "1111111111111111111111111111111111111111"
	commitB = "2222222222222222222222222222222222222222"
)

// baseFiles is the project every Overlay case starts from.
var baseFiles = map[string]file{
	"README":        reg("readme\n"),
	"a/b.txt":       reg("b\n"),
	"a/c.txt":       reg("c\n"),
	"a-b":           reg("sorts before a/\n"),
	"a.b":           reg("sorts before a/ too\n"),
	"a0":            reg("sorts after a/\n"),
	"dir/only.txt":  reg("only\n"),
	"f":             reg("file f\n"),
	"d/x/y.txt":     reg("y\n"),
	"d/z.txt":       reg("z\n"),
	"tool.sh":       exe("#!/bin/sh\n"),
	"link":          sym("README"),
	"vendor/mod":    link(commitA),
	"deep/1/2/3/4":  reg("deep\n"),
	"deep/1/2/keep": reg("keep\n"),
}

func add(p, content string) Change { return Change{Path: p, Content: []byte(content)} }
func addMode(p, content string, m uint32) Change {
	return Change{Path: p, Mode: m, Content: []byte(content)}
}
func del(p string) Change { return Change{Path: p, Delete: true} }

// overlayCases are shared by the empty-base and repository-base tests. A
// change whose OID is "@path" refers to the base's blob at path.
var overlayCases = []struct {
	name    string
	changes []Change
}{
	{"add", []Change{add("a/new.txt", "new\n")}},
	{"add top", []Change{add("zzz", "z\n"), add("0", "zero\n")}},
	{"modify", []Change{add("a/b.txt", "b changed\n")}},
	{"delete", []Change{del("a/c.txt")}},
	{"delete last in dir", []Change{del("dir/only.txt")}},
	{"delete last in nested dir", []Change{del("d/x/y.txt")}},
	{"delete deep chain", []Change{del("deep/1/2/3/4"), del("deep/1/2/keep")}},
	{"delete missing", []Change{del("no/such/file")}},
	{"delete dir", []Change{del("a")}},
	{"nested new dirs", []Change{add("n1/n2/n3/file", "n\n"), add("n1/other", "o\n")}},
	{"file to dir", []Change{add("f/inner.txt", "inner\n")}},
	{"file to deep dir", []Change{add("README/x/y", "y\n")}},
	{"dir to file", []Change{add("d", "d is a file\n")}},
	{"dir to file and back", []Change{add("d", "d is a file\n"), add("d/again", "again\n")}},
	{"symlink", []Change{addMode("ln2", "a/b.txt", ModeSymlink), addMode("a/c.txt", "../README", ModeSymlink)}},
	{"symlink to file", []Change{add("link", "now a file\n")}},
	{"executable", []Change{{Path: "README", Mode: ModeExec, OID: "@README"}, addMode("bin/run", "#!/bin/sh\n", ModeExec)}},
	{"not executable", []Change{{Path: "tool.sh", Mode: ModeFile, OID: "@tool.sh"}}},
	{"gitlink", []Change{{Path: "vendor/mod", Mode: ModeGitlink, OID: commitB}, {Path: "sub/new", Mode: ModeGitlink, OID: commitA}}},
	{"gitlink to file", []Change{add("vendor/mod", "plain\n")}},
	{"file to gitlink", []Change{{Path: "a/b.txt", Mode: ModeGitlink, OID: commitB}}},
	{"sort order", []Change{add("a/b.txt/x", "1\n"), add("a.b/c", "2\n"), add("a=", "3\n"), add("a/b-", "4\n"), add("a/b.t", "5\n")}},
	{"unchanged content", []Change{add("a/b.txt", "b\n")}},
	{"later wins", []Change{add("q/r", "r\n"), del("q"), add("s", "s\n"), del("s/t")}},
	{"delete under a file", []Change{del("f/x"), del("README/a/b"), del("link/x"), del("vendor/mod/x")}},
	{"delete under a new file", []Change{add("d", "file\n"), del("d/z.txt")}},
	{"same path twice", []Change{add("a/b.txt", "one\n"), add("a/b.txt", "two\n")}},
	{"delete everything", []Change{del("README"), del("a"), del("a-b"), del("a.b"), del("a0"), del("dir"), del("f"), del("d"), del("tool.sh"), del("link"), del("vendor"), del("deep")}},
	{"many", []Change{
		add("README", "R\n"), del("a/b.txt"), add("a/d/e/f", "f\n"), del("d/z.txt"),
		add("d/x/w", "w\n"), addMode("deep/1/l", "2/keep", ModeSymlink), add("vendor/mod/x", "x\n"),
	}},
}

// resolveOIDs replaces "@path" OIDs with the base's blob ids.
func resolveOIDs(t *testing.T, repo, base string, changes []Change) []Change {
	out := make([]Change, len(changes))
	for i, c := range changes {
		if strings.HasPrefix(c.OID, "@") {
			c.OID = git(t, repo, nil, "", "rev-parse", base+":"+c.OID[1:])
		}
		out[i] = c
	}
	return out
}

func TestOverlayOnRepoMatchesWriteTree(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo, base := makeRepo(t, baseFiles)
	repoLoose := looseObjects(t, filepath.Join(repo, ".git"))
	t.Run("cases", func(t *testing.T) {
		for _, tc := range overlayCases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				changes := resolveOIDs(t, repo, base, tc.changes)
				s := openStore(t)
				if err := s.AddAlternate(filepath.Join(repo, ".git", "objects")); err != nil {
					t.Fatal(err)
				}
				got, err := s.Overlay(ctx, base, changes)
				if err != nil {
					t.Fatal(err)
				}

				// Nothing of the base was copied: every loose object of
				// the store is one the project does not have.
				stored := looseObjects(t, s.Dir())
				if len(stored) > 0 {
					check := git(t, repo, nil, strings.Join(stored, "\n")+"\n", "cat-file", "--batch-check")
					for _, line := range strings.Split(check, "\n") {
						if !strings.HasSuffix(line, " missing") && !strings.HasPrefix(line, EmptyTree) {
							t.Errorf("store holds an object the alternate has: %s", line)
						}
					}
				}
				if tmp := tmpFiles(t, s.Dir()); len(tmp) != 0 {
					t.Errorf("temporary files left: %v", tmp)
				}
				// The store (with its alternate) has everything the tree
				// needs.
				git(t, s.Dir(), nil, "", "--git-dir="+s.Dir(), "rev-list", "--objects", got)

				want := gitOverlay(t, repo, base, changes)
				if got != want {
					t.Errorf("Overlay = %s, git write-tree = %s\nours:\n%s", got, want,
						git(t, s.Dir(), nil, "", "--git-dir="+s.Dir(), "ls-tree", "-r", "-t", got))
				}
			})
		}
	})
	// The project's object store was never written to.
	if after := looseObjects(t, filepath.Join(repo, ".git")); len(after) != len(repoLoose) {
		t.Errorf("project loose objects: %d before, %d after", len(repoLoose), len(after))
	}
}

func TestOverlayOnEmptyBaseMatchesWriteTree(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	var all []Change
	for p, f := range baseFiles {
		if f.mode == ModeGitlink {
			all = append(all, Change{Path: p, Mode: f.mode, OID: f.content})
		} else {
			all = append(all, Change{Path: p, Mode: f.mode, Content: []byte(f.content)})
		}
	}
	cases := []struct {
		name    string
		changes []Change
	}{
		{"none", nil},
		{"one", []Change{add("x", "x\n")}},
		{"all base files", all},
		{"all then deleted", append(append([]Change{}, all...), del("a"), del("d"), del("deep"))},
		{"all deleted", append(append([]Change{}, all...), del("README"), del("a"), del("a-b"), del("a.b"), del("a0"), del("dir"), del("f"), del("d"), del("tool.sh"), del("link"), del("vendor"), del("deep"))},
		{"empty file", []Change{add("e", ""), {Path: "e2", Content: []byte{}}}},
		{"binary", []Change{add("bin", "\x00\x01\xff\r\n")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := openStore(t)
			repo := t.TempDir()
			git(t, repo, nil, "", "init", "-q")
			want := gitOverlay(t, repo, "", tc.changes)
			for _, base := range []string{"", EmptyTree} {
				got, err := s.Overlay(ctx, base, tc.changes)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("Overlay(%q) = %s, git write-tree = %s", base, got, want)
				}
			}
			git(t, s.Dir(), nil, "", "--git-dir="+s.Dir(), "rev-list", "--objects", want)
			if st := git(t, s.Dir(), nil, "", "--git-dir="+s.Dir(), "fsck", "--no-dangling", "--strict"); st != "" {
				t.Errorf("fsck: %s", st)
			}
		})
	}
}

func TestOverlayRejects(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for _, c := range []Change{
		{Path: ""},
		{Path: "/abs", Content: []byte("x")},
		{Path: "a//b", Content: []byte("x")},
		{Path: "a/", Content: []byte("x")},
		{Path: "a/../b", Content: []byte("x")},
		{Path: "./a", Content: []byte("x")},
		{Path: ".git/config", Content: []byte("x")},
		{Path: "sub/.GIT", Content: []byte("x")},
		{Path: "m", Mode: 0o100664, Content: []byte("x")},
		{Path: "m", Mode: ModeDir, Content: []byte("x")},
		{Path: "g", Mode: ModeGitlink, Content: []byte("x")},
		{Path: "o", OID: "nothex"},
		{Path: "o", OID: "3333333333333333333333333333333333333333"}, // missing blob
	} {
		if tree, err := s.Overlay(ctx, "", []Change{c}); err == nil {
			t.Errorf("Overlay(%+v) = %s, want an error", c, tree)
		}
	}
	if _, err := s.Overlay(ctx, "3333333333333333333333333333333333333333", []Change{add("a", "a")}); err == nil {
		t.Error("Overlay on a missing base succeeded")
	}
	blob, err := s.WriteBlob([]byte("blob"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Overlay(ctx, blob, []Change{add("a", "a")}); err == nil {
		t.Error("Overlay on a blob succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Overlay(cctx, "", []Change{add("a/b", "a")}); err == nil {
		t.Error("Overlay with a cancelled context succeeded")
	}
}

func TestOverlayDoesNotRewriteExistingObjects(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	t1, err := s.Overlay(ctx, "", []Change{add("a/b", "1"), add("c", "2")})
	if err != nil {
		t.Fatal(err)
	}
	before := looseObjects(t, s.Dir())
	t2, err := s.Overlay(ctx, "", []Change{add("a/b", "1"), add("c", "2")})
	if err != nil {
		t.Fatal(err)
	}
	if t1 != t2 {
		t.Fatalf("same content gave %s and %s", t1, t2)
	}
	if t3, err := s.Overlay(ctx, t1, nil); err != nil || t3 != t1 {
		t.Fatalf("Overlay with no changes = %s, %v; want %s", t3, err, t1)
	}
	if after := looseObjects(t, s.Dir()); len(after) != len(before) {
		t.Errorf("loose objects %d -> %d", len(before), len(after))
	}
	for _, id := range before {
		fi, err := os.Stat(filepath.Join(s.Dir(), "objects", id[:2], id[2:]))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o444 {
			t.Errorf("%s has mode %v, want read-only", id, fi.Mode())
		}
	}
}

func TestAddAlternate(t *testing.T) {
	needGit(t)
	repo, base := makeRepo(t, map[string]file{"x": reg("x\n")})
	objects := filepath.Join(repo, ".git", "objects")
	s := openStore(t)
	if s.Has(base) {
		t.Fatal("base visible before AddAlternate")
	}
	if err := s.AddAlternate("relative/objects"); err == nil {
		t.Error("relative alternate accepted")
	}
	if err := s.AddAlternate(filepath.Join(repo, "missing")); err == nil {
		t.Error("missing alternate accepted")
	}
	for range 3 {
		if err := s.AddAlternate(objects); err != nil {
			t.Fatal(err)
		}
		if err := s.AddAlternate(objects + "/"); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(s.Dir(), "objects", "info", "alternates"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), objects+"\n"; got != want {
		t.Errorf("alternates = %q, want %q", got, want)
	}
	if !s.Has(base) {
		t.Error("base not visible after AddAlternate")
	}
	git(t, s.Dir(), nil, "", "--git-dir="+s.Dir(), "cat-file", "-e", base)

	// A reopened store reads the alternates file.
	s2, err := Open(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	e, err := s2.Lookup(context.Background(), base, "x")
	if err != nil || e == nil {
		t.Fatalf("Lookup through reopened store = %v, %v", e, err)
	}
	if b, err := s2.ReadBlob(e.OID); err != nil || string(b) != "x\n" {
		t.Errorf("ReadBlob = %q, %v", b, err)
	}
}

// TestPackedAlternate reads a base whose objects are packed, and keeps
// working after the project repacks (new pack names) underneath the store.
func TestPackedAlternate(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo, base := makeRepo(t, baseFiles)
	git(t, repo, nil, "", "repack", "-a", "-d", "-q")
	if n := len(looseObjects(t, filepath.Join(repo, ".git"))); n != 0 {
		t.Fatalf("%d loose objects after repack", n)
	}
	s := openStore(t)
	if err := s.AddAlternate(filepath.Join(repo, ".git", "objects")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Overlay(ctx, base, []Change{add("a/new", "n\n"), del("d/z.txt")})
	if err != nil {
		t.Fatal(err)
	}
	if want := gitOverlay(t, repo, base, []Change{add("a/new", "n\n"), del("d/z.txt")}); got != want {
		t.Errorf("Overlay = %s, git = %s", got, want)
	}

	// Add a commit and repack everything into a new pack.
	tree2 := indexTree(t, repo, map[string]file{"other": reg("other\n"), "a/b.txt": reg("b\n")})
	git(t, repo, nil, "", "update-ref", "refs/heads/other", git(t, repo, nil, "", "commit-tree", "-m", "2", tree2))
	git(t, repo, nil, "", "repack", "-a", "-d", "-q")
	e, err := s.Lookup(ctx, tree2, "other")
	if err != nil || e == nil {
		t.Fatalf("Lookup after repack = %v, %v", e, err)
	}
	if b, err := s.ReadBlob(e.OID); err != nil || string(b) != "other\n" {
		t.Errorf("ReadBlob after repack = %q, %v", b, err)
	}
	if _, err := s.Overlay(ctx, tree2, []Change{add("other", "changed\n")}); err != nil {
		t.Fatal(err)
	}
}

func TestWriteReadBlob(t *testing.T) {
	s := openStore(t)
	for _, c := range []string{"", "hello\n", strings.Repeat("x", 1<<20)} {
		id, err := s.WriteBlob([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		if !s.Has(id) {
			t.Errorf("Has(%s) = false after WriteBlob", id)
		}
		b, err := s.ReadBlob(id)
		if err != nil || string(b) != c {
			t.Errorf("ReadBlob(%s) = %d bytes, %v", id, len(b), err)
		}
	}
	if id, _ := s.WriteBlob([]byte("hello\n")); id != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Errorf("blob id of hello = %s", id)
	}
	if s.Has("zz") || s.Has("3333333333333333333333333333333333333333") {
		t.Error("Has reports a missing object")
	}
	if !s.Has(EmptyTree) {
		t.Error("Has(EmptyTree) = false")
	}
	tree, err := s.Overlay(context.Background(), "", []Change{add("a", "a")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadBlob(tree); err == nil {
		t.Error("ReadBlob of a tree succeeded")
	}
}

func TestLookup(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	tree, err := s.Overlay(ctx, "", []Change{add("a/b/c", "c"), addMode("l", "a", ModeSymlink), {Path: "g", Mode: ModeGitlink, OID: commitA}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		mode uint32 // 0: absent
	}{
		{"a/b/c", ModeFile}, {"a/b", ModeDir}, {"a", ModeDir}, {"l", ModeSymlink}, {"g", ModeGitlink},
		{"", ModeDir}, {"a/b/c/d", 0}, {"x", 0}, {"a/x", 0}, {"l/x", 0}, {"g/x", 0},
	} {
		e, err := s.Lookup(ctx, tree, tc.path)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", tc.path, err)
		}
		switch {
		case tc.mode == 0 && e != nil:
			t.Errorf("Lookup(%q) = %+v, want nil", tc.path, e)
		case tc.mode != 0 && (e == nil || e.Mode != tc.mode):
			t.Errorf("Lookup(%q) = %+v, want mode %o", tc.path, e, tc.mode)
		}
	}
	if e, _ := s.Lookup(ctx, tree, "g"); e == nil || e.OID != commitA || e.Path != "g" {
		t.Errorf("Lookup(g) = %+v", e)
	}
	if e, err := s.Lookup(ctx, "", "a"); e != nil || err != nil {
		t.Errorf("Lookup in empty tree = %v, %v", e, err)
	}
}

// TestOverlayConcurrent runs many Overlays, DiffTrees and GCs at once and
// checks every result against the same Overlay done alone in a fresh store.
func TestOverlayConcurrent(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	var baseChanges []Change
	for d := range 20 {
		for f := range 10 {
			baseChanges = append(baseChanges, add(fmt.Sprintf("d%02d/f%02d", d, f), fmt.Sprintf("%d/%d\n", d, f)))
		}
	}
	base, err := s.Overlay(ctx, "", baseChanges)
	if err != nil {
		t.Fatal(err)
	}
	changesFor := func(g, i int) []Change {
		return []Change{
			add(fmt.Sprintf("d%02d/f00", (g+i)%20), fmt.Sprintf("shared %d\n", i)),        // same content across goroutines
			add(fmt.Sprintf("d%02d/new%d", g%20, i), fmt.Sprintf("unique %d %d\n", g, i)), // unique content
			del(fmt.Sprintf("d%02d/f01", i%20)),
			add(fmt.Sprintf("n%d/x/y", i%3), "nested\n"),
		}
	}
	const goroutines, iters = 8, 8
	got := make([][]string, goroutines)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines+1)
	for g := range goroutines {
		wg.Go(func() {
			for i := range iters {
				tree, err := s.Overlay(ctx, base, changesFor(g, i))
				if err != nil {
					errs <- err
					return
				}
				if _, err := s.DiffTrees(ctx, base, tree); err != nil {
					errs <- err
					return
				}
				got[g] = append(got[g], tree)
			}
		})
	}
	wg.Go(func() {
		// With the default grace period a concurrent GC deletes nothing
		// that was just written.
		for range 5 {
			if _, err := s.GC(ctx, []string{base}); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	ref := openStore(t)
	if _, err := ref.Overlay(ctx, "", baseChanges); err != nil {
		t.Fatal(err)
	}
	// Read every result back from a fresh Store on the same directory,
	// with an empty cache.
	fresh, err := Open(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for g := range goroutines {
		for i := range iters {
			want, err := ref.Overlay(ctx, base, changesFor(g, i))
			if err != nil {
				t.Fatal(err)
			}
			if got[g][i] != want {
				t.Errorf("goroutine %d iteration %d: %s, want %s", g, i, got[g][i], want)
			}
			if _, err := fresh.DiffTrees(ctx, "", want); err != nil {
				t.Errorf("tree %s unreadable: %v", want, err)
			}
		}
	}
	if len(tmpFiles(t, s.Dir())) != 0 {
		t.Errorf("temporary files left: %v", tmpFiles(t, s.Dir()))
	}
}

// TestOverlayPauses: under WithPause, Overlay calls the pause before
// each object it writes, writes what it would have written, and ends
// with the pause's error, having written nothing after it.
func TestOverlayPauses(t *testing.T) {
	needGit(t)
	changes := []Change{add("a", "a\n"), add("dir/b", "b\n"), add("dir/sub/c", "c\n")}
	s := openStore(t)
	var paused atomic.Int32
	ctx := WithPause(context.Background(), func(context.Context) error {
		paused.Add(1)
		return nil
	})
	got, err := s.Overlay(ctx, "", changes)
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	git(t, repo, nil, "", "init", "-q")
	if want := gitOverlay(t, repo, "", changes); got != want {
		t.Errorf("Overlay = %s, git write-tree = %s", got, want)
	}
	// Three blobs and three trees.
	if n := paused.Load(); n != 6 {
		t.Errorf("paused before %d objects, want 6", n)
	}

	s2 := openStore(t)
	stop := errors.New("stop")
	ctx = WithPause(context.Background(), func(context.Context) error { return stop })
	if _, err := s2.Overlay(ctx, "", changes); !errors.Is(err, stop) {
		t.Fatalf("Overlay with a failing pause: %v, want %v", err, stop)
	}
	if s2.Has(got) {
		t.Errorf("the tree was written although every pause failed")
	}
}
