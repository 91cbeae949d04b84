package changeset

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A diff's hunks hold only their own lines: the diff cache and the
// last-known view keep hunks long after the sides are let go, and a hunk
// line that pointed into its side's text kept the whole file alive (a
// thousand hunks of a 6 MiB file kept 12 MiB).
func TestHunksDoNotKeepTheSides(t *testing.T) {
	side := func(edited bool) *Side {
		var b strings.Builder
		for i := 0; b.Len() < 6<<20; i++ {
			mark := "same"
			if edited && i%5000 == 0 {
				mark = "edit"
			}
			fmt.Fprintf(&b, "line %08d %s ..........................................\n", i, mark)
		}
		return &Side{Path: "f.txt", Mode: 0o100644, Content: []byte(b.String())}
	}
	old, new := side(false), side(true)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := Compare(old, new, Options{})
	hunks := r.Hunks
	if len(hunks) < 10 {
		t.Fatalf("%d hunks, want one per edit", len(hunks))
	}
	r, old, new = Result{}, nil, nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The sides (12 MiB) were allocated before and are garbage now: what
	// is still held beyond the start is the hunks.
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc) + 12<<20
	if held > 4<<20 {
		t.Errorf("the hunks of one file keep %d MiB alive, want their own lines only", held>>20)
	}
	runtime.KeepAlive(hunks)
}
