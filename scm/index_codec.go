package scm

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// The index is read and written by our own codec rather than go-git's,
// whose decoder stops at a split index ("link" extension, core.splitIndex
// or git update-index --split-index), drops the assume-valid bit and
// whose encoder writes no extensions. It reads versions 2 to 4 (4 is what
// feature.manyFiles selects), keeps every extension's bytes, parses the
// cache-tree (TREE) and merges a split index into its shared index as
// git's merge_base_index does. Entries come out as go-git index entries,
// with the same conventions as go-git's decoder (a zero timestamp is the
// zero time), so the rest of the package is unchanged; the one on-disk
// flag they cannot carry, assume-valid, is kept beside them by entry.

// indexFile is a decoded index, split index already merged.
type indexFile struct {
	version uint32
	entries []*index.Entry // in index order: by name, then stage
	// assumeValid holds the entries with the assume-valid bit
	// ("update-index --assume-unchanged"), which go-git's entries cannot
	// carry. Keyed by entry, so that an entry carried unchanged into a
	// new index keeps its bit and a replaced one loses it.
	assumeValid map[*index.Entry]bool
	split       bool // read through a "link" extension
	// sparse: a sparse index (the "sdir" extension, index.sparse): some
	// entries are directories outside the sparse-checkout cone, named
	// with a trailing slash, standing for the whole tree they name (see
	// isSparseDir).
	sparse bool
	// tree is the cache-tree extension (TREE), invalid entries included;
	// nil when absent, unreadable, or for a split index.
	tree *treeNode
	// exts are the extensions of the index file, in file order.
	exts []extension
}

// extension is one extension of an index file.
type extension struct {
	sig  string
	data []byte
}

// ext returns the data of the extension sig, or nil.
func (x *indexFile) ext(sig string) []byte {
	for _, e := range x.exts {
		if e.sig == sig {
			return e.data
		}
	}
	return nil
}

// validTree returns the valid cache-tree entries by directory ("" is the
// root); nil when the index has no cache-tree.
func (x *indexFile) validTree() map[string]cacheTree {
	if x.tree == nil {
		return nil
	}
	out := map[string]cacheTree{}
	var walk func(n *treeNode, p string)
	walk = func(n *treeNode, p string) {
		if n.count >= 0 {
			out[p] = cacheTree{count: n.count, oid: n.oid}
		}
		for _, d := range n.down {
			if p == "" {
				walk(d, d.name)
			} else {
				walk(d, p+"/"+d.name)
			}
		}
	}
	walk(x.tree, "")
	return out
}

// cacheTree is one valid cache-tree entry: git's promise that writing the
// index entries below the directory as a tree gives oid, and that there
// are count of them. git invalidates an entry (and its parents) whenever
// an entry below it changes, is unmerged or is intent-to-add, so a valid
// entry whose oid equals HEAD's tree for that directory means the index
// and HEAD agree on every path below it.
type cacheTree struct {
	count int
	oid   plumbing.Hash
}

// treeNode is one entry of a TREE extension as stored: count is negative
// for an invalidated entry, which then has no oid; down keeps the file's
// order of subtrees.
type treeNode struct {
	name  string
	count int
	oid   plumbing.Hash
	down  []*treeNode
}

// invalidate is git's cache_tree_invalidate_path: the entries of the
// root and of every directory above path become invalid (count -1), and
// a subtree named path itself is dropped (the path is now a file, or its
// entries are gone). Entries of untouched directories stay valid, so git
// (and fromCacheTree) can still skip them.
func (n *treeNode) invalidate(path string) {
	n.count = -1
	name, rest, more := strings.Cut(path, "/")
	for i, d := range n.down {
		if d.name != name {
			continue
		}
		if more {
			d.invalidate(rest)
		} else {
			n.down = slices.Delete(n.down, i, i+1)
		}
		return
	}
}

// parseCacheTree decodes a TREE extension. It returns nil for data it
// cannot read: the extension is optional and only a shortcut.
func parseCacheTree(d []byte) *treeNode {
	var entry func() *treeNode
	entry = func() *treeNode {
		i := bytes.IndexByte(d, 0)
		if i < 0 {
			return nil
		}
		n := &treeNode{name: string(d[:i])}
		d = d[i+1:]
		j := bytes.IndexByte(d, '\n')
		if j < 0 {
			return nil
		}
		cnt, sub, ok := strings.Cut(string(d[:j]), " ")
		if !ok {
			return nil
		}
		d = d[j+1:]
		count, err1 := strconv.Atoi(cnt)
		subs, err2 := strconv.Atoi(sub)
		// Each subtree takes at least 5 bytes ("\x000 0\n" is 6), which
		// bounds subs and the recursion by the data left.
		if err1 != nil || err2 != nil || subs < 0 || subs > len(d)/5 {
			return nil
		}
		n.count = count
		if count >= 0 {
			if len(d) < 20 {
				return nil
			}
			copy(n.oid[:], d[:20])
			d = d[20:]
		}
		for range subs {
			c := entry()
			// A subtree is one path component.
			if c == nil || c.name == "" || strings.Contains(c.name, "/") {
				return nil
			}
			n.down = append(n.down, c)
		}
		return n
	}
	// The root entry has an empty name.
	root := entry()
	if root == nil || root.name != "" || len(d) != 0 {
		return nil
	}
	return root
}

// encodeCacheTree encodes n as TREE extension data (git's write_one).
func encodeCacheTree(n *treeNode) []byte {
	var b []byte
	var one func(n *treeNode)
	one = func(n *treeNode) {
		b = append(b, n.name...)
		b = append(b, 0)
		b = strconv.AppendInt(b, int64(n.count), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(len(n.down)), 10)
		b = append(b, '\n')
		if n.count >= 0 {
			b = append(b, n.oid[:]...)
		}
		for _, d := range n.down {
			one(d)
		}
	}
	one(n)
	return b
}

// readIndexFile reads the index at path; shared indexes are looked up in
// gitDir, then next to the index, as git does.
func readIndexFile(path, gitDir string) (*indexFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeIndex(b, sharedIndexReader(path, gitDir))
}

// sharedIndexReader reads the shared indexes of the index at path.
func sharedIndexReader(path, gitDir string) func(sha string) ([]byte, error) {
	return func(sha string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(gitDir, "sharedindex."+sha))
		if errors.Is(err, fs.ErrNotExist) {
			b, err = os.ReadFile(filepath.Join(filepath.Dir(path), "sharedindex."+sha))
		}
		return b, err
	}
}

// linkExt is a split index's "link" extension.
type linkExt struct {
	shared          string // hex id of the shared index; all zeros: none
	delete, replace []int  // positions in the shared index, ascending
}

// decodeIndex decodes index file b. shared reads a shared index by id.
func decodeIndex(b []byte, shared func(sha string) ([]byte, error)) (*indexFile, error) {
	x, link, err := decodeIndexOnly(b)
	if err != nil {
		return nil, err
	}
	if link != nil {
		x.tree = nil // describes the merged index; not worth the doubt
	}
	if link == nil || strings.Trim(link.shared, "0") == "" {
		if link != nil {
			x.split = true
		}
		return x, nil
	}
	sb, err := shared(link.shared)
	if err != nil {
		return nil, fmt.Errorf("scm: index: split index: read shared index %s: %w", link.shared, err)
	}
	base, baseLink, err := decodeIndexOnly(sb)
	if err != nil {
		return nil, fmt.Errorf("scm: index: shared index %s: %w", link.shared, err)
	}
	if baseLink != nil {
		return nil, fmt.Errorf("scm: index: shared index %s is itself split", link.shared)
	}
	return mergeSplit(x, base, link)
}

// mergeSplit applies a split index to its shared index: the first
// len(replace) entries of the split index (written without names) replace
// the shared entries at the replace positions, the delete positions are
// dropped, and the remaining split entries are added, each replacing a
// shared entry of the same name and stage. Every entry keeps the
// assume-valid bit of the file it came from.
func mergeSplit(x, base *indexFile, link *linkExt) (*indexFile, error) {
	out := slices.Clone(base.entries)
	from := func(e *index.Entry) bool { return base.assumeValid[e] || x.assumeValid[e] }
	if len(link.replace) > len(x.entries) {
		return nil, fmt.Errorf("scm: index: split index replaces %d entries but holds %d", len(link.replace), len(x.entries))
	}
	replaced := map[*index.Entry]bool{}
	for i, pos := range link.replace {
		if pos >= len(out) {
			return nil, fmt.Errorf("scm: index: split index replaces entry %d of %d", pos, len(out))
		}
		src := x.entries[i]
		if src.Name != "" {
			return nil, fmt.Errorf("scm: index: split index: replacing entry %d has a name", i)
		}
		e := *src
		e.Name = out[pos].Name
		if x.assumeValid[src] {
			replaced[&e] = true
		}
		out[pos] = &e
	}
	if len(link.delete) > 0 {
		del := make([]bool, len(out))
		for _, pos := range link.delete {
			if pos >= len(out) {
				return nil, fmt.Errorf("scm: index: split index deletes entry %d of %d", pos, len(out))
			}
			del[pos] = true
		}
		kept := out[:0]
		for i, e := range out {
			if !del[i] {
				kept = append(kept, e)
			}
		}
		out = kept
	}
	added := x.entries[len(link.replace):]
	if len(added) > 0 {
		byKey := make(map[entryKey]int, len(out))
		for i, e := range out {
			byKey[entryKey{e.Name, int(e.Stage)}] = i
		}
		for _, e := range added {
			if e.Name == "" {
				return nil, fmt.Errorf("scm: index: split index: added entry without a name")
			}
			k := entryKey{e.Name, int(e.Stage)}
			if i, ok := byKey[k]; ok {
				out[i] = e
			} else {
				out = append(out, e)
			}
		}
		slices.SortStableFunc(out, compareEntries)
	}
	av := map[*index.Entry]bool{}
	for _, e := range out {
		if from(e) || replaced[e] {
			av[e] = true
		}
	}
	return &indexFile{version: x.version, entries: out, assumeValid: av, split: true, sparse: x.sparse || base.sparse, exts: x.exts}, nil
}

// isSparseDir reports whether e is a sparse directory entry of a sparse
// index: a skip-worktree tree entry named "dir/", which stands for every
// path of the tree e.Hash below dir.
func isSparseDir(e *index.Entry) bool {
	return e.Mode == filemode.Dir && e.SkipWorktree && strings.HasSuffix(e.Name, "/")
}

// compareEntries orders index entries as git does: by name, then stage.
func compareEntries(a, b *index.Entry) int {
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return int(a.Stage) - int(b.Stage)
}

type entryKey struct {
	name  string
	stage int
}

const (
	entryFixed      = 62 // stat data, id and flags
	flagAssumeValid = 0x8000
	flagExtended    = 0x4000
	extSkipWorktree = 0x4000
	extIntentToAdd  = 0x2000
)

// decodeIndexOnly decodes one index file without following a link.
func decodeIndexOnly(b []byte) (*indexFile, *linkExt, error) {
	version, n, end, err := indexHeader(b)
	if err != nil {
		return nil, nil, err
	}
	x := &indexFile{version: version, entries: make([]*index.Entry, n), assumeValid: map[*index.Entry]bool{}}
	// One allocation for all entries, and one for all names: names are
	// gathered into one buffer and sliced after, so the index keeps only
	// its names, not a copy of the whole file (for version 2 and 3 about
	// a third of it). Version 2 and 3 names lie inside the file, which
	// bounds their total; version 4 names are prefix-compressed and may
	// outgrow it.
	store := make([]index.Entry, n)
	names := make([]byte, 0, nameCapacity(b, version, n, end))
	ends := make([]int, n)
	off, err := readEntries(b, version, n, end, func(i int, r *rawEntry) {
		e := &store[i]
		if r.csec != 0 || r.cnsec != 0 {
			e.CreatedAt = time.Unix(int64(r.csec), int64(r.cnsec))
		}
		if r.msec != 0 || r.mnsec != 0 {
			e.ModifiedAt = time.Unix(int64(r.msec), int64(r.mnsec))
		}
		e.Dev, e.Inode, e.Mode, e.UID, e.GID, e.Size = r.dev, r.inode, filemode.FileMode(r.mode), r.uid, r.gid, r.size
		e.Hash = r.hash
		e.Stage = r.stage
		e.SkipWorktree, e.IntentToAdd = r.skipWorktree, r.intentToAdd
		names = append(names, r.name...)
		ends[i] = len(names)
		if r.assumeValid {
			x.assumeValid[e] = true
		}
		x.entries[i] = e
	})
	if err != nil {
		return nil, nil, err
	}
	all := string(names)
	start := 0
	for i, e := range x.entries {
		e.Name = all[start:ends[i]]
		start = ends[i]
	}
	link, err := readExtensions(b, off, end, x)
	if err != nil {
		return nil, nil, err
	}
	return x, link, nil
}

func badIndex(format string, args ...any) error {
	return fmt.Errorf("scm: index: "+format, args...)
}

// indexHeader checks index file b's header and returns its version, its
// count of entries and where its entries and extensions end (its
// checksum).
func indexHeader(b []byte) (version uint32, n, end int, err error) {
	if len(b) < 12+20 || string(b[:4]) != "DIRC" {
		return 0, 0, 0, badIndex("bad header")
	}
	version = binary.BigEndian.Uint32(b[4:])
	if version < 2 || version > 4 {
		return 0, 0, 0, badIndex("unsupported version %d", version)
	}
	n = int(binary.BigEndian.Uint32(b[8:]))
	end = len(b) - 20
	if n > end/entryFixed {
		return 0, 0, 0, badIndex("%d entries in %d bytes", n, len(b))
	}
	return version, n, end, nil
}

// nameCapacity bounds the bytes of all names of the n entries of b.
func nameCapacity(b []byte, version uint32, n, end int) int {
	if version == 4 {
		return len(b)
	}
	return max(end-12-n*entryFixed, 0)
}

// rawEntry is one index entry as the file holds it. name is valid only
// until the next entry is read.
type rawEntry struct {
	csec, cnsec, msec, mnsec         uint32
	dev, inode, mode, uid, gid, size uint32
	hash                             plumbing.Hash
	stage                            index.Stage
	skipWorktree, intentToAdd        bool
	assumeValid                      bool
	name                             []byte
}

// readEntries reads the n entries of index file b (of the given version,
// its entries and extensions ending at end), calling each with each in
// file order, and returns the offset of the first extension.
func readEntries(b []byte, version uint32, n, end int, each func(i int, r *rawEntry)) (int, error) {
	off := 12
	var prev []byte
	var r rawEntry
	be := binary.BigEndian
	for i := 0; i < n; i++ {
		if off+entryFixed > end {
			return 0, badIndex("truncated entry %d", i)
		}
		r.csec, r.cnsec = be.Uint32(b[off:]), be.Uint32(b[off+4:])
		r.msec, r.mnsec = be.Uint32(b[off+8:]), be.Uint32(b[off+12:])
		r.dev = be.Uint32(b[off+16:])
		r.inode = be.Uint32(b[off+20:])
		r.mode = be.Uint32(b[off+24:])
		r.uid = be.Uint32(b[off+28:])
		r.gid = be.Uint32(b[off+32:])
		r.size = be.Uint32(b[off+36:])
		copy(r.hash[:], b[off+40:off+60])
		flags := be.Uint16(b[off+60:])
		r.stage = index.Stage(flags>>12) & 3
		r.assumeValid = flags&flagAssumeValid != 0
		r.skipWorktree, r.intentToAdd = false, false
		if r.cnsec >= 1e9 || r.mnsec >= 1e9 {
			// time.Unix would carry them into the seconds, and the entry
			// would not encode back as read.
			return 0, badIndex("entry %d: nanoseconds out of range", i)
		}
		p := off + entryFixed
		if flags&flagExtended != 0 {
			if version < 3 {
				return 0, badIndex("extended flags in a version 2 index")
			}
			if p+2 > end {
				return 0, badIndex("truncated entry %d", i)
			}
			ext := be.Uint16(b[p:])
			r.skipWorktree = ext&extSkipWorktree != 0
			r.intentToAdd = ext&extIntentToAdd != 0
			p += 2
		}
		switch version {
		case 2, 3:
			l := int(flags & 0xfff)
			if l == 0xfff {
				j := bytes.IndexByte(b[p:end], 0)
				if j < 0 {
					return 0, badIndex("unterminated name")
				}
				l = j
			}
			if p+l > end {
				return 0, badIndex("truncated name")
			}
			if bytes.IndexByte(b[p:p+l], 0) >= 0 {
				return 0, badIndex("entry %d: name holds a NUL", i)
			}
			r.name = b[p : p+l]
			// Entries are padded with 1-8 NULs to a multiple of 8.
			off += (p - off + l + 8) &^ 7
		case 4:
			// git's offset varint: how much of the previous name to strip.
			var strip int
			for {
				if p >= end {
					return 0, badIndex("truncated name")
				}
				c := b[p]
				p++
				strip = strip<<7 | int(c&0x7f)
				if c&0x80 == 0 {
					break
				}
				strip++
				if strip > len(b) {
					return 0, badIndex("bad name prefix")
				}
			}
			if strip > len(prev) {
				return 0, badIndex("bad name prefix")
			}
			j := bytes.IndexByte(b[p:end], 0)
			if j < 0 {
				return 0, badIndex("unterminated name")
			}
			prev = append(prev[:len(prev)-strip], b[p:p+j]...)
			r.name = prev
			off = p + j + 1
		}
		if off > end {
			return 0, badIndex("truncated entry %d", i)
		}
		each(i, &r)
	}
	return off, nil
}

// readExtensions reads the extensions of index file b from off to end
// into x, and returns its link extension (a split index), if any.
func readExtensions(b []byte, off, end int, x *indexFile) (*linkExt, error) {
	var link *linkExt
	for off+8 <= end {
		sig := string(b[off : off+4])
		size := int(binary.BigEndian.Uint32(b[off+4:]))
		if size < 0 || off+8+size > end {
			return nil, badIndex("truncated extension %q", sig)
		}
		data := b[off+8 : off+8+size]
		x.exts = append(x.exts, extension{sig: sig, data: data})
		switch {
		case sig == "TREE":
			x.tree = parseCacheTree(data)
		case sig == "link":
			l, err := parseLink(data)
			if err != nil {
				return nil, err
			}
			link = l
		case sig == "sdir":
			x.sparse = true
		case sig[0] < 'A' || sig[0] > 'Z':
			return nil, badIndex("required extension %q is not supported", sig)
		}
		off += 8 + size
	}
	return link, nil
}

// encodeIndex encodes entries (in git's order, see compareEntries) as an
// index file of the given version, with the assume-valid bits of
// assumeValid and the extensions exts, checksum included.
func encodeIndex(version uint32, entries []*index.Entry, assumeValid map[*index.Entry]bool, exts []extension) ([]byte, error) {
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("scm: encode index: unsupported version %d", version)
	}
	be := binary.BigEndian
	b := make([]byte, 12, 12+len(entries)*(entryFixed+2+40))
	copy(b, "DIRC")
	be.PutUint32(b[4:], version)
	be.PutUint32(b[8:], uint32(len(entries)))
	var prev string
	for i, e := range entries {
		if strings.IndexByte(e.Name, 0) >= 0 {
			return nil, fmt.Errorf("scm: encode index: entry %q holds a NUL", e.Name)
		}
		if e.Stage > 3 {
			return nil, fmt.Errorf("scm: encode index: entry %s: stage %d", e.Name, e.Stage)
		}
		if i > 0 && compareEntries(entries[i-1], e) > 0 {
			return nil, fmt.Errorf("scm: encode index: entry %s out of order", e.Name)
		}
		start := len(b)
		var fixed [entryFixed]byte
		putTime := func(o int, t time.Time) {
			if !t.IsZero() {
				be.PutUint32(fixed[o:], uint32(t.Unix()))
				be.PutUint32(fixed[o+4:], uint32(t.Nanosecond()))
			}
		}
		putTime(0, e.CreatedAt)
		putTime(8, e.ModifiedAt)
		be.PutUint32(fixed[16:], e.Dev)
		be.PutUint32(fixed[20:], e.Inode)
		be.PutUint32(fixed[24:], uint32(e.Mode))
		be.PutUint32(fixed[28:], e.UID)
		be.PutUint32(fixed[32:], e.GID)
		be.PutUint32(fixed[36:], e.Size)
		copy(fixed[40:], e.Hash[:])
		flags := uint16(min(len(e.Name), 0xfff)) | uint16(e.Stage)<<12
		var ext uint16
		if e.SkipWorktree {
			ext |= extSkipWorktree
		}
		if e.IntentToAdd {
			ext |= extIntentToAdd
		}
		if ext != 0 {
			if version < 3 {
				return nil, fmt.Errorf("scm: encode index: entry %s needs extended flags, which version 2 lacks", e.Name)
			}
			flags |= flagExtended
		}
		if assumeValid[e] {
			flags |= flagAssumeValid
		}
		be.PutUint16(fixed[60:], flags)
		b = append(b, fixed[:]...)
		if ext != 0 {
			b = be.AppendUint16(b, ext)
		}
		if version == 4 {
			common := 0
			for common < len(prev) && common < len(e.Name) && prev[common] == e.Name[common] {
				common++
			}
			b = appendOffsetVarint(b, uint64(len(prev)-common))
			b = append(b, e.Name[common:]...)
			b = append(b, 0)
			prev = e.Name
			continue
		}
		b = append(b, e.Name...)
		// 1 to 8 NULs, to a multiple of 8 from the entry's start.
		pad := 8 - (len(b)-start)%8
		b = append(b, make([]byte, pad)...)
	}
	for _, x := range exts {
		if len(x.sig) != 4 {
			return nil, fmt.Errorf("scm: encode index: extension signature %q", x.sig)
		}
		b = append(b, x.sig...)
		b = be.AppendUint32(b, uint32(len(x.data)))
		b = append(b, x.data...)
	}
	sum := sha1.Sum(b)
	return append(b, sum[:]...), nil
}

// appendOffsetVarint appends v in git's offset varint (varint.c), the
// form version 4 uses for the length stripped from the previous name.
func appendOffsetVarint(b []byte, v uint64) []byte {
	var tmp [16]byte
	pos := len(tmp) - 1
	tmp[pos] = byte(v & 0x7f)
	for v >>= 7; v != 0; v >>= 7 {
		v--
		pos--
		tmp[pos] = 0x80 | byte(v&0x7f)
	}
	return append(b, tmp[pos:]...)
}

func parseLink(d []byte) (*linkExt, error) {
	if len(d) < 20 {
		return nil, fmt.Errorf("scm: index: short link extension")
	}
	l := &linkExt{shared: hex.EncodeToString(d[:20])}
	d = d[20:]
	if len(d) == 0 {
		return l, nil
	}
	var err error
	var n int
	if l.delete, n, err = ewahBits(d); err != nil {
		return nil, fmt.Errorf("scm: index: link extension delete bitmap: %w", err)
	}
	d = d[n:]
	if l.replace, n, err = ewahBits(d); err != nil {
		return nil, fmt.Errorf("scm: index: link extension replace bitmap: %w", err)
	}
	if n != len(d) {
		return nil, fmt.Errorf("scm: index: link extension has %d trailing bytes", len(d)-n)
	}
	return l, nil
}

// ewahBits decodes one of git's serialised EWAH bitmaps (ewah_io.c) at
// the start of d and returns the positions of its set bits, ascending,
// and the bytes it took.
func ewahBits(d []byte) ([]int, int, error) {
	if len(d) < 8 {
		return nil, 0, fmt.Errorf("truncated")
	}
	bitSize := int(binary.BigEndian.Uint32(d))
	words := int(binary.BigEndian.Uint32(d[4:]))
	total := 8 + 8*words + 4
	if words < 0 || words > (len(d)-12)/8 || total > len(d) {
		return nil, 0, fmt.Errorf("truncated")
	}
	w := func(i int) uint64 { return binary.BigEndian.Uint64(d[8+8*i:]) }
	var out []int
	pos := 0
	for i := 0; i < words; {
		rlw := w(i)
		i++
		run := int(rlw >> 1 & 0xffffffff)
		lits := int(rlw >> 33)
		if rlw&1 != 0 {
			if pos+run*64 > bitSize+64 {
				return nil, 0, fmt.Errorf("run past the end")
			}
			for k := 0; k < run*64; k++ {
				out = append(out, pos+k)
			}
		}
		pos += run * 64
		if i+lits > words {
			return nil, 0, fmt.Errorf("literal words past the end")
		}
		for k := 0; k < lits; k++ {
			v := w(i)
			i++
			for c := 0; v != 0; c++ {
				if v&1 != 0 {
					out = append(out, pos+c)
				}
				v >>= 1
			}
			pos += 64
		}
	}
	return out, total, nil
}
