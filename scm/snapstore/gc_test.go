package snapstore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

func mustHash(s string) plumbing.Hash {
	h, ok := parseOID(s)
	if !ok {
		panic("bad id " + s)
	}
	return h
}

func removeFile(name string) error { return os.Remove(name) }

// reachableLoose returns the loose objects of s reachable from tree.
func reachableLoose(t *testing.T, s *Store, tree string) []string {
	t.Helper()
	reach := map[plumbing.Hash]bool{}
	if err := s.mark(context.Background(), mustHash(tree), reach); err != nil {
		t.Fatal(err)
	}
	var out []string
	for h := range reach {
		if _, err := os.Stat(s.own.loosePath(h)); err == nil {
			out = append(out, h.String())
		}
	}
	slices.Sort(out)
	return out
}

func TestGC(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	t1, err := s.Overlay(ctx, "", []Change{add("a", "1"), add("d/b", "2"), add("d/e/f", "3")})
	if err != nil {
		t.Fatal(err)
	}
	t2, err := s.Overlay(ctx, t1, []Change{add("a", "changed")})
	if err != nil {
		t.Fatal(err)
	}
	t3, err := s.Overlay(ctx, "", []Change{add("z", "9")})
	if err != nil {
		t.Fatal(err)
	}
	all := looseObjects(t, s.Dir())

	// Within the grace period nothing goes.
	if n, err := s.GC(ctx, nil); err != nil || n != 0 {
		t.Fatalf("GC with grace = %d, %v", n, err)
	}
	s.GCGrace = 0

	// A missing kept tree aborts the GC.
	if _, err := s.GC(ctx, []string{"3333333333333333333333333333333333333333"}); err == nil {
		t.Error("GC with a missing kept tree succeeded")
	}
	if got := looseObjects(t, s.Dir()); len(got) != len(all) {
		t.Fatalf("failed GC deleted objects: %d -> %d", len(all), len(got))
	}

	want := reachableLoose(t, s, t2)
	// A leftover temporary file from a crashed writer.
	tmp := filepath.Join(s.Dir(), "objects", "ab", "tmp_obj_crashed")
	os.MkdirAll(filepath.Dir(tmp), 0o755)
	if err := os.WriteFile(tmp, []byte("partial"), 0o444); err != nil {
		t.Fatal(err)
	}
	n, err := s.GC(ctx, []string{t2, EmptyTree})
	if err != nil {
		t.Fatal(err)
	}
	got := looseObjects(t, s.Dir())
	if !slices.Equal(got, want) {
		t.Errorf("after GC: %v, want %v", got, want)
	}
	if n != len(all)-len(want) {
		t.Errorf("GC removed %d, want %d", n, len(all)-len(want))
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary file survived GC: %v", err)
	}
	// t1's root, blob "1" and t3 are gone; t2 reads back whole.
	for _, id := range []string{t1, t3} {
		if s.Has(id) {
			t.Errorf("%s survived GC", id)
		}
	}
	fresh, err := Open(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	ds, err := fresh.DiffTrees(ctx, "", t2)
	if err != nil || len(ds) != 3 {
		t.Fatalf("reading %s back: %d diffs, %v", t2, len(ds), err)
	}
	for _, d := range ds {
		if _, err := fresh.ReadBlob(d.New.OID); err != nil {
			t.Error(err)
		}
	}
	if _, err := gitErrIfPresent(s.Dir(), "rev-list", "--objects", t2); err != nil {
		t.Error(err)
	}

	// Keeping nothing removes everything.
	if _, err := s.GC(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := looseObjects(t, s.Dir()); len(got) != 0 {
		t.Errorf("objects left after GC(nil): %v", got)
	}
	// The cache forgot the deleted trees.
	if _, err := s.Overlay(ctx, t2, []Change{add("q", "q")}); err == nil {
		t.Error("Overlay on a collected tree succeeded")
	}
}

// gitErrIfPresent runs git on the store when git is installed.
func gitErrIfPresent(gitDir string, args ...string) (string, error) {
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		if _, err := os.Stat("/usr/local/bin/git"); err != nil {
			return "", nil
		}
	}
	return gitErr(gitDir, nil, "", append([]string{"--git-dir=" + gitDir}, args...)...)
}

func TestGCWithAlternate(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo, base := makeRepo(t, baseFiles)
	repoLoose := looseObjects(t, filepath.Join(repo, ".git"))
	s := openStore(t)
	s.GCGrace = 0
	if err := s.AddAlternate(filepath.Join(repo, ".git", "objects")); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Overlay(ctx, base, []Change{add("a/new", "n"), add("d/x/y.txt", "y2"), del("f")})
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Overlay(ctx, base, []Change{add("README", "other")})
	if err != nil {
		t.Fatal(err)
	}
	ours := looseObjects(t, s.Dir())
	n, err := s.GC(ctx, []string{snap, base})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 { // other's root tree and its README blob
		t.Errorf("GC removed %d, want 2", n)
	}
	if s.Has(other) {
		t.Error("unkept snapshot survived")
	}
	if got := looseObjects(t, s.Dir()); len(got) != len(ours)-2 {
		t.Errorf("store has %d objects, want %d", len(got), len(ours)-2)
	}
	git(t, s.Dir(), nil, "", "--git-dir="+s.Dir(), "rev-list", "--objects", snap)
	if st := git(t, s.Dir(), nil, "", "--git-dir="+s.Dir(), "fsck", "--connectivity-only", "--no-dangling"); st != "" {
		t.Errorf("fsck: %s", st)
	}
	if _, err := s.GC(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := looseObjects(t, s.Dir()); len(got) != 0 {
		t.Errorf("store objects left: %v", got)
	}
	if got := looseObjects(t, filepath.Join(repo, ".git")); !slices.Equal(got, repoLoose) {
		t.Errorf("GC touched the alternate: %d -> %d objects", len(repoLoose), len(got))
	}
	if !s.Has(base) {
		t.Error("base lost")
	}
}

// TestGCSparesReusedObjects: an old unreachable object that a new Overlay
// reuses gets a fresh mtime, so the next GC keeps it.
func TestGCSparesReusedObjects(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	t1, err := s.Overlay(ctx, "", []Change{add("a", "reused")})
	if err != nil {
		t.Fatal(err)
	}
	// Age every object by two hours.
	old := time.Now().Add(-2 * time.Hour)
	for _, id := range looseObjects(t, s.Dir()) {
		if err := os.Chtimes(s.own.loosePath(mustHash(id)), old, old); err != nil {
			t.Fatal(err)
		}
	}
	t2, err := s.Overlay(ctx, "", []Change{add("a", "reused")})
	if err != nil || t2 != t1 {
		t.Fatalf("Overlay = %s, %v", t2, err)
	}
	if n, err := s.GC(ctx, nil); err != nil || n != 0 {
		t.Errorf("GC = %d, %v; want the reused objects kept", n, err)
	}
}
