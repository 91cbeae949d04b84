package session

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedPathsNameWhatASortWould: the confirmations' file names, found
// in one pass without sorting every path, are those a sort of them all
// would name, for sets smaller and larger than what a confirmation lists,
// with repeated paths among them.
func TestSortedPathsNameWhatASortWould(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, maxNamed - 1, maxNamed, maxNamed + 1, 500} {
		cs := &csChannel{origin: map[string]fileOrigin{}}
		var all, created []string
		for i := range n {
			p := fmt.Sprintf("dir%d/f%d.go", rng.IntN(5), rng.IntN(n+1))
			o := fileOrigin{to: &FileVersion{Path: p}}
			if i%3 == 0 {
				o.from = &FileVersion{Path: p}
			} else {
				created = append(created, p)
			}
			all = append(all, p)
			cs.origin[fmt.Sprintf("file:///r/%d", i)] = o
		}
		slices.Sort(all)
		slices.Sort(created)
		if got, want := cs.sortedPaths(func(fileOrigin) bool { return true }), nameList(all); got.String() != want || got.n != len(all) {
			t.Errorf("%d files: %q (%d), want %q (%d)", n, got, got.n, want, len(all))
		}
		if got, want := cs.sortedPaths(func(o fileOrigin) bool { return o.from == nil }), nameList(created); got.String() != want || got.n != len(created) {
			t.Errorf("%d files, the created: %q (%d), want %q (%d)", n, got, got.n, want, len(created))
		}
	}
}
