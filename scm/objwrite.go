package scm

import (
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
)

// errChanged is returned when a file's size changed while it was stored.
var errChanged = errors.New("changed while read")

// storeObject writes the object of type t whose size bytes src yields as
// a loose object of the repository, hashing and compressing in one
// streaming pass, and returns its id. The object is written to a
// tmp_obj_* file in objects/ and renamed into place, so a reader never
// sees a partial object; on every error (a full disk, say) the temp file
// is removed. go-git's object writer is not used for this: it leaves its
// temp file in objects/pack when a write fails, and renames a partial
// object into place when the copy fails but the close does not.
func (r *Repo) storeObject(t plumbing.ObjectType, size int64, src io.Reader) (h plumbing.Hash, err error) {
	objects := filepath.Join(r.commonDir, "objects")
	tmp, err := os.CreateTemp(objects, "tmp_obj_")
	if err != nil {
		return h, err
	}
	name := tmp.Name()
	defer func() {
		if tmp != nil {
			tmp.Close()
		}
		if err != nil || tmp != nil {
			os.Remove(name)
		}
	}()
	var sink io.Writer = tmp
	if r.objectSink != nil {
		sink = r.objectSink(tmp)
	}
	zw := zlib.NewWriter(sink)
	hs := plumbing.NewHasher(t, size)
	if _, err := zw.Write([]byte(t.String() + " " + strconv.FormatInt(size, 10) + "\x00")); err != nil {
		return h, err
	}
	n, err := io.Copy(io.MultiWriter(zw, hs), io.LimitReader(src, size))
	if err != nil {
		return h, err
	}
	if n != size {
		return h, errChanged
	}
	if err := zw.Close(); err != nil {
		return h, err
	}
	h = hs.Sum()
	err = tmp.Close()
	tmp = nil
	if err != nil {
		return h, err
	}
	hex := h.String()
	dir := filepath.Join(objects, hex[:2])
	final := filepath.Join(dir, hex[2:])
	if _, err := os.Stat(final); err == nil {
		os.Remove(name) // already there
		return h, nil
	}
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return h, err
	}
	if err := os.Chmod(name, 0o444); err != nil {
		return h, err
	}
	if err := os.Rename(name, final); err != nil {
		return h, fmt.Errorf("store object %s: %w", hex, err)
	}
	return h, nil
}

// storeEncoded stores an object encoded into go-git's memory object (a
// tree or a commit) unless the repository has it.
func (r *Repo) storeEncoded(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	if r.repo.Storer.HasEncodedObject(obj.Hash()) == nil {
		return obj.Hash(), nil
	}
	rd, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer rd.Close()
	h, err := r.storeObject(obj.Type(), obj.Size(), rd)
	if err == nil && h != obj.Hash() {
		err = fmt.Errorf("stored %s %s, expected %s", obj.Type(), h, obj.Hash())
	}
	return h, err
}
