package scm

import (
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
)

// streamBlobMin is the size from which StagePath stores a file's blob
// before it takes index.lock, reading the file once in 32 KiB pieces:
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
		return h, errors.New("changed while read")
	}
	objects := filepath.Join(r.commonDir, "objects")
	tmp, err := os.CreateTemp(objects, "tmp_obj_")
	if err != nil {
		return h, err
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	zw := zlib.NewWriter(tmp)
	hs := plumbing.NewHasher(plumbing.BlobObject, size)
	if _, err := zw.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00")); err != nil {
		return h, err
	}
	n, err := io.Copy(io.MultiWriter(zw, hs), io.LimitReader(f, size))
	if err != nil {
		return h, err
	}
	if n != size {
		return h, errors.New("changed while read")
	}
	if err := zw.Close(); err != nil {
		return h, err
	}
	h = hs.Sum()
	if err := tmp.Close(); err != nil {
		return h, err
	}
	hex := h.String()
	dir := filepath.Join(objects, hex[:2])
	final := filepath.Join(dir, hex[2:])
	if _, err := os.Stat(final); err == nil {
		return h, nil // already there; the deferred cleanup drops ours
	}
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return h, err
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return h, err
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return h, fmt.Errorf("store object %s: %w", hex, err)
	}
	tmp = nil
	return h, nil
}
