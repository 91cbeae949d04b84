package snapstore

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// age sets the mtime of every loose object of s an hour and a minute
// back, past the default grace period.
func age(t *testing.T, s *Store) {
	t.Helper()
	old := time.Now().Add(-DefaultGCGrace - time.Minute)
	for _, oid := range looseObjects(t, s.Dir()) {
		p := s.own.loosePath(mustHash(oid))
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// gcDuringReuse runs GC (keeping nothing) from inside the first reuse
// check of s, and returns once GC has either finished or found the
// writer holding the lock and started waiting; wait waits for it.
func gcDuringReuse(t *testing.T, s *Store) (wait func()) {
	var once sync.Once
	var wg sync.WaitGroup
	waiting := make(chan struct{})
	s.gcWaits = func() { close(waiting) }
	s.afterReuseCheck = func(plumbing.Hash) {
		once.Do(func() {
			done := make(chan struct{})
			wg.Go(func() {
				defer close(done)
				if _, err := s.GC(context.Background(), nil); err != nil {
					t.Error(err)
				}
			})
			select {
			case <-done:
			case <-waiting:
			}
		})
	}
	return wg.Wait
}

// TestReuseSurvivesGC: a session disposed of (its snapshot no longer
// kept) and recreated on the same directory reuses the old snapshot's
// blob by id; a GC that runs between the reuse's existence check and its
// use must not delete what the new snapshot points at.
func TestReuseSurvivesGC(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	old, err := s.Overlay(ctx, "", []Change{add("a.txt", "baseline content\n")})
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Lookup(ctx, old, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	age(t, s)
	wait := gcDuringReuse(t, s)
	tree, err := s.Overlay(ctx, "", []Change{{Path: "b/a.txt", OID: e.OID}})
	wait()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Has(e.OID) {
		t.Fatalf("GC deleted blob %s, which new snapshot %s points at", e.OID, tree)
	}
	if _, err := s.ReadBlob(e.OID); err != nil {
		t.Fatal(err)
	}
}

// TestReuseBaseSurvivesGC: an Overlay with no changes returns its base,
// and one built on an older snapshot keeps that snapshot's subtrees by
// id; both are reuses, and a GC right after (before the caller records
// the result as kept) must leave every object the result reaches.
func TestReuseBaseSurvivesGC(t *testing.T) {
	ctx := context.Background()
	for _, changes := range [][]Change{nil, {add("top.txt", "new\n")}} {
		s := openStore(t)
		old, err := s.Overlay(ctx, "", []Change{add("d/sub/f.txt", "f\n"), add("d/g.txt", "g\n")})
		if err != nil {
			t.Fatal(err)
		}
		age(t, s)
		wait := gcDuringReuse(t, s)
		tree, err := s.Overlay(ctx, old, changes)
		wait()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"d/sub/f.txt", "d/g.txt"} {
			e, err := s.Lookup(ctx, tree, p)
			if err != nil {
				t.Fatalf("%d changes: %s lost from %s: %v", len(changes), p, tree, err)
			}
			if _, err := s.ReadBlob(e.OID); err != nil {
				t.Fatalf("%d changes: %s: %v", len(changes), p, err)
			}
		}
		// A second GC, still keeping nothing, spares the young result
		// and all it reaches.
		s.afterReuseCheck = nil
		if _, err := s.GC(ctx, nil); err != nil {
			t.Fatal(err)
		}
		want := 5 // the root, d, d/sub and the two blobs
		if len(changes) > 0 {
			want++ // top.txt
		}
		if got := len(reachableLoose(t, s, tree)); got != want {
			t.Errorf("%d loose objects reachable from %s after GC, want %d", got, tree, want)
		}
	}
}

// TestGCYoungTreeMissingSubtree: a young tree whose subtree is missing
// (an operation that failed halfway) neither stops GC nor keeps it from
// marking the rest of that tree.
func TestGCYoungTreeMissingSubtree(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	tree, err := s.Overlay(ctx, "", []Change{add("gone/f.txt", "f\n"), add("kept/g.txt", "g\n")})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := s.Lookup(ctx, tree, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.own.loosePath(mustHash(gone.OID))); err != nil {
		t.Fatal(err)
	}
	s.trees.remove(mustHash(gone.OID))
	kept, err := s.Lookup(ctx, tree, "kept/g.txt")
	if err != nil {
		t.Fatal(err)
	}
	age(t, s)
	now := time.Now()
	if err := os.Chtimes(s.own.loosePath(mustHash(tree)), now, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(ctx, nil); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if !s.Has(kept.OID) {
		t.Errorf("GC deleted %s, which a young tree reaches", kept.OID)
	}
}
