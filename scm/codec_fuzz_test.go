package scm

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// seedIndexes are small indexes of each version with the flags and
// extensions the codec keeps, for the fuzz seeds.
func seedIndexes(t testing.TB) [][]byte {
	now := time.Unix(1700000000, 123456789)
	mk := func() []*index.Entry {
		return []*index.Entry{
			{Name: "a.txt", Mode: filemode.Regular, Hash: plumbing.NewHash("78981922613b2afb6025042ff6bd878ac1994e85"), ModifiedAt: now, CreatedAt: now, Size: 2},
			{Name: "dir/b.txt", Mode: filemode.Executable, Hash: plumbing.NewHash("ba2906d0666cf726c7eaadd2cd3db615dedfdf3a"), SkipWorktree: true},
			{Name: "dir/conflict", Mode: filemode.Regular, Stage: 1},
			{Name: "dir/conflict", Mode: filemode.Regular, Stage: 2},
			{Name: "dir/ita", Mode: filemode.Regular, IntentToAdd: true},
			{Name: "dir/sub/c", Mode: filemode.Symlink},
		}
	}
	tree := &treeNode{count: -1, down: []*treeNode{
		{name: "dir", count: -1, down: []*treeNode{{name: "sub", count: 1, oid: plumbing.NewHash("2299c37978265a95cbe835a4b0f0bbf15aad5549")}}},
	}}
	var out [][]byte
	for _, v := range []uint32{2, 3, 4} {
		es := mk()
		if v == 2 {
			es = []*index.Entry{es[0], es[2], es[5]}
		}
		av := map[*index.Entry]bool{es[0]: true}
		exts := []extension{{"TREE", encodeCacheTree(tree)}, {"REUC", []byte("a.txt\x00100644\x00100644\x000\x00" + string(make([]byte, 40)))}}
		b, err := encodeIndex(v, es, av, exts)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzIndexDecode: whatever decodes encodes, and decodes again to the
// same entries, bits and extensions; encoding is then stable.
func FuzzIndexDecode(f *testing.F) {
	for _, b := range seedIndexes(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := decodeIndex(b, func(string) ([]byte, error) { return nil, errors.New("no shared index") })
		if err != nil {
			return
		}
		if x.split {
			return // a link without a shared index is written back whole, without it
		}
		exts := x.exts
		b1, err := encodeIndex(x.version, x.entries, x.assumeValid, exts)
		if err != nil {
			// Only what git cannot write is refused: extended flags in
			// version 2 do not decode, entries out of order do.
			for i := 1; i < len(x.entries); i++ {
				if compareEntries(x.entries[i-1], x.entries[i]) > 0 {
					return
				}
			}
			t.Fatalf("decoded index does not encode: %v", err)
		}
		y, err := decodeIndex(b1, nil)
		if err != nil {
			t.Fatalf("encoded index does not decode: %v", err)
		}
		if got, want := debugView(y), debugView(x); got != want {
			t.Fatalf("round trip changed the entries:\n%s\nwant\n%s", got, want)
		}
		for i := range x.entries {
			if x.entries[i].Name != y.entries[i].Name || x.entries[i].Hash != y.entries[i].Hash || x.entries[i].Mode != y.entries[i].Mode {
				t.Fatalf("entry %d: %+v, want %+v", i, y.entries[i], x.entries[i])
			}
		}
		if len(x.exts) != len(y.exts) {
			t.Fatalf("%d extensions, want %d", len(y.exts), len(x.exts))
		}
		for i := range x.exts {
			if x.exts[i].sig != y.exts[i].sig || !bytes.Equal(x.exts[i].data, y.exts[i].data) {
				t.Fatalf("extension %d changed", i)
			}
		}
		b2, err := encodeIndex(y.version, y.entries, y.assumeValid, y.exts)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding not stable: %v", err)
		}
	})
}

// FuzzCacheTree: a cache-tree that parses encodes back to the bytes it
// was parsed from, or to bytes that parse to the same tree; invalidating
// any path keeps it encodable and never revalidates an entry.
func FuzzCacheTree(f *testing.F) {
	f.Add([]byte("\x00-1 2\na\x00-1 0\nc\x001 0\n"+string(make([]byte, 20))), "a/b")
	f.Add([]byte("\x003 1\n"+string(make([]byte, 20))+"dir\x002 0\n"+string(make([]byte, 20))), "dir")
	f.Add([]byte("\x003 0\n"), "")
	f.Fuzz(func(t *testing.T, d []byte, path string) {
		n := parseCacheTree(d)
		if n == nil {
			return
		}
		e := encodeCacheTree(n)
		m := parseCacheTree(e)
		if m == nil {
			t.Fatalf("encoded cache-tree %q does not parse", e)
		}
		if e2 := encodeCacheTree(m); !bytes.Equal(e, e2) {
			t.Fatalf("encoding not stable: %q then %q", e, e2)
		}
		before := (&indexFile{tree: m}).validTree()
		m.invalidate(path)
		after := (&indexFile{tree: m}).validTree()
		if _, ok := after[""]; ok {
			t.Fatalf("root valid after invalidating %q", path)
		}
		for dir, ct := range after {
			if before[dir] != ct {
				t.Fatalf("%q valid after invalidating %q but not before", dir, path)
			}
		}
		if parseCacheTree(encodeCacheTree(m)) == nil {
			t.Fatalf("invalidated cache-tree does not parse")
		}
	})
}
