package snapstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
)

// GC deletes the loose objects of this store that no tree in keep reaches
// and that are older than s.GCGrace, and returns how many it deleted. It
// also removes temporary files older than the grace period that a crashed
// writer left behind. Objects in alternates are never touched, and packs
// (which the store never writes) are left alone.
//
// The walk descends only into trees that are in this store: a tree found
// only in an alternate belongs to a repository that has all of it, so
// nothing below it needs keeping here. If a kept tree, or a tree of ours
// below one, cannot be read, GC deletes nothing and returns the error.
func (s *Store) GC(ctx context.Context, keep []string) (removed int, err error) {
	reach := make(map[plumbing.Hash]bool)
	for _, k := range keep {
		h, err := treeArg(k)
		if err != nil {
			return 0, fmt.Errorf("snapstore: gc: %w", err)
		}
		if err := s.mark(ctx, h, reach); err != nil {
			return 0, fmt.Errorf("snapstore: gc: %w", err)
		}
	}

	if !s.gcMu.TryLock() {
		if s.gcWaits != nil {
			s.gcWaits()
		}
		s.gcMu.Lock()
	}
	defer s.gcMu.Unlock()
	cutoff := time.Now().Add(-s.GCGrace)
	fans, err := os.ReadDir(s.objects)
	if err != nil {
		return 0, fmt.Errorf("snapstore: gc: %w", err)
	}
	type loose struct {
		dir, name string
		h         plumbing.Hash
		tmp       bool
	}
	var old []loose
	for _, fan := range fans {
		if !fan.IsDir() || len(fan.Name()) != 2 {
			continue
		}
		if _, err := hex.DecodeString(fan.Name()); err != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("snapstore: gc: %w", err)
		}
		dir := filepath.Join(s.objects, fan.Name())
		ents, err := os.ReadDir(dir)
		if err != nil {
			return 0, fmt.Errorf("snapstore: gc: %w", err)
		}
		for _, e := range ents {
			name := e.Name()
			isTmp := strings.HasPrefix(name, "tmp_obj_")
			h, ok := parseOID(fan.Name() + name)
			if !isTmp && (!ok || reach[h]) {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("snapstore: gc: %w", err)
			}
			if s.GCGrace > 0 && fi.ModTime().After(cutoff) {
				// Young: written or reused within the grace period by
				// an operation whose result may not be recorded yet. A
				// young tree keeps what it reaches, however old (a
				// snapshot built on an older one refers to its
				// subtrees without rewriting them).
				if !isTmp && isLooseTree(filepath.Join(dir, name)) {
					if err := s.markFrom(ctx, h, reach, true); err != nil {
						return 0, fmt.Errorf("snapstore: gc: young tree %s: %w", h, err)
					}
				}
				continue
			}
			old = append(old, loose{dir, name, h, isTmp})
		}
	}
	for _, o := range old {
		if !o.tmp && reach[o.h] {
			continue // reached from a young tree
		}
		if err := os.Remove(filepath.Join(o.dir, o.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("snapstore: gc: %w", err)
		}
		if !o.tmp {
			removed++
			s.trees.remove(o.h)
		}
	}
	return removed, nil
}

// isLooseTree reports whether the loose object file name holds a tree,
// reading only its header.
func isLooseTree(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	r, err := objfile.NewReader(f)
	if err != nil {
		return false
	}
	defer r.Close()
	t, _, err := r.Header()
	return err == nil && t == plumbing.TreeObject
}

// mark adds tree h and everything below it that this store holds to reach.
func (s *Store) mark(ctx context.Context, h plumbing.Hash, reach map[plumbing.Hash]bool) error {
	return s.markFrom(ctx, h, reach, false)
}

// markFrom is mark; when lenient (a young tree, perhaps of an operation
// that failed halfway), a tree missing below h is passed over and the
// rest still marked, instead of stopping the GC.
func (s *Store) markFrom(ctx context.Context, h plumbing.Hash, reach map[plumbing.Hash]bool, lenient bool) error {
	if reach[h] {
		return nil
	}
	reach[h] = true
	if h == emptyTreeHash {
		return nil
	}
	if !s.own.has(h) {
		if !s.has(h) && !lenient {
			return fmt.Errorf("tree %s: %w", h, ErrNotFound)
		}
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := s.readTree(h)
	if err != nil {
		if lenient {
			return nil
		}
		return err
	}
	for _, e := range entries {
		switch {
		case e.isTree():
			if err := s.markFrom(ctx, e.hash, reach, lenient); err != nil {
				return err
			}
		case e.mode&0o170000 != ModeGitlink:
			reach[e.hash] = true
		}
	}
	return nil
}
