package snapstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// EmptyTree is the id of the tree with no entries. git knows it without
// storing it, and so do we: reading it never touches the disk.
const EmptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

var emptyTreeHash = plumbing.NewHash(EmptyTree)

// DefaultGCGrace is how old an unreachable loose object must be before GC
// deletes it. An hour is far longer than any Overlay takes, so a snapshot
// that is being written (or was just returned and not yet recorded as kept)
// survives a concurrent GC. git's own default (gc.pruneExpire) is two weeks;
// we can be much shorter because every writer is in this process or freshens
// the mtime of objects it reuses.
const DefaultGCGrace = time.Hour

// defaultTreeCacheEntries bounds the tree cache by the total number of tree
// entries it holds. At roughly 100 bytes per entry this is about 25 MB, and
// it holds a 100,000-file project's whole HEAD tree twice over.
const defaultTreeCacheEntries = 256 << 10

// maxAlternateDepth is how deep alternates of alternates are followed; git
// stops at the same depth (sha1-file.c, link_alt_odb_entry).
const maxAlternateDepth = 5

// ErrNotFound is wrapped by errors for objects that are in neither the store
// nor any of its alternates.
var ErrNotFound = errors.New("snapstore: object not found")

// Store is a content-addressed object store in git's loose-object format.
// It is safe for concurrent use.
type Store struct {
	dir     string // the bare repository directory
	objects string // dir/objects

	// GCGrace is the minimum age of an unreachable loose object that GC
	// deletes. Open sets it to DefaultGCGrace; change it only before the
	// Store is shared between goroutines (tests set 0).
	GCGrace time.Duration

	// own is the store's own object directory.
	own *odb

	// altMu guards alts: the object directories named (directly or
	// transitively) by objects/info/alternates, in lookup order.
	altMu sync.RWMutex
	alts  []*odb

	// gcMu is held for reading while objects are written or reused and
	// for writing while GC decides what to delete and deletes it, so GC
	// never deletes an object between a writer's existence check (which
	// freshens its mtime) and the writer's return.
	gcMu sync.RWMutex

	// fanout records, per fan-out directory (objects/xx), whether it is
	// known to exist durably; each has its own lock so that creating one
	// does not wait for another's sync.
	fanout [256]fanoutState

	trees *treeCache

	// afterReuseCheck, when set (by tests), runs between the existence
	// check of a reused object and its freshening; gcWaits runs when GC
	// finds writers holding gcMu and is about to wait for them.
	afterReuseCheck func(plumbing.Hash)
	gcWaits         func()
}

type fanoutState struct {
	sync.Mutex
	// ready is set once the directory exists and its creation is synced.
	// The embedded mutex must be held.
	ready bool
}

// Open opens the store at dir, creating a bare repository layout there if it
// is missing (objects/, objects/info/, objects/pack/, refs/, HEAD and a
// config) so that `git --git-dir=dir` accepts it.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("snapstore: open %s: %w", dir, err)
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(abs, filepath.FromSlash(d)), 0o755); err != nil {
			return nil, fmt.Errorf("snapstore: open %s: %w", dir, err)
		}
	}
	// HEAD and config are what git checks for before it treats a directory
	// as a repository. gc.auto=0 keeps a git command run by hand in the
	// store from packing it: reads of our own objects are fastest loose,
	// and GC deletes loose objects only.
	for name, content := range map[string]string{
		"HEAD":   "ref: refs/heads/main\n",
		"config": "[core]\n\trepositoryformatversion = 0\n\tbare = true\n[gc]\n\tauto = 0\n",
	} {
		p := filepath.Join(abs, name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := writeFileAtomic(p, []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("snapstore: open %s: %w", dir, err)
		}
	}
	objects := filepath.Join(abs, "objects")
	// Fan-out directories made by an earlier process that crashed before
	// syncing objects/ become durable here, before we write into them.
	if err := syncDir(objects); err != nil {
		return nil, fmt.Errorf("snapstore: open %s: %w", dir, err)
	}
	s := &Store{
		dir:     abs,
		objects: objects,
		GCGrace: DefaultGCGrace,
		own:     newODB(objects),
		trees:   newTreeCache(defaultTreeCacheEntries),
	}
	if err := s.loadAlternates(); err != nil {
		return nil, fmt.Errorf("snapstore: open %s: %w", dir, err)
	}
	return s, nil
}

// Dir returns the absolute path of the store's repository directory.
func (s *Store) Dir() string { return s.dir }

// Close releases the file handles held for packed objects in alternates.
// The Store must not be used afterwards.
func (s *Store) Close() error {
	s.altMu.Lock()
	defer s.altMu.Unlock()
	err := s.own.close()
	for _, a := range s.alts {
		err = errors.Join(err, a.close())
	}
	s.alts = nil
	s.trees.clear()
	return err
}

func (s *Store) alternatesFile() string {
	return filepath.Join(s.objects, "info", "alternates")
}

// readAlternatesFile returns the object directories listed in the
// alternates file of objectsDir, resolved as git does (relative to
// objectsDir), skipping blank lines and comments.
func readAlternatesFile(objectsDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(objectsDir, "info", "alternates"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var dirs []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(objectsDir, line)
		}
		dirs = append(dirs, filepath.Clean(line))
	}
	return dirs, sc.Err()
}

// loadAlternates builds s.alts from the alternates file, following
// alternates of alternates breadth-first as git does.
func (s *Store) loadAlternates() error {
	s.altMu.Lock()
	defer s.altMu.Unlock()
	seen := map[string]bool{s.objects: true}
	for _, a := range s.alts {
		seen[a.dir] = true
	}
	return s.addAlternatesLocked(s.objects, seen, 0)
}

// addAlternatesLocked appends the alternates of objectsDir that are not in
// seen, then theirs. s.altMu must be held.
func (s *Store) addAlternatesLocked(objectsDir string, seen map[string]bool, depth int) error {
	if depth >= maxAlternateDepth {
		return nil
	}
	dirs, err := readAlternatesFile(objectsDir)
	if err != nil {
		return err
	}
	var added []string
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		// A missing alternate is skipped, as git skips it (with a warning):
		// the project may have been deleted, and the rest of the store is
		// still readable.
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		s.alts = append(s.alts, newODB(d))
		added = append(added, d)
	}
	for _, d := range added {
		if err := s.addAlternatesLocked(d, seen, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// AddAlternate makes the objects in objectsDir (the absolute path of a
// project's .git/objects; for a linked worktree, that of its common dir)
// readable through the store. The path is appended to objects/info/alternates
// unless it is already listed; the file is replaced atomically.
func (s *Store) AddAlternate(objectsDir string) error {
	if !filepath.IsAbs(objectsDir) {
		return fmt.Errorf("snapstore: add alternate %s: path is not absolute", objectsDir)
	}
	d := filepath.Clean(objectsDir)
	fi, err := os.Stat(d)
	if err != nil {
		return fmt.Errorf("snapstore: add alternate %s: %w", objectsDir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("snapstore: add alternate %s: not a directory", objectsDir)
	}
	if strings.ContainsAny(d, "\n\r") {
		return fmt.Errorf("snapstore: add alternate %s: path contains a newline", objectsDir)
	}
	if d == s.objects {
		return nil
	}
	s.altMu.Lock()
	defer s.altMu.Unlock()
	listed, err := readAlternatesFile(s.objects)
	if err != nil {
		return fmt.Errorf("snapstore: add alternate %s: %w", objectsDir, err)
	}
	for _, l := range listed {
		if l == d {
			return nil
		}
	}
	var buf bytes.Buffer
	if b, err := os.ReadFile(s.alternatesFile()); err == nil {
		buf.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			buf.WriteByte('\n')
		}
	}
	buf.WriteString(d)
	buf.WriteByte('\n')
	if err := writeFileAtomic(s.alternatesFile(), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("snapstore: add alternate %s: %w", objectsDir, err)
	}
	seen := map[string]bool{s.objects: true}
	for _, a := range s.alts {
		seen[a.dir] = true
	}
	if !seen[d] {
		seen[d] = true
		s.alts = append(s.alts, newODB(d))
		if err := s.addAlternatesLocked(d, seen, 1); err != nil {
			return fmt.Errorf("snapstore: add alternate %s: %w", objectsDir, err)
		}
	}
	return nil
}

// odbs returns the object directories in lookup order: the store's own
// first, then the alternates.
func (s *Store) odbs() []*odb {
	s.altMu.RLock()
	defer s.altMu.RUnlock()
	out := make([]*odb, 0, 1+len(s.alts))
	out = append(out, s.own)
	return append(out, s.alts...)
}

// Has reports whether the object exists in the store or an alternate. An
// id that is not 40 hex digits is never present.
func (s *Store) Has(oid string) bool {
	h, ok := parseOID(oid)
	if !ok {
		return false
	}
	return s.has(h)
}

func (s *Store) has(h plumbing.Hash) bool {
	if h == emptyTreeHash {
		return true
	}
	for _, o := range s.odbs() {
		if o.has(h) {
			return true
		}
	}
	return false
}

// readObject returns the type and content of an object, looking in the
// store and then in the alternates.
func (s *Store) readObject(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	if h == emptyTreeHash {
		return plumbing.TreeObject, nil, nil
	}
	for _, o := range s.odbs() {
		t, b, err := o.read(h)
		if err == nil {
			return t, b, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return 0, nil, err
		}
	}
	return 0, nil, fmt.Errorf("%w: %s", ErrNotFound, h)
}

// ReadBlob returns the content of a blob.
func (s *Store) ReadBlob(oid string) ([]byte, error) {
	h, ok := parseOID(oid)
	if !ok {
		return nil, fmt.Errorf("snapstore: read blob %q: invalid object id", oid)
	}
	t, b, err := s.readObject(h)
	if err != nil {
		return nil, fmt.Errorf("snapstore: read blob %s: %w", oid, err)
	}
	if t != plumbing.BlobObject {
		return nil, fmt.Errorf("snapstore: read blob %s: object is a %s", oid, t)
	}
	return b, nil
}

// WriteBlob stores content as a blob and returns its id. Writing a blob that
// already exists in the store or an alternate only checks that it does.
func (s *Store) WriteBlob(content []byte) (string, error) {
	w := s.newBatch()
	h := w.add(plumbing.BlobObject, content)
	if err := w.flush(context.Background()); err != nil {
		return "", fmt.Errorf("snapstore: write blob: %w", err)
	}
	return h.String(), nil
}

func parseOID(oid string) (plumbing.Hash, bool) {
	if len(oid) != 40 {
		return plumbing.ZeroHash, false
	}
	for i := 0; i < len(oid); i++ {
		c := oid[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return plumbing.ZeroHash, false
		}
	}
	return plumbing.NewHash(oid), true
}

// writeFileAtomic writes a small file by way of a synced temporary file in
// the same directory, renamed into place, then syncs the directory.
func writeFileAtomic(name string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(name)+"-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
