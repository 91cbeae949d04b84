package scm

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
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

// The index is read by our own decoder rather than go-git's, which stops
// at a split index ("link" extension, core.splitIndex or git update-index
// --split-index). It reads versions 2 to 4 (4 is what feature.manyFiles
// selects), reads the cache-tree (TREE), skips the other optional
// extensions (REUC, UNTR, FSMN, EOIE, IEOT) and merges a split index into
// its shared index as git's merge_base_index does. Entries come out as go-git index entries, with
// the same conventions as go-git's decoder (a zero timestamp is the zero
// time), so the rest of the package is unchanged.

// indexFile is a decoded index, split index already merged.
type indexFile struct {
	version uint32
	entries []*index.Entry // in index order: by name, then stage
	// assumeValid holds the entries with the assume-valid bit, which
	// go-git's entries cannot carry.
	assumeValid map[entryKey]bool
	split       bool // read through a "link" extension
	// tree is the cache-tree extension (TREE): the valid entries only,
	// by directory ("" is the root). Nil for a split index.
	tree map[string]cacheTree
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

// parseCacheTree decodes a TREE extension. It returns nil for data it
// cannot read: the extension is optional and only a shortcut.
func parseCacheTree(d []byte) map[string]cacheTree {
	out := map[string]cacheTree{}
	var entry func(prefix string) bool
	entry = func(prefix string) bool {
		i := bytes.IndexByte(d, 0)
		if i < 0 {
			return false
		}
		name := string(d[:i])
		d = d[i+1:]
		j := bytes.IndexByte(d, '\n')
		if j < 0 {
			return false
		}
		cnt, sub, ok := strings.Cut(string(d[:j]), " ")
		if !ok {
			return false
		}
		d = d[j+1:]
		count, err1 := strconv.Atoi(cnt)
		subs, err2 := strconv.Atoi(sub)
		if err1 != nil || err2 != nil || subs < 0 {
			return false
		}
		p := name
		if prefix != "" {
			p = prefix + "/" + name
		}
		if count >= 0 {
			if len(d) < 20 {
				return false
			}
			var h plumbing.Hash
			copy(h[:], d[:20])
			d = d[20:]
			out[p] = cacheTree{count: count, oid: h}
		}
		for range subs {
			if !entry(p) {
				return false
			}
		}
		return true
	}
	// The root entry has an empty name.
	if !entry("") || len(d) != 0 {
		return nil
	}
	return out
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
// shared entry of the same name and stage.
func mergeSplit(x, base *indexFile, link *linkExt) (*indexFile, error) {
	out := slices.Clone(base.entries)
	av := maps.Clone(base.assumeValid)
	if len(link.replace) > len(x.entries) {
		return nil, fmt.Errorf("scm: index: split index replaces %d entries but holds %d", len(link.replace), len(x.entries))
	}
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
		// Replacing entries have no name, so the decoder keyed their
		// assume-valid bits by position.
		key := entryKey{e.Name, int(e.Stage)}
		delete(av, entryKey{out[pos].Name, int(out[pos].Stage)})
		if x.assumeValid[entryKey{replaceKey(i), int(src.Stage)}] {
			av[key] = true
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
		slices.SortStableFunc(out, func(a, b *index.Entry) int {
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			return int(a.Stage) - int(b.Stage)
		})
	}
	for _, e := range added {
		k := entryKey{e.Name, int(e.Stage)}
		delete(av, k)
		if x.assumeValid[k] {
			av[k] = true
		}
	}
	return &indexFile{version: x.version, entries: out, assumeValid: av, split: true}, nil
}

// replaceKey is the assumeValid key of the i-th nameless entry of a split
// index.
func replaceKey(i int) string { return "\x00" + strconv.Itoa(i) }

const (
	entryFixed      = 62 // stat data, id and flags
	flagExtended    = 0x4000
	extSkipWorktree = 0x4000
	extIntentToAdd  = 0x2000
)

// decodeIndexOnly decodes one index file without following a link.
func decodeIndexOnly(b []byte) (*indexFile, *linkExt, error) {
	bad := func(format string, args ...any) error { return fmt.Errorf("scm: index: "+format, args...) }
	if len(b) < 12+20 || string(b[:4]) != "DIRC" {
		return nil, nil, bad("bad header")
	}
	version := binary.BigEndian.Uint32(b[4:])
	if version < 2 || version > 4 {
		return nil, nil, bad("unsupported version %d", version)
	}
	n := int(binary.BigEndian.Uint32(b[8:]))
	end := len(b) - 20
	if n > end/entryFixed {
		return nil, nil, bad("%d entries in %d bytes", n, len(b))
	}
	x := &indexFile{version: version, entries: make([]*index.Entry, n), assumeValid: map[entryKey]bool{}}
	// One allocation for all entries, and one for all names: names are
	// gathered into one buffer and sliced after, so the index keeps only
	// its names, not a copy of the whole file (for version 2 and 3 about
	// a third of it). Version 2 and 3 names lie inside the file, which
	// bounds their total; version 4 names are prefix-compressed and may
	// outgrow it.
	store := make([]index.Entry, n)
	nameCap := max(end-12-n*entryFixed, 0)
	if version == 4 {
		nameCap = len(b)
	}
	names := make([]byte, 0, nameCap)
	ends := make([]int, n)
	off := 12
	var prev []byte
	for i := 0; i < n; i++ {
		if off+entryFixed > end {
			return nil, nil, bad("truncated entry %d", i)
		}
		e := &store[i]
		be := binary.BigEndian
		csec, cnsec := be.Uint32(b[off:]), be.Uint32(b[off+4:])
		msec, mnsec := be.Uint32(b[off+8:]), be.Uint32(b[off+12:])
		if csec != 0 || cnsec != 0 {
			e.CreatedAt = time.Unix(int64(csec), int64(cnsec))
		}
		if msec != 0 || mnsec != 0 {
			e.ModifiedAt = time.Unix(int64(msec), int64(mnsec))
		}
		e.Dev = be.Uint32(b[off+16:])
		e.Inode = be.Uint32(b[off+20:])
		e.Mode = filemode.FileMode(be.Uint32(b[off+24:]))
		e.UID = be.Uint32(b[off+28:])
		e.GID = be.Uint32(b[off+32:])
		e.Size = be.Uint32(b[off+36:])
		copy(e.Hash[:], b[off+40:off+60])
		flags := be.Uint16(b[off+60:])
		e.Stage = index.Stage(flags>>12) & 3
		p := off + entryFixed
		if flags&flagExtended != 0 {
			if version < 3 {
				return nil, nil, bad("extended flags in a version 2 index")
			}
			if p+2 > end {
				return nil, nil, bad("truncated entry %d", i)
			}
			ext := be.Uint16(b[p:])
			e.SkipWorktree = ext&extSkipWorktree != 0
			e.IntentToAdd = ext&extIntentToAdd != 0
			p += 2
		}
		switch version {
		case 2, 3:
			l := int(flags & 0xfff)
			if l == 0xfff {
				j := bytes.IndexByte(b[p:end], 0)
				if j < 0 {
					return nil, nil, bad("unterminated name")
				}
				l = j
			}
			if p+l > end {
				return nil, nil, bad("truncated name")
			}
			names = append(names, b[p:p+l]...)
			ends[i] = len(names)
			off += (p - off + l + 8) &^ 7
		case 4:
			var strip int
			for {
				if p >= end {
					return nil, nil, bad("truncated name")
				}
				c := b[p]
				p++
				strip = strip<<7 | int(c&0x7f)
				if c&0x80 == 0 {
					break
				}
				strip++
				if strip > len(b) {
					return nil, nil, bad("bad name prefix")
				}
			}
			if strip > len(prev) {
				return nil, nil, bad("bad name prefix")
			}
			j := bytes.IndexByte(b[p:end], 0)
			if j < 0 {
				return nil, nil, bad("unterminated name")
			}
			prev = append(prev[:len(prev)-strip], b[p:p+j]...)
			names = append(names, prev...)
			ends[i] = len(names)
			off = p + j + 1
		}
		if off > end {
			return nil, nil, bad("truncated entry %d", i)
		}
		if flags&flagAssumeValid != 0 {
			x.assumeValid[entryKey{replaceKey(i), int(e.Stage)}] = true
		}
		x.entries[i] = e
	}
	all := string(names)
	start := 0
	for i, e := range x.entries {
		e.Name = all[start:ends[i]]
		start = ends[i]
	}
	// Assume-valid bits were keyed by position while names were pending;
	// named entries get their name back (nameless ones replace shared
	// entries and keep the position key for mergeSplit).
	for k := range x.assumeValid {
		i, _ := strconv.Atoi(k.name[1:])
		if name := x.entries[i].Name; name != "" {
			delete(x.assumeValid, k)
			x.assumeValid[entryKey{name, k.stage}] = true
		}
	}
	var link *linkExt
	for off+8 <= end {
		sig := string(b[off : off+4])
		size := int(binary.BigEndian.Uint32(b[off+4:]))
		if size < 0 || off+8+size > end {
			return nil, nil, bad("truncated extension %q", sig)
		}
		data := b[off+8 : off+8+size]
		switch {
		case sig == "TREE":
			x.tree = parseCacheTree(data)
		case sig == "link":
			l, err := parseLink(data)
			if err != nil {
				return nil, nil, err
			}
			link = l
		case sig == "sdir":
			return nil, nil, bad("sparse index (index.sparse) is not supported")
		case sig[0] < 'A' || sig[0] > 'Z':
			return nil, nil, bad("required extension %q is not supported", sig)
		}
		off += 8 + size
	}
	return x, link, nil
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
