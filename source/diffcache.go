package source

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/scm"
)

// diffCache keeps the diff of each file changed on both sides, by the
// blob ids of its two sides: a diff is a function of the two contents,
// the path and the modes, so a result found here is the one Compare
// would return, without reading either side. It is saved with the
// working-tree state, so a restart diffs only the files that changed
// while it was stopped. Results are kept packed, without the sides'
// content.
type diffCache struct {
	mu    sync.Mutex
	m     map[diffKey]packed
	used  map[diffKey]bool // looked up or stored since the last save
	bytes int64            // what the results in m hold (packed.bytes)
}

// diffKey names one diff: the path (in the patch's header), both blob
// ids and both modes. Only the view's default limits are cached.
type diffKey struct {
	Path             string
	OldOID, NewOID   string
	OldMode, NewMode uint32
}

// maxCachedDiffBytes bounds the results kept (their patches and hunk
// lines); past it, the cache starts over. The diffs of a view's changed
// files are a few MB; a burst of thousands of files must not keep
// tens of MB resident.
const maxCachedDiffBytes = 32 << 20

// resultBytes estimates what r holds in memory.
func resultBytes(r *changeset.Result) int64 {
	n := int64(len(r.Patch)) + 256
	for _, h := range r.Hunks {
		n += int64(len(h.Section)) + 64
		for _, l := range h.Lines {
			n += int64(len(l.Text)) + 32
		}
	}
	return n
}

// keyOf is c's key, and whether its diff may be cached: both blob ids
// known, the same path on both sides.
func keyOf(c scm.Change) (diffKey, bool) {
	if c.Head == nil || c.Work == nil || c.Head.OID == "" || c.Work.OID == "" || c.Head.Path != c.Work.Path {
		return diffKey{}, false
	}
	return diffKey{c.Path, c.Head.OID, c.Work.OID, c.Head.Mode, c.Work.Mode}, true
}

// get returns the cached result of c with sides that carry their size,
// not their content.
func (d *diffCache) get(c scm.Change) (changeset.Result, bool) {
	k, ok := keyOf(c)
	if d == nil || !ok {
		return changeset.Result{}, false
	}
	return d.lookup(k)
}

func copySide(s *changeset.Side) *changeset.Side {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// put keeps r, the diff of c, when it is a plain modification of text:
// what fileChange and acpDiff build from it then needs neither side's
// content (a binary patch or a type change's would).
func (d *diffCache) put(c scm.Change, r changeset.Result) {
	k, ok := keyOf(c)
	if d == nil || !ok || r.Binary || r.TooLarge || r.Old == nil || r.New == nil || r.ChangeType() != changeset.Modified {
		return
	}
	if r.New.Content == nil || changeset.BlobOID(r.New.Content) != k.NewOID {
		return // the file changed between the status and its reading
	}
	r.Old, r.New = bare(r.Old), bare(r.New)
	if r.Old.OID != k.OldOID {
		return
	}
	if resultBytes(&r) > maxCachedDiffBytes/8 {
		return // one huge file is diffed again rather than kept
	}
	p := pack(r)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addLocked(k, p)
	d.used[k] = true
}

// addLocked keeps p under k, starting over past maxCachedDiffBytes. d.mu
// must be held.
func (d *diffCache) addLocked(k diffKey, p packed) {
	n := p.bytes()
	if d.m == nil || d.bytes+n > maxCachedDiffBytes {
		d.m, d.used, d.bytes = map[diffKey]packed{}, map[diffKey]bool{}, 0
	}
	if old, ok := d.m[k]; ok {
		d.bytes -= old.bytes()
	}
	d.m[k] = p
	d.bytes += n
}

// bare is s without its content, its size kept.
func bare(s *changeset.Side) *changeset.Side {
	n := s.Size
	if s.Content != nil {
		n = int64(len(s.Content))
	}
	oid := s.OID
	if oid == "" && s.Content != nil {
		oid = changeset.BlobOID(s.Content)
	}
	return &changeset.Side{Path: s.Path, Mode: s.Mode, OID: oid, Size: n, Sniffed: s.Sniffed}
}

// diffFileMagic starts a saved diff cache, followed by the build that
// wrote it (a line), then the count of diffs and each as appendSaved
// writes it; a CRC-32C of the rest ends it.
const diffFileMagic = "changesetd diffs 2\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// builtBy names this build: diffs saved by another build (whose diff may
// differ) are not used.
var builtBy = func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Path + "@" + bi.Main.Version + " " + bi.GoVersion
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" || s.Key == "vcs.time" {
			v += " " + s.Key + "=" + s.Value
		}
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			// A rebuilt binary of the same revision (a work tree's
			// uncommitted edits) has another size or time.
			v += fmt.Sprintf(" %d@%d", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return strings.ReplaceAll(v, "\n", " ")
}()

// save writes the results used since the last save (those of the views
// served; older ones are dropped) to path, atomically.
func (d *diffCache) save(path string) error {
	d.mu.Lock()
	kept := make([]savedDiff, 0, len(d.used))
	size := len(diffFileMagic) + len(builtBy) + 16
	for k := range d.used {
		if p, ok := d.m[k]; ok {
			kept = append(kept, savedDiff{k, p})
			size += int(p.bytes()) + 2*len(k.Path) + 4*len(k.OldOID)
		}
	}
	d.mu.Unlock()
	// One buffer of about the size written (p.bytes is a little more),
	// not megabytes grown by doubling.
	b := make([]byte, 0, size)
	b = append(b, diffFileMagic+builtBy+"\n"...)
	b = binary.AppendUvarint(b, uint64(len(kept)))
	for i := range kept {
		b = appendSaved(b, &kept[i])
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return writeFileAtomic(path, b)
}

// load reads what save wrote. A damaged file loads nothing.
func (d *diffCache) load(path string) (int, error) {
	// Temporary files of a save that was killed before its rename.
	olds, _ := filepath.Glob(path + ".tmp-*")
	for _, o := range olds {
		os.Remove(o)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if len(b) < len(diffFileMagic)+4 || string(b[:len(diffFileMagic)]) != diffFileMagic {
		return 0, errors.New("not a saved diff cache")
	}
	body, sum := b[:len(b)-4], b[len(b)-4:]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(sum) {
		return 0, errors.New("saved diff cache: checksum mismatch (corrupt or truncated)")
	}
	by, rest, ok := bytes.Cut(body[len(diffFileMagic):], []byte("\n"))
	if !ok || string(by) != builtBy {
		return 0, fmt.Errorf("saved diff cache: written by another build (%s)", by)
	}
	r := savedReader{b: rest}
	n := r.count()
	if r.err != nil {
		return 0, errors.New("saved diff cache: bad count")
	}
	list := make([]savedDiff, n)
	for i := range list {
		if list[i] = r.saved(); r.err != nil {
			return 0, fmt.Errorf("saved diff cache: %w", r.err)
		}
	}
	if len(r.b) != 0 {
		return 0, errors.New("saved diff cache: bytes after the last diff")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range list {
		if s.p.r.Old == nil || s.p.r.New == nil || s.p.r.Old.OID != s.k.OldOID || s.p.r.New.OID != s.k.NewOID {
			continue
		}
		d.addLocked(s.k, s.p)
	}
	return n, nil
}

// writeFileAtomic replaces path with data through a synced temporary
// file renamed over it: a kill leaves the old file or the new one.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
