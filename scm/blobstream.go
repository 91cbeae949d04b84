package scm

import (
	"context"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// streamBlobMin is the size from which staging (StagePath, StageAll)
// stores a file's blob before it takes index.lock, reading the file once
// in 32 KiB pieces:
// memory stays flat whatever the file's size, and the lock is not held
// while a large file is hashed and compressed (another git waiting on the
// index would fail meanwhile). Smaller files are cheaper read whole.
const streamBlobMin = 1 << 20

// preStored is a blob stored ahead of an index edit for a file whose stat
// was st when it was read.
type preStored struct {
	st fileStat
	h  plumbing.Hash
}

// prestoreLocked stores the blob of the working-tree file rel, streaming,
// when it is a regular file of at least streamBlobMin bytes whose content
// goes into git as it is (no clean filter). It returns false when it did
// not (a smaller file, a filter, a file that changed while read): the
// index edit then reads the file as usual. r.mu must be held, index.lock
// must not be.
func (r *Repo) prestoreLocked(ctx context.Context, rel string) (preStored, bool) {
	abs := filepath.Join(r.root, filepath.FromSlash(rel))
	fi, err := os.Lstat(abs)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < streamBlobMin {
		return preStored{}, false
	}
	s, err := r.newScan(ctx)
	if err != nil {
		return preStored{}, false
	}
	if !planFor(s.rules.attrs(rel), &s.set).identity() {
		return preStored{}, false
	}
	st := statOf(fi)
	if r.storing != nil {
		r.storing(rel)
	}
	h, err := r.writeLooseBlob(abs, fi.Size())
	if err != nil {
		return preStored{}, false
	}
	if fi2, err := os.Lstat(abs); err != nil || statOf(fi2) != st {
		return preStored{}, false
	}
	return preStored{st: st, h: h}, true
}

// writeLooseBlob stores the size bytes of the regular file abs as a loose
// object, hashing and compressing in one streaming pass.
func (r *Repo) writeLooseBlob(abs string, size int64) (h plumbing.Hash, err error) {
	f, fi, err := openRegular(abs)
	if err != nil {
		return h, err
	}
	defer f.Close()
	if fi.Size() != size {
		return h, errChanged
	}
	return r.storeObject(plumbing.BlobObject, size, f)
}

// prestoreScopesLocked stores, before index.lock is taken, the blobs of
// the large files that staging scopes would read: modified tracked files
// and untracked ones (see prestoreLocked). A file that changes before the
// edit is simply read again under the lock. r.mu must be held, index.lock
// must not be.
func (r *Repo) prestoreScopesLocked(ctx context.Context, scopes []string) map[string]preStored {
	s, err := r.newScan(ctx)
	if err != nil {
		return nil
	}
	if scopes, err = s.fill(scopes); err != nil {
		return nil
	}
	var cands []string
	big := func(w *workFile) bool {
		return w != nil && !w.submodule && w.mode != filemode.Symlink && w.size >= streamBlobMin
	}
	for _, sc := range scopes {
		for i, name := range s.idx.at(sc) {
			ie, w := &s.idx.ents[i], s.work.at(i, name)
			if !big(w) || ie.e.SkipWorktree {
				continue
			}
			if !ie.conflict && !ie.e.IntentToAdd && w.known && w.mode == ie.e.Mode && w.oid == ie.e.Hash {
				continue // unchanged: staging does not read it
			}
			cands = append(cands, name)
		}
	}
	for _, name := range s.untracked {
		if big(s.work.get(name)) {
			cands = append(cands, name)
		}
	}
	out := map[string]preStored{}
	for _, name := range cands {
		if ctx.Err() != nil {
			break
		}
		if p, ok := r.prestoreLocked(ctx, name); ok {
			out[name] = p
		}
	}
	return out
}
