package snapstore

import (
	"compress/zlib"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"

	"github.com/changesetd/changesetd/scm/internal/gitobj"
)

// odb is one object directory: the store's own or an alternate. Loose
// objects are read with a plain open and zlib, without a lock; packed ones
// through gitobj, which searches each pack's mapped index in place and
// reads an object from its offset alone (go-git's storage keeps every
// index decoded on the heap plus a map from each offset in the pack to
// its id, over a hundred megabytes at a million objects).
type odb struct {
	dir string

	mu sync.Mutex
	// packs reads the directory's packs, without its alternates (the
	// store follows those itself); created on first need, nil after
	// close. It lists the packs again when a lookup misses and
	// dir/pack changed, so a pack git adds (gc, repack) is found.
	packs *gitobj.Reader
}

func newODB(dir string) *odb { return &odb{dir: dir} }

func (o *odb) loosePath(h plumbing.Hash) string {
	s := h.String()
	return filepath.Join(o.dir, s[:2], s[2:])
}

// has reports whether the object is in this directory, loose or packed.
func (o *odb) has(h plumbing.Hash) bool {
	if _, err := os.Lstat(o.loosePath(h)); err == nil {
		return true
	}
	return o.hasPacked(h)
}

// hasPacked reports whether the object is in one of this directory's
// packs (or, found there meanwhile, loose).
func (o *odb) hasPacked(h plumbing.Hash) bool {
	r := o.reader()
	return r != nil && r.Has(h)
}

// reader returns the pack reader, made at the first call; nil when the
// directory has no pack directory (then nothing is packed). The packs are
// listed again when git changed them, so that a pack it removed is closed.
func (o *odb) reader() *gitobj.Reader {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.packs == nil {
		if _, err := os.Stat(filepath.Join(o.dir, "pack")); err != nil {
			return nil
		}
		o.packs = gitobj.OpenDir(o.dir)
	}
	o.packs.Refresh()
	return o.packs
}

// read returns the object's type and content, or an error wrapping
// ErrNotFound when this directory does not have it.
func (o *odb) read(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	t, b, err := readLoose(o.loosePath(h))
	if err == nil {
		if got := hashObject(t, b); got != h {
			// Another object's file under this one's name: shown as
			// this one, it would be another file's content (packs are
			// checked the same way by gitobj).
			return 0, nil, fmt.Errorf("%s: the object's content hashes to %s", o.loosePath(h), got)
		}
	}
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return t, b, err
	}
	r := o.reader()
	if r == nil {
		return 0, nil, ErrNotFound
	}
	t, b, err = r.Read(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return 0, nil, ErrNotFound
	}
	if err != nil {
		return 0, nil, err
	}
	return t, b, nil
}

func (o *odb) close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.packs == nil {
		return nil
	}
	err := o.packs.Close()
	o.packs = nil
	return err
}

// readLoose reads a loose object file, checking its header; the caller
// (odb.read) checks that the content hashes to the name.
func readLoose(name string) (plumbing.ObjectType, []byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	r, err := objfile.NewReader(f)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", name, err)
	}
	defer r.Close()
	t, size, err := r.Header()
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", name, err)
	}
	if size < 0 || size > 1<<40 {
		return 0, nil, fmt.Errorf("%s: bad object size %d", name, size)
	}
	b, err := readAllInto(r, make([]byte, 0, size))
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) != size {
		return 0, nil, fmt.Errorf("%s: object is %d bytes, header says %d", name, len(b), size)
	}
	return t, b, nil
}

func readAllInto(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// hashObject returns git's id for an object of type t with content b.
func hashObject(t plumbing.ObjectType, b []byte) plumbing.Hash { return gitobj.ObjectID(t, b) }

func objectHeader(t plumbing.ObjectType, n int) []byte {
	hdr := make([]byte, 0, 32)
	hdr = append(hdr, t.String()...)
	hdr = append(hdr, ' ')
	hdr = strconv.AppendInt(hdr, int64(n), 10)
	return append(hdr, 0)
}

// batch collects the objects one operation writes, so that they are
// written in parallel and their directories synced once.
type batch struct {
	s    *Store
	objs []pending
	seen map[plumbing.Hash]bool
	// reused are existing objects the operation's result refers to
	// without writing them, by the path that refers to them.
	reused map[plumbing.Hash]string
}

type pending struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	data []byte
}

func (s *Store) newBatch() *batch {
	return &batch{s: s, seen: make(map[plumbing.Hash]bool)}
}

// add queues an object and returns its id.
func (w *batch) add(t plumbing.ObjectType, data []byte) plumbing.Hash {
	h := hashObject(t, data)
	if !w.seen[h] {
		w.seen[h] = true
		w.objs = append(w.objs, pending{h, t, data})
	}
	return h
}

// reuse records that the operation's result refers to the existing
// object h (named by path in errors). Reuse has one rule, the same as for
// an object written again: when the batch is flushed, under the GC lock,
// h must exist and, when it is a loose object of ours, its mtime is
// freshened. A GC then either ran before (and h is checked after it) or
// runs after and sees h young, and spares it and everything it reaches.
func (w *batch) reuse(h plumbing.Hash, path string) {
	if h == emptyTreeHash || w.seen[h] {
		return
	}
	if w.reused == nil {
		w.reused = make(map[plumbing.Hash]string)
	}
	w.reused[h] = path
}

// maxWriters bounds the goroutines that write one batch's objects. Nearly
// all of a write is waiting for fsync, and file systems commit concurrent
// fsyncs together (one journal commit for many), so with 16 in flight ten
// changed files cost little more than one.
const maxWriters = 16

// pauseKey is the context key of WithPause's function.
type pauseKey struct{}

// WithPause returns a context under which Overlay calls pause before
// each object it writes, and ends with its error if it returns one. The caller uses it to let
// more urgent work have the processor first; the objects written are the
// same.
func WithPause(ctx context.Context, pause func(context.Context) error) context.Context {
	return context.WithValue(ctx, pauseKey{}, pause)
}

// pauseOf returns ctx's pause function, nil when it has none.
func pauseOf(ctx context.Context) func(context.Context) error {
	p, _ := ctx.Value(pauseKey{}).(func(context.Context) error)
	return p
}

// flush makes every queued object durable in the store, or confirms that it
// exists already.
func (w *batch) flush(ctx context.Context) error {
	if len(w.objs) == 0 && len(w.reused) == 0 {
		return nil
	}
	s := w.s
	s.gcMu.RLock()
	defer s.gcMu.RUnlock()
	if ctx == nil {
		ctx = context.Background()
	}
	pause := pauseOf(ctx)
	for h, path := range w.reused {
		if w.seen[h] {
			continue // written below, which freshens it as well
		}
		if err := s.freshenExisting(h); err != nil {
			if path == "" {
				return err
			}
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(w.objs) == 0 {
		return nil
	}
	if len(w.objs) == 1 {
		if pause != nil {
			if err := pause(ctx); err != nil {
				return err
			}
		}
		return s.ensureObject(w.objs[0], nil)
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		// The fan-out directories written into, each synced once all
		// its objects are renamed in, rather than once per object.
		dirs = map[string]bool{}
	)
	work := make(chan pending)
	for range min(maxWriters, len(w.objs)) {
		wg.Go(func() {
			for p := range work {
				err := ctx.Err()
				if err == nil && pause != nil {
					err = pause(ctx)
				}
				if err == nil {
					err = s.ensureObject(p, func(dir string) {
						mu.Lock()
						dirs[dir] = true
						mu.Unlock()
					})
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, p := range w.objs {
		work <- p
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	synced := make(chan string)
	for range min(maxWriters, len(dirs)) {
		wg.Go(func() {
			for d := range synced {
				if err := syncDir(d); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for d := range dirs {
		synced <- d
	}
	close(synced)
	wg.Wait()
	return firstErr
}

// ensureObject writes p unless it exists. An existing loose object of our
// own has its mtime freshened instead, so that a GC after this write sees
// it as young (git does the same); if that fails, it is written again.
// With renamed set, the directory an object is renamed into is handed
// to it to sync, instead of being synced at once (writeLoose).
func (s *Store) ensureObject(p pending, renamed func(dir string)) error {
	own := s.own.loosePath(p.h)
	if _, err := os.Lstat(own); err == nil {
		if freshen(own) == nil {
			return nil
		}
		return s.writeLoose(p, renamed)
	}
	// git needs no stored empty tree, but other tools walking the store
	// (fsck) are happier when a tree we return is present in it.
	if p.h == emptyTreeHash {
		return s.writeLoose(p, renamed)
	}
	if s.own.hasPacked(p.h) {
		return nil
	}
	for _, a := range s.odbs()[1:] {
		if a.has(p.h) {
			return nil
		}
	}
	return s.writeLoose(p, renamed)
}

// freshenExisting checks that h exists, in the store or an alternate,
// and freshens it when it is a loose object of ours. s.gcMu must be held
// for reading.
func (s *Store) freshenExisting(h plumbing.Hash) error {
	own := s.own.loosePath(h)
	_, err := os.Lstat(own)
	if s.afterReuseCheck != nil {
		s.afterReuseCheck(h)
	}
	if err == nil {
		if err := freshen(own); err != nil {
			return fmt.Errorf("object %s: freshen: %w", h, err)
		}
		return nil
	}
	if s.own.hasPacked(h) {
		return nil
	}
	for _, a := range s.odbs()[1:] {
		if a.has(h) {
			return nil
		}
	}
	return fmt.Errorf("object %s: %w", h, ErrNotFound)
}

func freshen(name string) error {
	now := time.Now()
	return os.Chtimes(name, now, now)
}

var zlibWriters = sync.Pool{New: func() any {
	// git's core.looseCompression defaults to Z_BEST_SPEED too.
	w, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed)
	return w
}}

// writeLoose writes p as a loose object: compressed into a temporary file
// in its fan-out directory, synced, made read-only and renamed into place,
// and then the directory is synced so the rename is durable (by the
// caller, when renamed is set: a batch syncs each directory once). A
// crash leaves at most a tmp_obj_* file, never a partial object under its
// final name.
func (s *Store) writeLoose(p pending, renamed func(dir string)) (err error) {
	fan, err := s.fanoutDir(p.h[0])
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(fan, "tmp_obj_")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	zw := zlibWriters.Get().(*zlib.Writer)
	zw.Reset(f)
	_, err = zw.Write(objectHeader(p.t, len(p.data)))
	if err == nil {
		_, err = zw.Write(p.data)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	zw.Reset(io.Discard)
	zlibWriters.Put(zw)
	if err != nil {
		return err
	}
	if err = f.Chmod(0o444); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, s.own.loosePath(p.h)); err != nil {
		return err
	}
	if renamed != nil {
		renamed(fan)
		return nil
	}
	return syncDir(fan)
}

// fanoutDir returns objects/xx for the first byte b of an id, creating it
// if needed. Creating one syncs objects/, so that the directory is durable
// before any object in it is reported as written. (Fan-out directories that
// already existed were made durable by Open's sync of objects/.)
func (s *Store) fanoutDir(b byte) (string, error) {
	dir := filepath.Join(s.objects, hex.EncodeToString([]byte{b}))
	mu := &s.fanout[b]
	mu.Lock()
	defer mu.Unlock()
	if mu.ready {
		return dir, nil
	}
	switch err := os.Mkdir(dir, 0o755); {
	case err == nil:
		if err := syncDir(s.objects); err != nil {
			return "", err
		}
	case !errors.Is(err, os.ErrExist):
		return "", err
	}
	mu.ready = true
	return dir, nil
}
