package snapstore

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Entry is a file (or gitlink, or with Mode 0o040000 a directory) in a tree.
type Entry struct {
	Path string // slash-separated, relative to the tree
	Mode uint32
	OID  string
}

// Diff is one path whose mode or id differs between two trees. Old or New
// is nil when the path is absent on that side.
type Diff struct {
	Path     string
	Old, New *Entry
}

// DiffTrees returns the files that differ between trees a and b ("" or
// EmptyTree mean the empty tree), sorted by path. It descends only into
// subtrees whose ids differ, so its cost follows the size of the change.
// Directories never appear themselves: a directory replaced by a file
// yields a deletion per file it held and an addition of the file, as in
// `git diff-tree -r`.
func (s *Store) DiffTrees(ctx context.Context, a, b string) ([]Diff, error) {
	ha, err := treeArg(a)
	if err != nil {
		return nil, fmt.Errorf("snapstore: diff %s %s: %w", a, b, err)
	}
	hb, err := treeArg(b)
	if err != nil {
		return nil, fmt.Errorf("snapstore: diff %s %s: %w", a, b, err)
	}
	var out []Diff
	if err := s.diffTrees(ctx, ha, hb, "", &out); err != nil {
		return nil, fmt.Errorf("snapstore: diff %s %s: %w", a, b, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func treeArg(t string) (plumbing.Hash, error) {
	if t == "" {
		return emptyTreeHash, nil
	}
	h, ok := parseOID(t)
	if !ok {
		return h, fmt.Errorf("invalid tree id %q", t)
	}
	return h, nil
}

func (s *Store) diffTrees(ctx context.Context, a, b plumbing.Hash, prefix string, out *[]Diff) error {
	if a == b {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ea, err := s.readTree(a)
	if err != nil {
		return err
	}
	eb, err := s.readTree(b)
	if err != nil {
		return err
	}
	// Entries are matched by name; a file and a directory with the same
	// name sort apart in git order, so match through a map rather than a
	// merge.
	inB := make(map[string]int, len(eb))
	for i, e := range eb {
		inB[e.name] = i
	}
	matched := make([]bool, len(eb))
	for _, x := range ea {
		p := prefix + x.name
		j, ok := inB[x.name]
		if !ok {
			if err := s.diffSide(ctx, x, p, true, out); err != nil {
				return err
			}
			continue
		}
		matched[j] = true
		y := eb[j]
		switch {
		case x.isTree() && y.isTree():
			if err := s.diffTrees(ctx, x.hash, y.hash, p+"/", out); err != nil {
				return err
			}
		case !x.isTree() && !y.isTree():
			if x.mode != y.mode || x.hash != y.hash {
				*out = append(*out, Diff{Path: p, Old: entryOf(p, x), New: entryOf(p, y)})
			}
		default:
			if err := s.diffSide(ctx, x, p, true, out); err != nil {
				return err
			}
			if err := s.diffSide(ctx, y, p, false, out); err != nil {
				return err
			}
		}
	}
	for j, y := range eb {
		if !matched[j] {
			if err := s.diffSide(ctx, y, prefix+y.name, false, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// diffSide records e (every file under it, for a directory) as deleted
// (old) or added.
func (s *Store) diffSide(ctx context.Context, e treeEntry, p string, old bool, out *[]Diff) error {
	if e.isTree() {
		if old {
			return s.diffTrees(ctx, e.hash, emptyTreeHash, p+"/", out)
		}
		return s.diffTrees(ctx, emptyTreeHash, e.hash, p+"/", out)
	}
	d := Diff{Path: p}
	if old {
		d.Old = entryOf(p, e)
	} else {
		d.New = entryOf(p, e)
	}
	*out = append(*out, d)
	return nil
}

func entryOf(p string, e treeEntry) *Entry {
	return &Entry{Path: p, Mode: e.mode, OID: e.hash.String()}
}

// Lookup returns the entry at path in tree, or nil, nil when there is none.
// The empty path names the tree itself.
func (s *Store) Lookup(ctx context.Context, tree, path string) (*Entry, error) {
	h, err := treeArg(tree)
	if err != nil {
		return nil, fmt.Errorf("snapstore: lookup %s in %s: %w", path, tree, err)
	}
	path = strings.Trim(path, "/")
	if path == "" {
		if _, err := s.readTree(h); err != nil {
			return nil, fmt.Errorf("snapstore: lookup %s in %s: %w", path, tree, err)
		}
		return &Entry{Mode: ModeDir, OID: h.String()}, nil
	}
	parts := strings.Split(path, "/")
	cur := treeEntry{mode: ModeDir, hash: h}
	for i, name := range parts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !cur.isTree() {
			return nil, nil
		}
		entries, err := s.readTree(cur.hash)
		if err != nil {
			return nil, fmt.Errorf("snapstore: lookup %s in %s: %w", path, tree, err)
		}
		found := false
		for _, e := range entries {
			if e.name == name {
				cur, found = e, true
				break
			}
		}
		if !found {
			return nil, nil
		}
		if i == len(parts)-1 {
			return entryOf(path, cur), nil
		}
	}
	return nil, nil
}
