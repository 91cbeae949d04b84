package session

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// pathQueries counts the path-scoped computations among queries, and the
// paths they named.
func pathQueries(qs []Query) (n, paths int) {
	for _, q := range qs {
		if q.Paths != nil {
			n++
			paths += len(q.Paths)
		}
	}
	return n, paths
}

// A burst the watcher delivers in several batches is computed once, after
// its trailing window; a save is computed at once, without waiting for
// any window (the clock does not move before it is published).
func TestBurstBatchesAreOneRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		head, work, modified := burstTree(1000, 10)
		r := newRig(t, Options{}, head, work)
		c := newClient("c")
		uri := r.changeset(t, protocol.KindUncommitted, nil)
		c.subscribe(t, r.m, uri)
		awaitCount(t, c, uri, len(modified))

		// A save: published before any time passes.
		start := time.Now()
		n0, _ := pathQueries(r.ws.queriesMade())
		r.ws.editAll(map[string]string{"d11/f00011.go": "package x\n// saved\n"})
		synctest.Wait()
		if n, _ := pathQueries(r.ws.queriesMade()); n != n0+1 {
			t.Fatalf("a save made %d computations before the clock moved, want 1", n-n0)
		}
		awaitCount(t, c, uri, len(modified)+1)
		if d := time.Since(start); d != 0 {
			t.Errorf("a save waited %s", d)
		}

		// A burst in three batches, each within the quiet window of the
		// one before.
		n0, _ = pathQueries(r.ws.queriesMade())
		changed := 0
		for batch := range 3 {
			files := map[string]string{}
			for i := range 2 * burstPaths {
				k := 100 + batch*2*burstPaths + i
				files[fmt.Sprintf("d%02d/f%05d.go", k%50, k)] = "package x\n// burst\n"
			}
			changed += len(files)
			r.ws.editAll(files)
			synctest.Wait()
			if n, _ := pathQueries(r.ws.queriesMade()); n != n0 {
				t.Fatalf("batch %d of the burst was computed before its window ended", batch)
			}
			time.Sleep(burstQuiet / 2)
		}
		awaitCount(t, c, uri, len(modified)+1+changed)
		n, paths := pathQueries(r.ws.queriesMade())
		if n-n0 != 1 || paths < changed {
			t.Errorf("the burst of %d paths in 3 batches made %d computations, want 1 of them all", changed, n-n0)
		}
	})
}
