package snapstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Change is one path's new state in an Overlay.
type Change struct {
	Path   string // slash-separated, relative, no "." / ".." / ".git" components
	Delete bool   // remove whatever is at Path (a whole directory included)
	// Mode is 0o100644, 0o100755, 0o120000 (symlink; the blob holds the
	// target) or 0o160000 (gitlink; OID is a commit). Zero means 0o100644.
	Mode uint32
	// OID is an existing blob (or, for a gitlink, commit) id; it is used
	// when Content is nil.
	OID string
	// Content, when non-nil, is written as a blob (unless it exists) and its
	// id used instead of OID.
	Content []byte
}

// node is one path in the trie of changes an Overlay applies.
type node struct {
	children map[string]*node
	// leaf is the change that makes this path a file (nil: a directory or,
	// with reset and no children, absent).
	leaf *Change
	// reset discards whatever the base has at this path.
	reset bool
}

func (n *node) child(name string) *node {
	if n.children == nil {
		n.children = make(map[string]*node)
	}
	c := n.children[name]
	if c == nil {
		c = &node{}
		n.children[name] = c
	}
	return c
}

// Overlay returns the id of the tree that results from applying changes, in
// order, to baseTree ("" means the empty tree). It writes only the blobs
// given by Content and the trees on the changed paths; every other subtree
// is referenced by id, so the cost is O(changed files × depth) whatever the
// size of the base.
//
// The result is what `git write-tree` produces from an index holding the
// same content: entries are in git order; a directory left empty
// disappears; a path under what the base has as a file replaces the file
// with a directory, and a file at a path the base has as a directory
// replaces the directory. When two changes touch the same path, or one is
// under the other, the later one wins.
func (s *Store) Overlay(ctx context.Context, baseTree string, changes []Change) (string, error) {
	base := emptyTreeHash
	if baseTree != "" {
		h, ok := parseOID(baseTree)
		if !ok {
			return "", fmt.Errorf("snapstore: overlay on %q: invalid tree id", baseTree)
		}
		base = h
	}
	root := &node{}
	for i := range changes {
		c := &changes[i]
		if err := validPath(c.Path); err != nil {
			return "", fmt.Errorf("snapstore: overlay on %s: %w", base, err)
		}
		if !c.Delete {
			if c.Mode == 0 {
				c2 := *c
				c2.Mode = ModeFile
				c = &c2
			}
			switch c.Mode {
			case ModeFile, ModeExec, ModeSymlink:
			case ModeGitlink:
				if c.Content != nil {
					return "", fmt.Errorf("snapstore: overlay on %s: %s: a gitlink has no content", base, c.Path)
				}
			default:
				return "", fmt.Errorf("snapstore: overlay on %s: %s: unsupported mode %o", base, c.Path, c.Mode)
			}
		}
		parts := strings.Split(c.Path, "/")
		if c.Delete && underFile(root, parts) {
			continue // nothing can be under what is now a file
		}
		n := root
		for _, p := range parts[:len(parts)-1] {
			n = n.child(p)
			if n.leaf != nil {
				// An earlier change made this a file; now it is a directory.
				n.leaf, n.reset = nil, true
			}
		}
		n = n.child(parts[len(parts)-1])
		n.children, n.reset, n.leaf = nil, true, nil
		if !c.Delete {
			n.leaf = c
		}
	}
	if _, err := s.readTree(base); err != nil {
		return "", fmt.Errorf("snapstore: overlay on %s: %w", base, err)
	}
	o := &overlay{s: s, ctx: ctx, w: s.newBatch(), trees: make(map[plumbing.Hash][]treeEntry)}
	result := base
	if len(root.children) == 0 {
		// The base itself is the result: reused like any other object,
		// so that a GC before the caller records it cannot take it.
		o.w.reuse(base, "")
	} else {
		e, err := o.eval(root, &treeEntry{mode: ModeDir, hash: base}, "")
		if err != nil {
			return "", fmt.Errorf("snapstore: overlay on %s: %w", base, err)
		}
		result = emptyTreeHash
		if e != nil {
			result = e.hash
		} else {
			o.w.add(plumbing.TreeObject, []byte{})
		}
	}
	if err := o.w.flush(ctx); err != nil {
		return "", fmt.Errorf("snapstore: overlay on %s: %w", base, err)
	}
	for h, entries := range o.trees {
		s.trees.put(h, entries)
	}
	return result.String(), nil
}

type overlay struct {
	s     *Store
	ctx   context.Context
	w     *batch
	trees map[plumbing.Hash][]treeEntry // trees built, for the cache
}

// eval returns the entry for n given the base's entry at the same path
// (nil when absent), or nil when the result is absent. The returned entry's
// name is left for the caller to set.
func (o *overlay) eval(n *node, base *treeEntry, path string) (*treeEntry, error) {
	if c := n.leaf; c != nil {
		e := &treeEntry{mode: c.Mode}
		if c.Content != nil {
			e.hash = o.w.add(plumbing.BlobObject, c.Content)
			return e, nil
		}
		h, ok := parseOID(c.OID)
		if !ok {
			return nil, fmt.Errorf("%s: invalid object id %q", path, c.OID)
		}
		if c.Mode != ModeGitlink {
			// Checked and freshened when the batch is flushed, under the
			// GC lock (see batch.reuse).
			o.w.reuse(h, strings.TrimSuffix(path, "/"))
		}
		e.hash = h
		return e, nil
	}
	var baseHash plumbing.Hash
	if !n.reset && base != nil && base.isTree() {
		baseHash = base.hash
	}
	if len(n.children) == 0 {
		if n.reset {
			return nil, nil
		}
		return base, nil
	}
	if err := o.ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := o.s.readTree(baseHash)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.TrimSuffix(path, "/"), err)
	}
	out := make([]treeEntry, 0, len(entries)+len(n.children))
	seen := 0
	for i := range entries {
		e := &entries[i]
		c, ok := n.children[e.name]
		if !ok {
			out = append(out, *e)
			continue
		}
		seen++
		r, err := o.eval(c, e, path+e.name+"/")
		if err != nil {
			return nil, err
		}
		if r != nil {
			r2 := *r
			r2.name = e.name
			out = append(out, r2)
		}
	}
	if seen < len(n.children) {
		inBase := make(map[string]bool, len(entries))
		for _, e := range entries {
			inBase[e.name] = true
		}
		for name, c := range n.children {
			if inBase[name] {
				continue
			}
			r, err := o.eval(c, nil, path+name+"/")
			if err != nil {
				return nil, err
			}
			if r != nil {
				r2 := *r
				r2.name = name
				out = append(out, r2)
			}
		}
	}
	if len(out) == 0 {
		if !n.reset && base != nil && !base.isTree() {
			// Only deletions below a file of the base: the file stays.
			return base, nil
		}
		return nil, nil
	}
	data := encodeTree(out)
	h := hashObject(plumbing.TreeObject, data)
	if h != baseHash {
		o.w.add(plumbing.TreeObject, data)
		o.trees[h] = out
	} else {
		o.w.reuse(h, strings.TrimSuffix(path, "/"))
	}
	return &treeEntry{mode: ModeDir, hash: h}, nil
}

// underFile reports whether an earlier change made an ancestor of the
// path parts a file.
func underFile(root *node, parts []string) bool {
	n := root
	for _, p := range parts[:len(parts)-1] {
		n = n.children[p]
		if n == nil {
			return false
		}
		if n.leaf != nil {
			return true
		}
	}
	return false
}

// validPath checks a change's path the way git's verify_path would for an
// index entry.
func validPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty path")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("path %q contains NUL", p)
	}
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "":
			return fmt.Errorf("path %q has an empty component", p)
		case c == "." || c == "..":
			return fmt.Errorf("path %q has a %q component", p, c)
		case strings.EqualFold(c, ".git"):
			return fmt.Errorf("path %q has a .git component", p)
		}
	}
	return nil
}
