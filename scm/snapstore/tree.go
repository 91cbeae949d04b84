package snapstore

import (
	"bytes"
	"container/list"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// File modes as git writes them in trees.
const (
	ModeDir     = 0o040000
	ModeFile    = 0o100644
	ModeExec    = 0o100755
	ModeSymlink = 0o120000
	ModeGitlink = 0o160000
)

// treeEntry is one entry of a parsed tree. Slices of them are shared
// through the tree cache and must not be modified.
type treeEntry struct {
	name string
	mode uint32
	hash plumbing.Hash
}

func (e treeEntry) isTree() bool { return e.mode&0o170000 == ModeDir }

// canonMode is the mode git's index would record for m, and so the one
// `git write-tree` writes (cache.h, canon_mode): old trees may hold 100664
// or 040000 spelled with a leading zero, which git rewrites when it
// rewrites the tree.
func canonMode(m uint32) uint32 {
	switch m & 0o170000 {
	case ModeDir, ModeSymlink, ModeGitlink:
		return m & 0o170000
	}
	if m&0o100 != 0 {
		return ModeExec
	}
	return ModeFile
}

// parseTree decodes a tree object's content.
func parseTree(b []byte) ([]treeEntry, error) {
	n := bytes.Count(b, []byte{0})
	out := make([]treeEntry, 0, n)
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		if sp <= 0 {
			return nil, fmt.Errorf("malformed tree entry mode")
		}
		m, err := strconv.ParseUint(string(b[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("malformed tree entry mode %q", b[:sp])
		}
		b = b[sp+1:]
		nul := bytes.IndexByte(b, 0)
		if nul <= 0 || len(b) < nul+1+20 {
			return nil, fmt.Errorf("malformed tree entry")
		}
		var e treeEntry
		e.name = string(b[:nul])
		e.mode = uint32(m)
		copy(e.hash[:], b[nul+1:nul+21])
		out = append(out, e)
		b = b[nul+21:]
	}
	return out, nil
}

// compareEntries orders entries as git orders a tree: by name, with a
// directory's name compared as if it ended in "/".
func compareEntries(a, b treeEntry) int {
	n := min(len(a.name), len(b.name))
	if c := bytes.Compare([]byte(a.name[:n]), []byte(b.name[:n])); c != 0 {
		return c
	}
	ca, cb := byte(0), byte(0)
	if n < len(a.name) {
		ca = a.name[n]
	} else if a.isTree() {
		ca = '/'
	}
	if n < len(b.name) {
		cb = b.name[n]
	} else if b.isTree() {
		cb = '/'
	}
	return int(ca) - int(cb)
}

// encodeTree sorts entries in place and returns the tree object's content.
func encodeTree(entries []treeEntry) []byte {
	slices.SortFunc(entries, compareEntries)
	size := 0
	for _, e := range entries {
		size += 7 + len(e.name) + 1 + 20
	}
	b := make([]byte, 0, size)
	for _, e := range entries {
		b = strconv.AppendUint(b, uint64(canonMode(e.mode)), 8)
		b = append(b, ' ')
		b = append(b, e.name...)
		b = append(b, 0)
		b = append(b, e.hash[:]...)
	}
	return b
}

// readTree returns the parsed entries of a tree, from the cache when it
// can. The result must not be modified.
func (s *Store) readTree(h plumbing.Hash) ([]treeEntry, error) {
	if h == emptyTreeHash || h.IsZero() {
		return nil, nil
	}
	if e, ok := s.trees.get(h); ok {
		return e, nil
	}
	t, b, err := s.readObject(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.TreeObject {
		return nil, fmt.Errorf("%s is a %s, not a tree", h, t)
	}
	entries, err := parseTree(b)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	s.trees.put(h, entries)
	return entries, nil
}

// treeCache is a least-recently-used cache of parsed trees, bounded by the
// total number of entries it holds. Trees are immutable, so entries never
// go stale; GC removes the ones it deletes.
type treeCache struct {
	// mu guards everything below.
	mu  sync.Mutex
	max int
	n   int
	ll  *list.List // of *cachedTree, most recent first
	m   map[plumbing.Hash]*list.Element
}

type cachedTree struct {
	h       plumbing.Hash
	entries []treeEntry
}

func newTreeCache(maxEntries int) *treeCache {
	return &treeCache{max: maxEntries, ll: list.New(), m: make(map[plumbing.Hash]*list.Element)}
}

func (c *treeCache) get(h plumbing.Hash) ([]treeEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[h]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*cachedTree).entries, true
}

func (c *treeCache) put(h plumbing.Hash, entries []treeEntry) {
	// An empty tree still costs a map slot; count it as one entry.
	cost := max(len(entries), 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cost > c.max/4 {
		return // one giant tree must not flush everything else
	}
	if el, ok := c.m[h]; ok {
		c.ll.MoveToFront(el)
		return
	}
	c.m[h] = c.ll.PushFront(&cachedTree{h, entries})
	c.n += cost
	for c.n > c.max {
		el := c.ll.Back()
		ct := el.Value.(*cachedTree)
		c.ll.Remove(el)
		delete(c.m, ct.h)
		c.n -= max(len(ct.entries), 1)
	}
}

func (c *treeCache) remove(h plumbing.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[h]; ok {
		c.ll.Remove(el)
		delete(c.m, h)
		c.n -= max(len(el.Value.(*cachedTree).entries), 1)
	}
}

func (c *treeCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ll.Init()
	c.m = make(map[plumbing.Hash]*list.Element)
	c.n = 0
}
