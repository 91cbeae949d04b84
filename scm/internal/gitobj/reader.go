// Package gitobj reads a git repository's objects, loose and packed,
// without go-git's storage: pack indexes are mapped and searched in place
// (fan-out table, then a binary search of the sorted ids), and a packed
// object is inflated and its delta chain resolved from its offset alone.
// go-git instead keeps every index decoded on the heap and, on the first
// packed read, builds a map from every offset in the pack to its id
// (idxfile's genOffsetHash): at a million objects, well over a hundred
// megabytes that stay resident for the process's life.
//
// Its only callers are scm and scm/snapstore.
package gitobj

import (
	"bufio"
	"bytes"
	"container/list"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"
)

// Reader reads objects from one repository's object directory and its
// alternates: loose objects and version-2 pack indexes with their packs.
// It is safe for concurrent use: pack files and their indexes stay open,
// mapped where the system allows (read with ReadAt, and the index read
// into memory, where not), and only the pack lists and the delta-base
// cache are guarded.
//
// It exists because go-git reopens the pack for every object and maps the
// whole pack's offsets on the first packed read; scm falls back to go-git
// on any error, so a gap here costs speed, never correctness.
type Reader struct {
	dirs []*objDir // the repository's own first, then its alternates

	mu     sync.Mutex
	closed bool

	cache deltaCache
}

// objDir is one objects directory.
type objDir struct {
	path string

	// mu guards packs and packStamp; the packs themselves are read
	// without it.
	mu        sync.Mutex
	packs     []*pack
	packStamp time.Time // objects/pack's mtime when packs was listed
	scanned   bool
	closed    bool // set by Reader.Close: list nothing more
}

// ErrClosed is returned by reads after Close.
var ErrClosed = errors.New("object reader closed")

// ErrCorrupt is wrapped by errors for malformed objects, packs and indexes.
var ErrCorrupt = errors.New("corrupt object data")

// maxAlternateDepth is how deep alternates of alternates are followed, as
// in git.
const maxAlternateDepth = 5

// maxDeltaChain bounds a delta chain; git's default depth is 50 and its
// aggressive one 250, so only a corrupt pack (a REF_DELTA cycle) reaches it.
const maxDeltaChain = 10000

// Open opens the object directory objects and its alternates.
// Packs are listed at the first read.
func Open(objects string) *Reader {
	return open(objects, maxAlternateDepth)
}

// OpenDir opens the object directory dir alone, without its alternates.
func OpenDir(dir string) *Reader {
	return open(dir, 0)
}

func open(objects string, maxDepth int) *Reader {
	o := &Reader{}
	o.cache.max = deltaCacheBytes
	seen := map[string]bool{}
	var add func(dir string, depth int)
	add = func(dir string, depth int) {
		dir = filepath.Clean(dir)
		if seen[dir] {
			return
		}
		seen[dir] = true
		o.dirs = append(o.dirs, &objDir{path: dir})
		if depth >= maxDepth {
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, "info", "alternates"))
		if err != nil {
			return
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if !filepath.IsAbs(line) {
				line = filepath.Join(dir, line)
			}
			add(line, depth+1)
		}
	}
	add(objects, 0)
	return o
}

// Close releases the pack files. Reads after Close fail with
// ErrClosed; reads under way finish first on the packs they hold.
func (o *Reader) Close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	o.mu.Unlock()
	var first error
	for _, d := range o.dirs {
		d.mu.Lock()
		for _, p := range d.packs {
			if err := p.drop(); err != nil && first == nil {
				first = err
			}
		}
		d.packs = nil
		d.closed = true
		d.mu.Unlock()
	}
	o.cache.clear()
	return first
}

func (o *Reader) isClosed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// Read returns object h's type and content. An absent object gives an
// error wrapping plumbing.ErrObjectNotFound. The content is the caller's.
func (o *Reader) Read(h plumbing.Hash) (t plumbing.ObjectType, b []byte, err error) {
	defer catchFault(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return o.readDepth(h, 0)
}

// Has reports whether object h is in a pack or loose, inflating
// nothing.
func (o *Reader) Has(h plumbing.Hash) (ok bool) {
	var err error
	defer catchFault(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	_, _, err = lookup(o, h, 0,
		func(*pack, int64) (plumbing.ObjectType, struct{}, error) { return plumbing.AnyObject, struct{}{}, nil },
		func(dir string) (plumbing.ObjectType, struct{}, error) {
			s := h.String()
			_, err := os.Lstat(filepath.Join(dir, s[:2], s[2:]))
			return plumbing.AnyObject, struct{}{}, err
		})
	return err == nil
}

// Position is where object h lies in the packs: an ordinal of its pack
// and its offset in it, so that objects read in that order walk shared
// delta chains one after the other (and find their bases in the cache);
// false when h is in no pack.
func (o *Reader) Position(h plumbing.Hash) (pack int, off int64, ok bool) {
	var err error
	defer func() {
		if err != nil {
			pack, off, ok = 0, 0, false
		}
	}()
	defer catchFault(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if o.isClosed() {
		return 0, 0, false
	}
	n := 0
	for _, d := range o.dirs {
		d.mu.Lock()
		i, off, ok := d.locateLocked(h)
		packs := len(d.packs)
		d.mu.Unlock()
		if ok {
			return n + i, off, true
		}
		n += packs
	}
	return 0, 0, false
}

// catchFault turns a fault reading a mapped pack (a file truncated in
// place by something other than git) into an error; other panics go on.
// The caller must have set debug.SetPanicOnFault.
func catchFault(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		*err = fmt.Errorf("%w: a pack file changed while mapped: %v", ErrCorrupt, r)
		return
	}
	panic(r)
}

// readDepth reads object h, met depth deltas deep in a chain (0: asked
// for by a caller).
//
// What it returns hashes to h: a damaged pack can inflate cleanly to
// another object's bytes (a flipped bit in an entry's header points a
// delta at another base of the same size, or names another type), which
// nothing else catches. Hashing what is returned costs about half a
// millisecond per megabyte read (crypto/sha1: 1.9 GB/s on the bench's
// machine); a 20k first view returns 0.8 MB of HEAD's blobs.
func (o *Reader) readDepth(h plumbing.Hash, depth int) (plumbing.ObjectType, []byte, error) {
	t, b, err := lookup(o, h, depth,
		func(p *pack, off int64) (plumbing.ObjectType, []byte, error) { return o.readPacked(p, off, depth) },
		func(dir string) (plumbing.ObjectType, []byte, error) { return readLoose(dir, h) })
	if err != nil {
		return t, b, err
	}
	if got := ObjectID(t, b); got != h {
		return plumbing.InvalidObject, nil, fmt.Errorf("%w: object %s reads as %s", ErrCorrupt, h, got)
	}
	return t, b, nil
}

// ObjectID is the id git gives an object of type t holding b.
func ObjectID(t plumbing.ObjectType, b []byte) plumbing.Hash {
	d := sha1.New()
	d.Write(t.Bytes())
	d.Write([]byte{' '})
	d.Write(strconv.AppendInt(nil, int64(len(b)), 10))
	d.Write([]byte{0})
	d.Write(b)
	var h plumbing.Hash
	d.Sum(h[:0])
	return h
}

// lookup finds h in the object directories, in order (packs, then the
// loose object), listing the packs again where they changed when it is
// found nowhere, and answers with packed or loose.
func lookup[T any](o *Reader, h plumbing.Hash, depth int,
	packed func(p *pack, off int64) (plumbing.ObjectType, T, error),
	loose func(dir string) (plumbing.ObjectType, T, error),
) (plumbing.ObjectType, T, error) {
	var zero T
	if o.isClosed() {
		return plumbing.InvalidObject, zero, ErrClosed
	}
	if depth > maxDeltaChain {
		return plumbing.InvalidObject, zero, fmt.Errorf("%w: delta chain too deep at %s", ErrCorrupt, h)
	}
	for rescan := range 2 {
		for _, d := range o.dirs {
			if rescan == 1 && !d.rescanIfChanged() {
				continue
			}
			if p, off, ok := d.find(h); ok {
				t, v, err := packed(p, off)
				p.release()
				if err != nil {
					return plumbing.InvalidObject, zero, fmt.Errorf("object %s in %s: %w", h, p.name, err)
				}
				return t, v, nil
			}
			if rescan == 1 {
				continue
			}
			t, v, err := loose(d.path)
			if err == nil {
				return t, v, nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return plumbing.InvalidObject, zero, fmt.Errorf("loose object %s: %w", h, err)
			}
		}
	}
	return plumbing.InvalidObject, zero, fmt.Errorf("object %s: %w", h, plumbing.ErrObjectNotFound)
}

// find looks h up in d's packs, listing them first if never done. The
// pack it returns is held (see pack.release).
func (d *objDir) find(h plumbing.Hash) (*pack, int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i, off, ok := d.locateLocked(h)
	if !ok {
		return nil, 0, false
	}
	p := d.packs[i]
	p.refs.Add(1)
	return p, off, true
}

// locateLocked returns the index in d.packs of the pack holding h and
// its offset there, listing the packs first if never done. d.mu must be
// held.
func (d *objDir) locateLocked(h plumbing.Hash) (int, int64, bool) {
	if !d.scanned {
		d.scanLocked()
	}
	for i, p := range d.packs {
		if off, ok := p.idx.lookup(h); ok {
			return i, off, true
		}
	}
	return 0, 0, false
}

// Refresh lists the packs again in each directory whose objects/pack
// changed since they were listed. Reads do so themselves when they miss;
// Refresh also closes, without waiting for a miss, the packs git removed
// (gc, repack), whose disk space their open files would hold.
func (o *Reader) Refresh() {
	if o.isClosed() {
		return
	}
	for _, d := range o.dirs {
		d.rescanIfChanged()
	}
}

// rescanIfChanged lists objects/pack again if its mtime moved since the
// last listing (git repacked) and reports whether it did.
func (d *objDir) rescanIfChanged() bool {
	fi, err := os.Stat(filepath.Join(d.path, "pack"))
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.scanned && (err != nil || fi.ModTime().Equal(d.packStamp)) {
		return false
	}
	d.scanLocked()
	return true
}

// scanLocked lists the packs: those still present are kept, new ones are
// opened, vanished ones dropped. A pack that cannot be read is skipped
// (go-git answers for it). d.mu must be held.
func (d *objDir) scanLocked() {
	d.scanned = true
	if d.closed {
		return
	}
	dir := filepath.Join(d.path, "pack")
	fi, err := os.Stat(dir)
	if err != nil {
		for _, p := range d.packs {
			p.drop()
		}
		d.packs = nil
		return
	}
	d.packStamp = fi.ModTime()
	names, _ := filepath.Glob(filepath.Join(dir, "pack-*.idx"))
	sort.Strings(names)
	old := make(map[string]*pack, len(d.packs))
	for _, p := range d.packs {
		old[p.name] = p
	}
	var packs []*pack
	for _, idxPath := range names {
		name := strings.TrimSuffix(filepath.Base(idxPath), ".idx")
		if p, ok := old[name]; ok {
			packs = append(packs, p)
			delete(old, name)
			continue
		}
		p, err := openPack(dir, name)
		if err != nil {
			continue
		}
		packs = append(packs, p)
	}
	for _, p := range old {
		p.drop()
	}
	d.packs = packs
}

// readLoose reads and inflates objects/xx/yyyy.
func readLoose(dir string, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	t, size, zr, err := openLoose(dir, h)
	if err != nil {
		return plumbing.InvalidObject, nil, err
	}
	defer zr.Close()
	out := make([]byte, size)
	if err := inflateExact(zr, out); err != nil {
		return plumbing.InvalidObject, nil, err
	}
	return t, out, nil
}

// openLoose reads loose object h's header and returns its type and size
// with the inflating reader positioned at the content.
func openLoose(dir string, h plumbing.Hash) (plumbing.ObjectType, int64, io.ReadCloser, error) {
	s := h.String()
	raw, err := os.ReadFile(filepath.Join(dir, s[:2], s[2:]))
	if err != nil {
		return plumbing.InvalidObject, 0, nil, err
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		return plumbing.InvalidObject, 0, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	fail := func(err error) (plumbing.ObjectType, int64, io.ReadCloser, error) {
		zr.Close()
		return plumbing.InvalidObject, 0, nil, err
	}
	var hdr [64]byte
	n := 0
	for {
		if n == len(hdr) {
			return fail(fmt.Errorf("%w: loose header too long", ErrCorrupt))
		}
		if _, err := io.ReadFull(zr, hdr[n:n+1]); err != nil {
			return fail(fmt.Errorf("%w: loose header: %v", ErrCorrupt, err))
		}
		if hdr[n] == 0 {
			break
		}
		n++
	}
	typName, sizeStr, ok := strings.Cut(string(hdr[:n]), " ")
	t, terr := plumbing.ParseObjectType(typName)
	size, serr := strconv.ParseInt(sizeStr, 10, 64)
	if !ok || terr != nil || serr != nil || size < 0 || !t.Valid() || t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
		return fail(fmt.Errorf("%w: loose header %q", ErrCorrupt, hdr[:n]))
	}
	if size > maxInflated(int64(len(raw))) {
		return fail(fmt.Errorf("%w: loose size %d from %d bytes", ErrCorrupt, size, len(raw)))
	}
	return t, size, zr, nil
}

// Size returns object h's type and size, inflating no content: only a
// loose object's header or a delta's first bytes.
func (o *Reader) Size(h plumbing.Hash) (t plumbing.ObjectType, n int64, err error) {
	defer catchFault(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return o.sizeDepth(h, 0)
}

func (o *Reader) sizeDepth(h plumbing.Hash, depth int) (plumbing.ObjectType, int64, error) {
	return lookup(o, h, depth,
		func(p *pack, off int64) (plumbing.ObjectType, int64, error) { return o.packedSize(p, off, depth) },
		func(dir string) (plumbing.ObjectType, int64, error) {
			t, n, zr, err := openLoose(dir, h)
			if err == nil {
				zr.Close()
			}
			return t, n, err
		})
}

// packedSize returns the type and size of the object at off in p: a
// delta's size is its target size, its type the base's at the chain's
// end.
func (o *Reader) packedSize(p *pack, off int64, depth int) (plumbing.ObjectType, int64, error) {
	e, err := p.header(off)
	if err != nil {
		return plumbing.InvalidObject, 0, err
	}
	if e.typ != plumbing.OFSDeltaObject && e.typ != plumbing.REFDeltaObject {
		return e.typ, e.size, nil
	}
	// Two varints of at most ten bytes each start the delta.
	prefix, err := p.inflateSome(e.data, min(e.size, 20))
	if err != nil {
		return plumbing.InvalidObject, 0, err
	}
	_, rest, err := deltaVarint(prefix)
	if err != nil {
		return plumbing.InvalidObject, 0, err
	}
	n, _, err := deltaVarint(rest)
	if err != nil || n > 1<<62 {
		return plumbing.InvalidObject, 0, fmt.Errorf("%w: delta header at %d", ErrCorrupt, off)
	}
	cur := e
	for range maxDeltaChain - depth {
		switch cur.typ {
		case plumbing.OFSDeltaObject:
			if cur, err = p.header(cur.baseOff); err != nil {
				return plumbing.InvalidObject, 0, err
			}
		case plumbing.REFDeltaObject:
			if boff, ok := p.idx.lookup(cur.baseRef); ok {
				if cur, err = p.header(boff); err != nil {
					return plumbing.InvalidObject, 0, err
				}
				continue
			}
			t, _, err := o.sizeDepth(cur.baseRef, depth+1)
			if err != nil {
				return plumbing.InvalidObject, 0, fmt.Errorf("delta base %s: %w", cur.baseRef, err)
			}
			return t, int64(n), nil
		default:
			return cur.typ, int64(n), nil
		}
	}
	return plumbing.InvalidObject, 0, fmt.Errorf("%w: delta chain too deep", ErrCorrupt)
}

// maxInflated is the most that n bytes of deflate data can inflate to
// (deflate's best ratio is about 1032:1), plus slack for headers.
func maxInflated(n int64) int64 {
	return n*1032 + 1024
}

// inflateExact fills out from zr and checks that the stream ends there
// (which also checks zlib's checksum).
func inflateExact(zr io.Reader, out []byte) error {
	if _, err := io.ReadFull(zr, out); err != nil {
		return fmt.Errorf("%w: inflate: %v", ErrCorrupt, err)
	}
	var one [1]byte
	n, err := zr.Read(one[:])
	for n == 0 && err == nil {
		n, err = zr.Read(one[:])
	}
	if n != 0 {
		return fmt.Errorf("%w: inflate: more data than the stated size", ErrCorrupt)
	}
	if err != io.EOF {
		return fmt.Errorf("%w: inflate: %v", ErrCorrupt, err)
	}
	return nil
}

// pack is one open pack file with its index.
type pack struct {
	name string // pack-<id>
	f    *os.File
	// data is the whole file mapped into memory, or nil where mapping is
	// not available or the pack is larger than maxMappedPack: then it is
	// read with ReadAt. Reading a delta chain from a mapping costs no
	// system call per object.
	data []byte
	end  int64 // where object data ends: the file size less the trailer
	idx  *packIndex
	// idxData is the index file's mapping that idx points into, nil
	// when it was read into memory instead.
	idxData []byte

	// refs counts reads under way plus one while the pack is listed
	// (raised only under its objDir's mu, while listed). The file is
	// closed when it reaches zero.
	refs atomic.Int32
}

// maxMappedPack is the largest pack whose data is mapped; a larger one is
// read with ReadAt. A read from a mapping makes the system map what
// surrounds it as well (a whole large folio of the page cache, up to
// megabytes), so a first view reading a thousand blobs through their
// delta chains, scattered over a pack of 65.7 MiB (the bench's 300,000
// files), left 58.5 MiB of it mapped and counted in the daemon's
// resident size: its peak was 227-234 MiB mapped, 185-187 MiB read (the
// same time to ready). A small pack costs at most its size mapped, and saves a
// system call per object.
var maxMappedPack int64 = 32 << 20 // a variable for the tests of the other path

// openPack opens pack dir/name.idx and dir/name.pack.
func openPack(dir, name string) (_ *pack, err error) {
	raw, mapped, err := readIndexFile(filepath.Join(dir, name+".idx"))
	if err != nil {
		return nil, err
	}
	if mapped {
		defer func() {
			if err != nil {
				unmapFile(raw)
			}
		}()
	}
	idx, err := parsePackIndex(raw)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, name+".pack"))
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	var hdr [12]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil || fi.Size() < 32 {
		f.Close()
		return nil, fmt.Errorf("%s: %w: short pack", name, ErrCorrupt)
	}
	v := binary.BigEndian.Uint32(hdr[4:])
	if string(hdr[:4]) != "PACK" || (v != 2 && v != 3) || binary.BigEndian.Uint32(hdr[8:]) != uint32(idx.n) {
		f.Close()
		return nil, fmt.Errorf("%s: %w: bad pack header", name, ErrCorrupt)
	}
	p := &pack{name: name, f: f, end: fi.Size() - 20, idx: idx}
	if mapped {
		p.idxData = raw
	}
	if fi.Size() <= maxMappedPack {
		if data, err := mapFile(f, fi.Size()); err == nil {
			p.data = data
		}
	}
	p.refs.Store(1)
	return p, nil
}

// readIndexFile returns a pack index's bytes: the file mapped where the
// system allows (then mapped is true and the bytes are unmapped when the
// pack closes), else read into memory. git never rewrites an index in
// place, so the mapping holds the file as it was opened.
func readIndexFile(name string) (b []byte, mapped bool, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if b, err := mapFile(f, fi.Size()); err == nil {
		return b, true, nil
	}
	b, err = io.ReadAll(f)
	return b, false, err
}

// release ends a read begun by objDir.find.
func (p *pack) release() {
	if p.refs.Add(-1) == 0 {
		p.close()
	}
}

// drop unlists p: its file closes once the reads under way end.
func (p *pack) drop() error {
	if p.refs.Add(-1) == 0 {
		return p.close()
	}
	return nil
}

func (p *pack) close() error {
	if p.data != nil {
		unmapFile(p.data)
		p.data = nil
	}
	if p.idxData != nil {
		unmapFile(p.idxData)
		p.idxData = nil
	}
	return p.f.Close()
}

// packIndex is a version-2 pack index: its tables are slices of the
// mapped (or read) file, never copied.
type packIndex struct {
	n      int
	fanout [256]uint32
	names  []byte // n*20
	off32  []byte // n*4
	off64  []byte // 8 per large offset
}

// parsePackIndex decodes a version-2 .idx file.
func parsePackIndex(b []byte) (*packIndex, error) {
	if len(b) < 8+1024 || string(b[:4]) != "\xfftOc" || binary.BigEndian.Uint32(b[4:]) != 2 {
		return nil, fmt.Errorf("%w: not a version 2 pack index", ErrCorrupt)
	}
	x := &packIndex{}
	prev := uint32(0)
	for i := range 256 {
		v := binary.BigEndian.Uint32(b[8+4*i:])
		if v < prev {
			return nil, fmt.Errorf("%w: pack index fanout not sorted", ErrCorrupt)
		}
		x.fanout[i], prev = v, v
	}
	n := int(x.fanout[255])
	x.n = n
	rest := b[8+1024:]
	if n > len(rest)/28 || len(rest) < n*28+40 {
		return nil, fmt.Errorf("%w: pack index too short", ErrCorrupt)
	}
	x.names = rest[:n*20]
	x.off32 = rest[n*24 : n*28]
	x.off64 = rest[n*28 : len(rest)-40]
	if len(x.off64)%8 != 0 {
		return nil, fmt.Errorf("%w: pack index large-offset table", ErrCorrupt)
	}
	return x, nil
}

// lookup returns h's offset in the pack.
func (x *packIndex) lookup(h plumbing.Hash) (int64, bool) {
	lo := 0
	if h[0] > 0 {
		lo = int(x.fanout[h[0]-1])
	}
	hi := int(x.fanout[h[0]])
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		c := bytes.Compare(x.names[m*20:m*20+20], h[:])
		switch {
		case c == 0:
			return x.offset(m)
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0, false
}

func (x *packIndex) offset(i int) (int64, bool) {
	v := binary.BigEndian.Uint32(x.off32[i*4:])
	if v&0x80000000 == 0 {
		return int64(v), true
	}
	j := int(v & 0x7fffffff)
	if j >= len(x.off64)/8 {
		return 0, false
	}
	o := binary.BigEndian.Uint64(x.off64[j*8:])
	if o > 1<<62 {
		return 0, false
	}
	return int64(o), true
}

// packEntry is an object's header in a pack.
type packEntry struct {
	typ     plumbing.ObjectType
	size    int64 // inflated size (of the delta, for delta entries)
	data    int64 // offset of the zlib stream
	baseOff int64 // OFS_DELTA: the base's offset
	baseRef plumbing.Hash
}

// header reads the entry at off.
func (p *pack) header(off int64) (packEntry, error) {
	var e packEntry
	if off < 12 || off >= p.end {
		return e, fmt.Errorf("%w: offset %d outside the pack", ErrCorrupt, off)
	}
	var buf [64]byte
	var b []byte
	if p.data != nil {
		b = p.data[off:min(off+int64(len(buf)), p.end)]
	} else {
		n, err := p.f.ReadAt(buf[:min(int64(len(buf)), p.end-off)], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return e, err
		}
		b = buf[:n]
	}
	i := 0
	next := func() (byte, bool) {
		if i >= len(b) {
			return 0, false
		}
		c := b[i]
		i++
		return c, true
	}
	c, ok := next()
	if !ok {
		return e, fmt.Errorf("%w: truncated entry at %d", ErrCorrupt, off)
	}
	e.typ = plumbing.ObjectType((c >> 4) & 7)
	size := uint64(c & 15)
	shift := uint(4)
	for c&0x80 != 0 {
		if c, ok = next(); !ok || shift > 56 {
			return e, fmt.Errorf("%w: bad entry size at %d", ErrCorrupt, off)
		}
		size |= uint64(c&0x7f) << shift
		shift += 7
	}
	if size > 1<<62 {
		return e, fmt.Errorf("%w: bad entry size at %d", ErrCorrupt, off)
	}
	e.size = int64(size)
	switch e.typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		c, ok := next()
		if !ok {
			return e, fmt.Errorf("%w: truncated delta offset at %d", ErrCorrupt, off)
		}
		rel := uint64(c & 0x7f)
		for c&0x80 != 0 {
			if c, ok = next(); !ok || rel >= 1<<55 {
				return e, fmt.Errorf("%w: bad delta offset at %d", ErrCorrupt, off)
			}
			rel = ((rel + 1) << 7) | uint64(c&0x7f)
		}
		if rel == 0 || rel > uint64(off) {
			return e, fmt.Errorf("%w: delta base offset out of range at %d", ErrCorrupt, off)
		}
		e.baseOff = off - int64(rel)
	case plumbing.REFDeltaObject:
		if i+20 > len(b) {
			return e, fmt.Errorf("%w: truncated delta base at %d", ErrCorrupt, off)
		}
		copy(e.baseRef[:], b[i:i+20])
		i += 20
	default:
		return e, fmt.Errorf("%w: object type %d at %d", ErrCorrupt, e.typ, off)
	}
	e.data = off + int64(i)
	if e.size > maxInflated(p.end-e.data) {
		return e, fmt.Errorf("%w: entry size %d at %d exceeds the pack", ErrCorrupt, e.size, off)
	}
	return e, nil
}

// inflaters keeps zlib readers and their buffered input for reuse.
var inflaters sync.Pool

type inflater struct {
	br *bufio.Reader // over a pack file
	mr bytes.Reader  // over a mapped pack
	zr io.ReadCloser
}

// inflate reads the zlib stream at off, which must inflate to size
// bytes.
func (p *pack) inflate(off, size int64) ([]byte, error) {
	return p.inflateN(off, size, true)
}

// inflateSome reads the first n bytes of the zlib stream at off.
func (p *pack) inflateSome(off, n int64) ([]byte, error) {
	return p.inflateN(off, n, false)
}

func (p *pack) inflateN(off, size int64, whole bool) ([]byte, error) {
	in, _ := inflaters.Get().(*inflater)
	if in == nil {
		in = &inflater{br: bufio.NewReaderSize(nil, 4096)}
	}
	// zlib reads a mapping directly (bytes.Reader is an io.ByteReader),
	// a file through a buffer.
	var src io.Reader
	if p.data != nil {
		in.mr.Reset(p.data[off:p.end])
		src = &in.mr
	} else {
		in.br.Reset(io.NewSectionReader(p.f, off, p.end-off))
		src = in.br
	}
	var err error
	if in.zr == nil {
		in.zr, err = zlib.NewReader(src)
	} else {
		err = in.zr.(zlib.Resetter).Reset(src, nil)
	}
	if err != nil {
		in.zr = nil
		inflaters.Put(in)
		return nil, fmt.Errorf("%w: zlib at %d: %v", ErrCorrupt, off, err)
	}
	out := make([]byte, size)
	if whole {
		err = inflateExact(in.zr, out)
	} else if _, err = io.ReadFull(in.zr, out); err != nil {
		err = fmt.Errorf("%w: inflate: %v", ErrCorrupt, err)
	}
	in.br.Reset(nil)
	in.mr.Reset(nil)
	inflaters.Put(in)
	if err != nil {
		return nil, fmt.Errorf("at %d: %w", off, err)
	}
	return out, nil
}

// readPacked returns the object at off in p, resolving its delta chain.
// Bases met on the way are kept in the cache; the result is a fresh
// slice.
func (o *Reader) readPacked(p *pack, off int64, depth int) (plumbing.ObjectType, []byte, error) {
	type step struct {
		off  int64
		size int64
		data int64
	}
	var chain []step
	var typ plumbing.ObjectType
	var base []byte
	cur := off
	for {
		if len(chain) > 0 {
			if t, b, ok := o.cache.get(p, cur); ok {
				typ, base = t, b
				break
			}
		}
		if len(chain)+depth > maxDeltaChain {
			return plumbing.InvalidObject, nil, fmt.Errorf("%w: delta chain too deep", ErrCorrupt)
		}
		e, err := p.header(cur)
		if err != nil {
			return plumbing.InvalidObject, nil, err
		}
		if e.typ == plumbing.OFSDeltaObject {
			chain = append(chain, step{cur, e.size, e.data})
			cur = e.baseOff
			continue
		}
		if e.typ == plumbing.REFDeltaObject {
			chain = append(chain, step{cur, e.size, e.data})
			if boff, ok := p.idx.lookup(e.baseRef); ok {
				cur = boff
				continue
			}
			t, b, err := o.readDepth(e.baseRef, depth+len(chain))
			if err != nil {
				return plumbing.InvalidObject, nil, fmt.Errorf("delta base %s: %w", e.baseRef, err)
			}
			typ, base = t, b
			break
		}
		b, err := p.inflate(e.data, e.size)
		if err != nil {
			return plumbing.InvalidObject, nil, err
		}
		typ, base = e.typ, b
		if len(chain) > 0 {
			o.cache.put(p, cur, typ, base)
		}
		break
	}
	for i := len(chain) - 1; i >= 0; i-- {
		s := chain[i]
		delta, err := p.inflate(s.data, s.size)
		if err != nil {
			return plumbing.InvalidObject, nil, err
		}
		out, err := applyDelta(base, delta)
		if err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("delta at %d: %w", s.off, err)
		}
		base = out
		if i > 0 {
			o.cache.put(p, s.off, typ, base)
		}
	}
	return typ, base, nil
}

// deltaVarint decodes a delta header size.
func deltaVarint(d []byte) (uint64, []byte, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if len(d) == 0 || shift > 63 {
			return 0, nil, fmt.Errorf("%w: delta header", ErrCorrupt)
		}
		c := d[0]
		d = d[1:]
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, d, nil
		}
	}
}

// applyDelta applies a git delta to src. Every size and range is checked;
// a malformed delta gives an error wrapping ErrCorrupt.
func applyDelta(src, delta []byte) ([]byte, error) {
	srcSize, d, err := deltaVarint(delta)
	if err != nil {
		return nil, err
	}
	if srcSize != uint64(len(src)) {
		return nil, fmt.Errorf("%w: delta source size %d, base is %d", ErrCorrupt, srcSize, len(src))
	}
	dstSize, d, err := deltaVarint(d)
	if err != nil {
		return nil, err
	}
	// Each op yields at most the source's size or 127 inserted bytes;
	// a larger target is a corrupt header, not an allocation to try.
	if dstSize > uint64(len(d))*uint64(max(len(src), 0x7f)) {
		return nil, fmt.Errorf("%w: delta target size %d", ErrCorrupt, dstSize)
	}
	out := make([]byte, 0, dstSize)
	for len(d) > 0 {
		cmd := d[0]
		d = d[1:]
		switch {
		case cmd&0x80 != 0:
			var off, n uint64
			for i := range 7 {
				if cmd&(1<<i) == 0 {
					continue
				}
				if len(d) == 0 {
					return nil, fmt.Errorf("%w: truncated delta copy", ErrCorrupt)
				}
				if i < 4 {
					off |= uint64(d[0]) << (8 * i)
				} else {
					n |= uint64(d[0]) << (8 * (i - 4))
				}
				d = d[1:]
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(src)) || uint64(len(out))+n > dstSize {
				return nil, fmt.Errorf("%w: delta copy out of range", ErrCorrupt)
			}
			out = append(out, src[off:off+n]...)
		case cmd != 0:
			n := int(cmd)
			if n > len(d) || uint64(len(out)+n) > dstSize {
				return nil, fmt.Errorf("%w: delta insert out of range", ErrCorrupt)
			}
			out = append(out, d[:n]...)
			d = d[n:]
		default:
			return nil, fmt.Errorf("%w: delta opcode 0", ErrCorrupt)
		}
	}
	if uint64(len(out)) != dstSize {
		return nil, fmt.Errorf("%w: delta gave %d bytes, header says %d", ErrCorrupt, len(out), dstSize)
	}
	return out, nil
}

// deltaCacheBytes bounds the delta-base cache. What the daemon reads
// from packs is one version of each of many paths (HEAD's side of the
// changed files, a merge base's): at 16 MiB the cache held some 12 MiB
// of bases nothing read again after a first view, and its peak resident
// size with them. Objects that share a chain are read one after the
// other when they are read in pack order (scm.Repo.PackOrder), which a
// small cache serves as well (BenchmarkReadBlobs, whose thousand blobs
// all share one chain, reads as fast at 1 MiB).
const deltaCacheBytes = 1 << 20

// deltaCache is a least-recently-used cache of delta bases by pack and
// offset, bounded in bytes. Its contents are never handed to callers.
type deltaCache struct {
	mu   sync.Mutex
	max  int
	size int
	ll   list.List
	m    map[cacheKey]*list.Element
}

type cacheKey struct {
	p   *pack
	off int64
}

type cached struct {
	key cacheKey
	typ plumbing.ObjectType
	b   []byte
}

func (c *deltaCache) get(p *pack, off int64) (plumbing.ObjectType, []byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[cacheKey{p, off}]
	if !ok {
		return plumbing.InvalidObject, nil, false
	}
	c.ll.MoveToFront(el)
	v := el.Value.(*cached)
	return v.typ, v.b, true
}

func (c *deltaCache) put(p *pack, off int64, t plumbing.ObjectType, b []byte) {
	if len(b) > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{p, off}
	if _, ok := c.m[k]; ok {
		return
	}
	if c.m == nil {
		c.m = make(map[cacheKey]*list.Element)
	}
	c.m[k] = c.ll.PushFront(&cached{key: k, typ: t, b: b})
	c.size += len(b)
	for c.size > c.max {
		el := c.ll.Back()
		v := el.Value.(*cached)
		c.ll.Remove(el)
		delete(c.m, v.key)
		c.size -= len(v.b)
	}
}

func (c *deltaCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
	c.ll.Init()
	c.size = 0
}
