package scm

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The working-tree state is the stat cache kept across restarts, the way
// git's index, jj's tree_state and Sapling's treestate keep per-file stat
// data: for each file we hashed, its stat data and the blob id it hashed
// to under a clean plan. A restart loads it and re-hashes only the files
// whose stat data differs, instead of every file that differs from its
// index entry.
//
// The file is written whole into a temporary file beside it, synced and
// renamed over the old one, so a kill at any point leaves the old or the
// new state, never a mix. Its layout (integers little-endian):
//
//	magic "changesetd worktree state 1\n"
//	header: root, HEAD's commit id, the index's checksum, the digest of
//	        the ignore and attribute inputs (each a uvarint length and its
//	        bytes), the generation (uint64) and the entry count (uint32)
//	entries, sorted by path: path, stat (mtime, ctime, size as int64;
//	        inode uint64; uid, gid, mode uint32; a flags byte), the clean
//	        plan's key, the index blob the plan consulted and the blob id
//	extra: a uvarint length and the caller's bytes (SaveStateWith)
//	trailer: SHA-1 of everything before it
//
// A state is trusted only whole and only for the same root, HEAD, index
// and ignore and attribute inputs; anything else (another repository's
// state, a checkout or commit while stopped, a truncated or corrupt file)
// is ignored. Within a trusted state an entry is used only if its file's
// mtime is older than the state file's own (the racy rule, as git applies
// it against the index file): a file written in the same tick as the
// state may have changed after it was hashed.

const stateMagic = "changesetd worktree state 2\n"

// stateHeader is what a state is valid for.
type stateHeader struct {
	root, head, index, inputs string
	generation                uint64
}

// ErrStateStale is wrapped by LoadState's error for a state written for
// another HEAD, index or set of ignore and attribute inputs.
var ErrStateStale = errors.New("the working-tree state is for another HEAD, index or ignore configuration")

// stateHeaderLocked describes the repository as it is now. r.mu must be
// held.
func (r *Repo) stateHeaderLocked() (stateHeader, error) {
	hs, err := r.headLocked()
	if err != nil {
		return stateHeader{}, err
	}
	sum, err := indexChecksum(filepath.Join(r.gitDir, "index"))
	if err != nil {
		return stateHeader{}, err
	}
	return stateHeader{root: r.root, head: hs.commit.String(), index: sum, inputs: r.stateInputs()}, nil
}

// indexChecksum is the trailing SHA-1 of the index file ("none" when
// there is no index). An index written with index.skipHash has none, and
// then no state is trusted against it.
func indexChecksum(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "none", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.Size() < 32 {
		return "", fmt.Errorf("index of %d bytes", fi.Size())
	}
	var sum [20]byte
	if _, err := f.ReadAt(sum[:], fi.Size()-20); err != nil {
		return "", err
	}
	if sum == ([20]byte{}) {
		return "", errors.New("the index has no checksum (index.skipHash)")
	}
	return fmt.Sprintf("%x", sum), nil
}

// stateInputs digests the content of the files outside the tree that
// decide ignores and attributes (every config file, info/exclude,
// core.excludesFile, info/attributes, core.attributesFile) and of the
// top-level .gitignore and .gitattributes.
func (r *Repo) stateInputs() string {
	s := newSettings(loadConfig(r.commonDir, r.gitDir))
	paths := r.ignoreSources(&s)
	paths = append(paths, filepath.Join(r.commonDir, "info", "attributes"), s.attributesFile,
		filepath.Join(r.root, ".gitignore"), filepath.Join(r.root, ".gitattributes"))
	h := sha1.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00", p)
		if b, err := os.ReadFile(p); err == nil {
			fmt.Fprintf(h, "%d\x00", len(b))
			h.Write(b)
		} else {
			io.WriteString(h, "-\x00")
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// StateKey names the state of the repository a saved state is valid
// for: its root, HEAD's commit, the index's checksum and the digest of
// the ignore and attribute inputs. Two calls return the same key only
// when none of them changed between.
func (r *Repo) StateKey() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hdr, err := r.stateHeaderLocked()
	if err != nil {
		return "", err
	}
	return strings.Join([]string{hdr.root, hdr.head, hdr.index, hdr.inputs}, "\x00"), nil
}

// SaveState writes the stat cache to path, atomically (temp file, sync,
// rename), for LoadState after a restart. Only entries a scan could
// trust now are written (hashed before their file's last write tick).
func (r *Repo) SaveState(path string) error { return r.SaveStateWith(path, nil) }

// SaveStateWith is SaveState keeping extra, the caller's own bytes, in
// the same file: LoadStateWith returns them only with a state it trusts.
func (r *Repo) SaveStateWith(path string, extra []byte) error {
	r.mu.Lock()
	hdr, err := r.stateHeaderLocked()
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("scm: save worktree state: %w", err)
	}
	r.stateGen++
	hdr.generation = r.stateGen
	paths := make([]string, 0, len(r.cache))
	for p := range r.cache {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var b bytes.Buffer
	b.WriteString(stateMagic)
	for _, s := range []string{hdr.root, hdr.head, hdr.index, hdr.inputs} {
		putString(&b, s)
	}
	b.Write(binary.LittleEndian.AppendUint64(nil, hdr.generation))
	b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(paths))))
	for _, p := range paths {
		e := r.cache[p]
		putString(&b, p)
		var fixed [8*3 + 8 + 4*3 + 1]byte
		binary.LittleEndian.PutUint64(fixed[0:], uint64(e.st.mtime))
		binary.LittleEndian.PutUint64(fixed[8:], uint64(e.st.ctime))
		binary.LittleEndian.PutUint64(fixed[16:], uint64(e.st.size))
		binary.LittleEndian.PutUint64(fixed[24:], e.st.ino)
		binary.LittleEndian.PutUint32(fixed[32:], e.st.uid)
		binary.LittleEndian.PutUint32(fixed[36:], e.st.gid)
		binary.LittleEndian.PutUint32(fixed[40:], uint32(e.st.mode))
		if e.st.sys {
			fixed[44] = 1
		}
		b.Write(fixed[:])
		putString(&b, e.plan)
		b.Write(e.base[:])
		b.Write(e.oid[:])
	}
	r.mu.Unlock()
	b.Write(binary.AppendUvarint(nil, uint64(len(extra))))
	b.Write(extra)
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	if err := writeAtomic(path, b.Bytes()); err != nil {
		return fmt.Errorf("scm: save worktree state: %w", err)
	}
	return nil
}

// writeAtomic replaces path with data: written to a temporary file in
// the same directory, synced, then renamed over path.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// removeStaleTemps removes the temporary files of writes that did not
// finish (a kill between create and rename).
func removeStaleTemps(path string) {
	olds, _ := filepath.Glob(filepath.Join(filepath.Dir(path), filepath.Base(path)+".tmp-*"))
	for _, o := range olds {
		os.Remove(o)
	}
}

func putString(b *bytes.Buffer, s string) {
	b.Write(binary.AppendUvarint(nil, uint64(len(s))))
	b.WriteString(s)
}

// stateReader decodes a state file, failing on the first short read.
type stateReader struct {
	b   []byte
	err error
}

func (d *stateReader) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errors.New("truncated")
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *stateReader) str() string {
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.err = errors.New("bad length")
		return ""
	}
	d.b = d.b[k:]
	return string(d.take(int(n)))
}

// LoadState reads a state SaveState wrote into the stat cache and
// returns how many entries it trusted. It returns an error, and loads
// nothing, for a state that is missing (wrapping fs.ErrNotExist),
// corrupt, of another repository, or stale (wrapping ErrStateStale).
func (r *Repo) LoadState(path string) (int, error) {
	n, _, err := r.LoadStateWith(path)
	return n, err
}

// LoadStateWith is LoadState also returning the extra bytes
// SaveStateWith kept, which come only with a state it trusts.
func (r *Repo) LoadStateWith(path string) (int, []byte, error) {
	removeStaleTemps(path)
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, nil, err
	}
	if len(data) < len(stateMagic)+sha1.Size || !strings.HasPrefix(string(data), stateMagic) {
		return 0, nil, errors.New("scm: load worktree state: not a state file")
	}
	body, sum := data[:len(data)-sha1.Size], data[len(data)-sha1.Size:]
	if s := sha1.Sum(body); !bytes.Equal(s[:], sum) {
		return 0, nil, errors.New("scm: load worktree state: checksum mismatch (corrupt or truncated)")
	}
	d := &stateReader{b: body[len(stateMagic):]}
	var hdr stateHeader
	hdr.root, hdr.head, hdr.index, hdr.inputs = d.str(), d.str(), d.str(), d.str()
	if g := d.take(8); g != nil {
		hdr.generation = binary.LittleEndian.Uint64(g)
	}
	var n uint32
	if c := d.take(4); c != nil {
		n = binary.LittleEndian.Uint32(c)
	}
	if d.err != nil {
		return 0, nil, fmt.Errorf("scm: load worktree state: header: %v", d.err)
	}
	// The racy boundary: the state file's own mtime. An entry whose file
	// was last written within racySlack of it may have changed after it
	// was hashed.
	cut := statOf(fi).mtime - racySlack.Nanoseconds()
	entries := make(map[string]cacheEntry, n)
	for range n {
		p := d.str()
		fixed := d.take(8*3 + 8 + 4*3 + 1)
		plan := d.str()
		base, oid := d.take(20), d.take(20)
		if d.err != nil {
			return 0, nil, fmt.Errorf("scm: load worktree state: entries: %v", d.err)
		}
		e := cacheEntry{plan: plan}
		e.st.mtime = int64(binary.LittleEndian.Uint64(fixed[0:]))
		e.st.ctime = int64(binary.LittleEndian.Uint64(fixed[8:]))
		e.st.size = int64(binary.LittleEndian.Uint64(fixed[16:]))
		e.st.ino = binary.LittleEndian.Uint64(fixed[24:])
		e.st.uid = binary.LittleEndian.Uint32(fixed[32:])
		e.st.gid = binary.LittleEndian.Uint32(fixed[36:])
		e.st.mode = fs.FileMode(binary.LittleEndian.Uint32(fixed[40:]))
		e.st.sys = fixed[44] == 1
		copy(e.base[:], base)
		copy(e.oid[:], oid)
		if e.st.mtime >= cut || (e.st.sys && e.st.ctime >= cut) {
			continue
		}
		entries[p] = e
	}
	var extra []byte
	if n, k := binary.Uvarint(d.b); k > 0 {
		d.b = d.b[k:]
		extra = d.take(int(n))
	} else {
		d.err = errors.New("bad length")
	}
	if d.err != nil || len(d.b) != 0 {
		return 0, nil, errors.New("scm: load worktree state: bad extra bytes")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now, err := r.stateHeaderLocked()
	if err != nil {
		return 0, nil, fmt.Errorf("scm: load worktree state: %w", err)
	}
	switch {
	case hdr.root != now.root:
		return 0, nil, fmt.Errorf("scm: load worktree state: written for %s, not %s", hdr.root, now.root)
	case hdr.head != now.head, hdr.index != now.index, hdr.inputs != now.inputs:
		return 0, nil, fmt.Errorf("scm: load worktree state: %w", ErrStateStale)
	}
	for p, e := range entries {
		if _, ok := r.cache[p]; !ok {
			r.cache[p] = e
		}
	}
	r.stateGen = max(r.stateGen, hdr.generation)
	return len(entries), extra, nil
}
