package scm

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// IndexSet is one stage-0 index entry to set: a blob and its mode, or,
// with Exists false, no entry at all. The blob is Content, stored as given
// (its canonical form: no clean filter), when Content is not nil, else
// the stored object OID.
type IndexSet struct {
	Path    string
	Exists  bool
	OID     string
	Content []byte
	Mode    uint32
}

// SetIndexEntries sets the index entries of paths in one write under
// index.lock: what an undo of a revert puts back, or exactly the blobs a
// commit is to record. A blob given by id must be in the object store.
// An entry set to what the working tree holds gets its stat data.
func (r *Repo) SetIndexEntries(ctx context.Context, sets []IndexSet) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.editIndexLocked(ctx, "scm: set index entries", func(x *indexEdit, s *scan) error {
		for _, set := range sets {
			rel, err := writeTarget("stage", set.Path)
			if err != nil {
				return err
			}
			if !set.Exists {
				x.remove(rel)
				continue
			}
			fm := filemode.FileMode(set.Mode)
			if fm != filemode.Regular && fm != filemode.Executable && fm != filemode.Symlink {
				return fmt.Errorf("scm: stage %s: unsupported mode %o", rel, set.Mode)
			}
			var e *index.Entry
			if set.Content != nil {
				h, err := r.writeBlobLocked(set.Content)
				if err != nil {
					return fmt.Errorf("scm: stage %s: write blob: %w", rel, err)
				}
				e = &index.Entry{Name: rel, Hash: h, Mode: fm}
			} else {
				h, err := parseOID(set.OID)
				if err != nil {
					return fmt.Errorf("scm: stage %s: %w", rel, err)
				}
				if err := r.repo.Storer.HasEncodedObject(h); err != nil {
					return fmt.Errorf("scm: stage %s: blob %s: %w", rel, set.OID, err)
				}
				e = &index.Entry{Name: rel, Hash: h, Mode: fm}
			}
			if old := x.stage0(rel); old != nil && len(x.m[rel]) == 1 && old.Hash == e.Hash && old.Mode == e.Mode && !old.IntentToAdd {
				continue
			}
			refreshEntry(s, e)
			x.set(e)
		}
		return nil
	})
}

// WriteBlob stores content as a blob, as given (its canonical form), and
// returns its id.
func (r *Repo) WriteBlob(content []byte) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, err := r.writeBlobLocked(content)
	return h.String(), err
}
