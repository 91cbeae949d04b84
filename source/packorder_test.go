package source

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/session"
)

// TestDiffStreamInAnyOrder: whatever order the items are read in (runs
// of a permutation over the cores), each is loaded once and the files
// come out in the items' order, as they do without an order.
func TestDiffStreamInAnyOrder(t *testing.T) {
	for _, n := range []int{1, 7, 8, 20, 33, 200} {
		items := make([]scm.Change, n)
		for i := range items {
			p := fmt.Sprintf("d/f%03d.txt", i)
			items[i] = scm.Change{Path: p, Kind: scm.Modified,
				Head: &scm.FileState{Path: p, Mode: changeset.ModeRegular, OID: fmt.Sprintf("%040x", i+1), Size: 6},
				Work: &scm.FileState{Path: p, Mode: changeset.ModeRegular, Size: 6}}
		}
		var mu sync.Mutex
		loads := map[string]int{}
		load := func(c scm.Change) ([2]*changeset.Side, error) {
			mu.Lock()
			loads[c.Path]++
			mu.Unlock()
			return [2]*changeset.Side{
				{Path: c.Path, Mode: changeset.ModeRegular, Content: []byte("old " + c.Path + "\n")},
				{Path: c.Path, Mode: changeset.ModeRegular, Content: []byte("new " + c.Path + "\n")},
			}, nil
		}
		order := rand.New(rand.NewPCG(uint64(n), 9)).Perm(n)
		q := session.Query{View: protocol.KindUncommitted}
		for _, o := range [][]int{nil, order} {
			clear(loads)
			files, rest, err := diffStream(context.Background(), "/r", items, o, load, q, nil, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(rest) != 0 || len(files) != n {
				t.Fatalf("n=%d order=%v: %d files and %d left, want %d and 0", n, o != nil, len(files), len(rest), n)
			}
			for i, f := range files {
				if f.Path() != items[i].Path || f.Added != 1 || f.Removed != 1 {
					t.Fatalf("n=%d order=%v: file %d is %s +%d -%d, want %s +1 -1", n, o != nil, i, f.Path(), f.Added, f.Removed, items[i].Path)
				}
				if loads[items[i].Path] != 1 {
					t.Fatalf("n=%d order=%v: %s loaded %d times", n, o != nil, items[i].Path, loads[items[i].Path])
				}
			}
		}
	}
}
