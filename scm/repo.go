package scm

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/changesetd/changesetd/scm/internal/gitobj"
)

// ErrOutsideWorktree is wrapped by errors for paths that are absolute,
// contain "..", pass through a symlinked directory, or point into .git.
var ErrOutsideWorktree = errors.New("scm: path outside the worktree")

// ErrNoBaseBranch is returned by DefaultBaseBranch when neither origin/HEAD
// nor a main or master branch exists.
var ErrNoBaseBranch = errors.New("scm: no default base branch")

// emptyBlob is the id of the empty blob, which git stores for smudged and
// intent-to-add entries.
var emptyBlob = plumbing.NewHash("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")

// Repo is one git working tree. It is safe for concurrent use: every method
// takes mu, and the *git.Repository never leaves the Repo; objects are read
// first through objs, which needs no lock of the Repo. Close releases the
// object files.
type Repo struct {
	root      string // absolute worktree root
	gitDir    string // per-worktree git dir (HEAD, index)
	commonDir string // objects, refs, config, info/

	mu sync.Mutex
	// repo is the go-git handle. r.mu must be held.
	repo *git.Repository
	// idx is the decoded index, reloaded when the index file's stat changes.
	idx *indexSnapshot
	// trees caches flattened trees by tree id (HEAD's and merge bases').
	trees map[plumbing.Hash]*flatTree
	// sparseTrees caches the flattened trees of a sparse index's sparse
	// directories, so that re-reading the index after a change (in the
	// cone) does not read every tree outside the cone again.
	sparseTrees map[sparseDir]*flatTree
	// commitTrees and blobSizes remember what a commit's tree is and how
	// large a blob is; objects never change, so these need no
	// invalidation, only a bound (maxObjectMemo). Every scan asks both
	// again, and go-git opens the pack file for each answer.
	commitTrees map[plumbing.Hash]plumbing.Hash
	blobSizes   map[plumbing.Hash]int64
	// head is the last resolution of HEAD to a branch's commit, with
	// the stat data of the files it came from (headLocked).
	head headMemo
	// cache is the stat cache: path -> stat and blob id from our last hash.
	cache map[string]cacheEntry
	// treeReads and treeShortcuts count tree objects read and directories
	// taken from the index's cache-tree instead, for tests.
	treeReads, treeShortcuts int
	// hashes counts files read and hashed (cache misses), for tests.
	hashes int
	// stateGen is the generation of the last working-tree state saved or
	// loaded (treestate.go).
	stateGen uint64
	// edited holds paths someone reported editing (Forget): their index
	// stat data is not trusted, so an edit that kept it is still seen.
	edited map[string]bool

	// pre holds blobs StagePath and StageAll stored before taking
	// index.lock, by path. r.mu must be held.
	pre map[string]preStored

	// storing, when set (by tests), is called with each path whose blob is
	// about to be read and stored for the index.
	storing func(rel string)
	// objectSink, when set (by tests), wraps the temp file an object is
	// written to.
	objectSink func(io.Writer) io.Writer

	// ign caches the rules IsIgnored uses; it has its own lock.
	ign ignoreCache

	// objs reads objects without go-git's storage; the go-git handle
	// reads through it too (see ownStorage).
	objs *lazyObjects
}

// Open finds the worktree containing dir (which may be any directory inside
// it) and opens its repository.
func Open(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("scm: open %s: %w", dir, err)
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	root := ""
	for d := abs; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			root = d
			break
		}
		p := filepath.Dir(d)
		if p == d {
			break
		}
		d = p
	}
	if root == "" {
		return nil, fmt.Errorf("scm: open %s: %w", dir, git.ErrRepositoryNotExists)
	}
	gitDir, err := resolveGitDir(root)
	if err != nil {
		return nil, fmt.Errorf("scm: open %s: %w", dir, err)
	}
	if err := checkHead(gitDir); err != nil {
		return nil, fmt.Errorf("scm: open %s: %w", dir, err)
	}
	commonDir := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		commonDir = filepath.Clean(c)
	}
	cfg := loadConfig(commonDir, gitDir)
	if f := cfg.string("extensions", "", "objectformat"); f != "" && !strings.EqualFold(f, "sha1") {
		return nil, fmt.Errorf("scm: open %s: object format %s is not supported", dir, f)
	}
	objs := &lazyObjects{dir: filepath.Join(commonDir, "objects")}
	repo, err := openGit(root, gitDir, commonDir, objs)
	if err != nil {
		return nil, fmt.Errorf("scm: open %s: %w", dir, err)
	}
	r := &Repo{
		root:        root,
		gitDir:      gitDir,
		commonDir:   commonDir,
		repo:        repo,
		objs:        objs,
		trees:       make(map[plumbing.Hash]*flatTree),
		commitTrees: make(map[plumbing.Hash]plumbing.Hash),
		blobSizes:   make(map[plumbing.Hash]int64),
		cache:       make(map[string]cacheEntry),
	}
	// A write interrupted by a crash left its temp file under .git; it is
	// garbage (the target was never replaced) and goes now. Failing to
	// remove it harms nothing, so that is not an error.
	_, _ = r.RemoveStaleTemps()
	return r, nil
}

// gitObjectCache bounds go-git's cache of decoded objects per repository.
const gitObjectCache = 8 * cache.MiByte

// openGit opens the go-git handle on directories already resolved. The
// object store's alternates (git clone --shared or --reference) are read
// through a filesystem rooted at /, so that their absolute paths resolve;
// go-git's default resolves them inside the .git directory. Objects are
// read through objs first (see ownStorage).
func openGit(root, gitDir, commonDir string, objs *lazyObjects) (*git.Repository, error) {
	var dot billy.Filesystem = osfs.New(gitDir)
	if commonDir != gitDir {
		dot = dotgit.NewRepositoryFilesystem(dot, osfs.New(commonDir))
	}
	// Objects are read through gitobj first; go-git's cache only serves
	// what it still reads (the fallbacks), so it need not be its default
	// 96 MiB.
	st := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRU(gitObjectCache), filesystem.Options{
		AlternatesFS: osfs.New("/", osfs.WithBoundOS()),
	})
	return git.Open(ownStorage{st, objs}, osfs.New(root))
}

// ownStorage is go-git's storage with two parts of its own.
//
// It reads objects through gitobj first, so that what go-git reads for
// us (commits, merge bases, revisions) does not go through go-git's
// packed-object path, which decodes every pack index onto the heap and,
// at the first packed read, maps every offset in the pack to its id:
// 157 MB that stayed resident at a million files. go-git answers what
// gitobj cannot (a pack it cannot open, a closed Repo).
//
// And its Config hides from go-git's repository-format check the
// extensions this package implements itself. go-git v5 refuses
// extensions.worktreeConfig (which git sparse-checkout and git worktree
// set) although it only says that config.worktree is read, which
// loadConfig does; every other extension still reaches go-git's check.
type ownStorage struct {
	*filesystem.Storage
	objs *lazyObjects
}

func (s ownStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o := s.objs.get(); o != nil {
		if got, b, err := o.Read(h); err == nil && (t == plumbing.AnyObject || got == t) {
			obj := &plumbing.MemoryObject{}
			obj.SetType(got)
			obj.Write(b)
			return obj, nil
		}
	}
	return s.Storage.EncodedObject(t, h)
}

func (s ownStorage) Config() (*config.Config, error) {
	cfg, err := s.Storage.Config()
	if err != nil || cfg.Raw == nil || !cfg.Raw.HasSection("extensions") {
		return cfg, err
	}
	ext := cfg.Raw.Section("extensions")
	if !ext.HasOption("worktreeConfig") {
		return cfg, nil
	}
	c := *cfg
	raw := *cfg.Raw
	raw.Sections = slices.Clone(raw.Sections)
	for i, sec := range raw.Sections {
		if sec == ext {
			e := *ext
			e.RemoveOption("worktreeConfig")
			raw.Sections[i] = &e
		}
	}
	c.Raw = &raw
	return &c, nil
}

// ErrBadHead is wrapped by the errors of Open and of reads of HEAD when
// the HEAD file is neither a symbolic ref into refs/ nor an object id.
// git does not take such a directory for a repository ("not a git
// repository"); read as an unborn branch, it would make every committed
// file look new, and reverting them would delete them.
var ErrBadHead = errors.New("scm: HEAD is neither \"ref: refs/...\" nor an object id")

// checkHead is git's validate_headref on gitDir/HEAD: a symbolic link
// to refs/..., "ref: refs/..." or an object id.
func checkHead(gitDir string) error {
	_, _, err := readHead(gitDir)
	return err
}

// readHead reads gitDir/HEAD as git does: the ref it points to, or (for
// a detached HEAD) the commit id. go-git's reader takes "ref:refs/..."
// (no space, which git accepts) and garbage alike for a zero id.
func readHead(gitDir string) (target plumbing.ReferenceName, id plumbing.Hash, err error) {
	p := filepath.Join(gitDir, "HEAD")
	fi, err := os.Lstat(p)
	if err != nil {
		return "", id, fmt.Errorf("%s: %w", p, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, "refs/") {
			return plumbing.ReferenceName(t), id, nil
		}
		return "", id, fmt.Errorf("%w: %s is a symbolic link outside refs/", ErrBadHead, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", id, fmt.Errorf("%s: %w", p, err)
	}
	content := string(b)
	if t, ok := strings.CutPrefix(content, "ref:"); ok {
		if t = strings.TrimSpace(t); strings.HasPrefix(t, "refs/") {
			return plumbing.ReferenceName(t), id, nil
		}
	} else if len(content) >= 40 && plumbing.IsHash(content[:40]) {
		return "", plumbing.NewHash(content[:40]), nil
	}
	return "", id, fmt.Errorf("%w: %s holds %q; restore it (e.g. \"ref: refs/heads/main\")", ErrBadHead, p, headExcerpt(b))
}

// headExcerpt is the start of a bad HEAD file, for its error.
func headExcerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
}

// resolveGitDir returns root/.git, or the directory a "gitdir:" file names.
func resolveGitDir(root string) (string, error) {
	p := filepath.Join(root, ".git")
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return p, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	line := strings.TrimSpace(string(b))
	if !strings.HasPrefix(line, "gitdir:") {
		return "", fmt.Errorf("%s: not a gitdir file", p)
	}
	g := strings.TrimSpace(strings.TrimPrefix(line, "gitdir:"))
	if !filepath.IsAbs(g) {
		g = filepath.Join(root, g)
	}
	return filepath.Clean(g), nil
}

// Root returns the absolute worktree root.
func (r *Repo) Root() string { return r.root }

// GitDir returns the per-worktree git directory, where HEAD and index live
// (for a linked worktree, .git/worktrees/<name> in the main repository).
func (r *Repo) GitDir() string { return r.gitDir }

// CommonDir returns the git directory holding objects, refs and config; it
// equals GitDir except in linked worktrees.
func (r *Repo) CommonDir() string { return r.commonDir }

// IsIgnored reports whether path (slash-separated, relative to the root) is
// ignored by .gitignore files, info/exclude or core.excludesFile, either
// itself or through an ignored parent directory. Paths inside .git count as
// ignored. It says nothing about whether path is tracked.
func (r *Repo) IsIgnored(p string, isDir bool) bool {
	rel, err := cleanRel(p)
	if err != nil {
		return errors.Is(err, errInGitDir)
	}
	if rel == "" {
		return false
	}
	return r.ignoreRules().pathIgnored(rel, isDir)
}

var errInGitDir = fmt.Errorf("%w: inside .git", ErrOutsideWorktree)

// cleanRel validates a worktree-relative path and returns it slash-separated
// and clean ("" for the root).
func cleanRel(p string) (string, error) {
	p = filepath.ToSlash(p)
	if path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" {
		return "", fmt.Errorf("%w: %s is absolute", ErrOutsideWorktree, p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", fmt.Errorf("%w: %s", ErrOutsideWorktree, p)
		}
		if strings.EqualFold(c, ".git") {
			return "", fmt.Errorf("%w: %s", errInGitDir, p)
		}
	}
	c := path.Clean(p)
	if c == "." {
		c = ""
	}
	return c, nil
}

// Close releases the object store's open files. Later reads fall back to
// slower paths; Close is for when the Repo is no longer used.
func (r *Repo) Close() error {
	return r.objs.close()
}

// objects returns the object reader, made at the first call; nil after
// Close.
func (r *Repo) objects() *gitobj.Reader {
	return r.objs.get()
}

// lazyObjects is a repository's gitobj.Reader, opened at the first read.
type lazyObjects struct {
	dir string // the objects directory

	// mu guards r and closed only; reads through r take no lock.
	mu     sync.Mutex
	r      *gitobj.Reader
	closed bool
}

// get returns the reader, opening it at the first call; nil after close.
func (l *lazyObjects) get() *gitobj.Reader {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.r == nil && !l.closed {
		l.r = gitobj.Open(l.dir)
	}
	return l.r
}

// opened reports whether the reader was opened and not closed since.
func (l *lazyObjects) opened() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r != nil
}

func (l *lazyObjects) close() error {
	l.mu.Lock()
	o := l.r
	l.r, l.closed = nil, true
	l.mu.Unlock()
	if o == nil {
		return nil
	}
	return o.Close()
}

// readObject reads object h of type t through the object reader; ok is
// false when it cannot (absent, corrupt, closed, another type), and the
// caller then asks go-git, which answers as it always did.
func (r *Repo) readObject(h plumbing.Hash, t plumbing.ObjectType) ([]byte, bool) {
	o := r.objects()
	if o == nil {
		return nil, false
	}
	got, b, err := o.Read(h)
	if err != nil || got != t {
		return nil, false
	}
	return b, true
}

// objectSize is readObject for an object's size only.
func (r *Repo) objectSize(h plumbing.Hash, t plumbing.ObjectType) (int64, bool) {
	o := r.objects()
	if o == nil {
		return 0, false
	}
	got, n, err := o.Size(h)
	if err != nil || got != t {
		return 0, false
	}
	return n, true
}

// PackOrder returns the indexes of oids in the order their objects lie
// in the repository's packs, those in none (loose, unknown, malformed)
// last in their given order. Reading many blobs in that order walks
// the delta chains they share one after the other, whose bases the
// object reader's small cache then still holds.
func (r *Repo) PackOrder(oids []string) []int {
	order := make([]int, len(oids))
	for i := range order {
		order[i] = i
	}
	o := r.objects()
	if o == nil {
		return order
	}
	type pos struct {
		pack int
		off  int64
		ok   bool
	}
	at := make([]pos, len(oids))
	for i, oid := range oids {
		if h, err := parseOID(oid); err == nil {
			at[i].pack, at[i].off, at[i].ok = o.Position(h)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, pb := at[a], at[b]
		switch {
		case pa.ok != pb.ok:
			if pa.ok {
				return -1
			}
			return 1
		case !pa.ok:
			return 0
		case pa.pack != pb.pack:
			return cmp.Compare(pa.pack, pb.pack)
		}
		return cmp.Compare(pa.off, pb.off)
	})
	return order
}

// ReadBlob returns the content of a blob from the object store.
func (r *Repo) ReadBlob(oid string) ([]byte, error) {
	h, err := parseOID(oid)
	if err != nil {
		return nil, fmt.Errorf("scm: read blob %s: %w", oid, err)
	}
	if b, ok := r.readObject(h, plumbing.BlobObject); ok {
		return b, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := readBlobGit(r.repo, h)
	if err != nil {
		return nil, fmt.Errorf("scm: read blob %s: %w", oid, err)
	}
	return b, nil
}

// readBlobLocked reads a blob. r.mu must be held (for the go-git
// fallback).
func (r *Repo) readBlobLocked(h plumbing.Hash) ([]byte, error) {
	if b, ok := r.readObject(h, plumbing.BlobObject); ok {
		return b, nil
	}
	return readBlobGit(r.repo, h)
}

// readBlobGit reads a blob through go-git. The Repo's mu must be held.
func readBlobGit(repo *git.Repository, h plumbing.Hash) ([]byte, error) {
	blob, err := repo.BlobObject(h)
	if err != nil {
		return nil, err
	}
	rd, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

func parseOID(oid string) (plumbing.Hash, error) {
	if len(oid) != 2*len(plumbing.ZeroHash) {
		return plumbing.ZeroHash, fmt.Errorf("not a full object id")
	}
	if _, err := hex.DecodeString(oid); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("not a hex object id")
	}
	return plumbing.NewHash(oid), nil
}

// ReadWorktree returns the working-tree content of path and its git mode:
// a symlink's content is its target, a submodule's is its checked-out
// commit id. The bytes are as on disk (see ReadWorktreeCanonical for what
// git would store). Paths that are absolute, contain "..", lead through a
// symlinked directory or into .git are refused with an error wrapping
// ErrOutsideWorktree.
func (r *Repo) ReadWorktree(p string) ([]byte, uint32, error) {
	return r.readWorktree(p, newSettings(loadConfig(r.commonDir, r.gitDir)))
}

// readWorktree is ReadWorktree with the config's settings already loaded.
func (r *Repo) readWorktree(p string, s settings) ([]byte, uint32, error) {
	if rel, err := cleanRel(p); err == nil && rel != "" {
		if b, fi, ok := readPlainFile(r.root, rel); ok {
			return b, uint32(workMode(&s, statOf(fi), r.indexEntry(rel))), nil
		}
	}
	rel, fi, err := r.lstatInside(p)
	if err != nil {
		return nil, 0, err
	}
	ie := r.indexEntry(rel)
	abs := filepath.Join(r.root, filepath.FromSlash(rel))
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(abs)
		if err != nil {
			return nil, 0, fmt.Errorf("scm: read worktree %s: %w", rel, err)
		}
		return []byte(t), uint32(filemode.Symlink), nil
	case fi.IsDir():
		if h, ok := resolveNestedHead(abs); ok {
			return []byte(h.String()), uint32(filemode.Submodule), nil
		}
		return nil, 0, fmt.Errorf("scm: read worktree %s: is a directory", rel)
	case fi.Mode().IsRegular():
		root, err := os.OpenRoot(r.root)
		if err != nil {
			return nil, 0, fmt.Errorf("scm: read worktree %s: %w", rel, err)
		}
		defer root.Close()
		f, _, err := openRegularIn(root, filepath.FromSlash(rel))
		if err != nil {
			return nil, 0, fmt.Errorf("scm: read worktree %s: %w", rel, err)
		}
		defer f.Close()
		b, err := readAllSized(f, fi.Size())
		if err != nil {
			return nil, 0, fmt.Errorf("scm: read worktree %s: %w", rel, err)
		}
		return b, uint32(workMode(&s, statOf(fi), ie)), nil
	}
	return nil, 0, fmt.Errorf("scm: read worktree %s: %w (%s)", rel, ErrNotRegular, FileType(fi.Mode()))
}

// indexEntry is rel's entry in the index as last read, nil if none.
func (r *Repo) indexEntry(rel string) *idxEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.idx == nil {
		return nil
	}
	return r.idx.get(rel)
}

// ReadWorktreeCanonical is ReadWorktree with git's clean conversion applied
// to regular files (CRLF normalisation under core.autocrlf or text/eol
// attributes, filter=lfs, working-tree-encoding, ident): the bytes git
// would store for the file, which is what to diff against a HEAD blob.
// Warnings name clean steps that could not be applied (a filter whose
// driver cannot be run here, content that does not decode from its
// working-tree-encoding); the content is then as on disk, as git's own
// diff shows it in the second case.
func (r *Repo) ReadWorktreeCanonical(p string) (content []byte, mode uint32, warnings []string, err error) {
	return r.WorktreeReader()(p)
}

// WorktreeReader returns a function that reads working-tree files as
// ReadWorktreeCanonical does, with git's configuration and the
// attribute files read once, at its first call, for every file it reads
// after: the files of one view are read as one git command reads them,
// not each with the configuration and attributes read again. It is safe
// for concurrent use.
func (r *Repo) WorktreeReader() func(p string) (content []byte, mode uint32, warnings []string, err error) {
	var (
		once sync.Once
		s    settings
		ru   *rules // guarded by r.mu, made at the first use
	)
	return func(p string) ([]byte, uint32, []string, error) {
		once.Do(func() { s = newSettings(loadConfig(r.commonDir, r.gitDir)) })
		b, mode, err := r.readWorktree(p, s)
		if err != nil || (mode != uint32(filemode.Regular) && mode != uint32(filemode.Executable)) {
			return b, mode, nil, err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if ru == nil {
			ru = newRules(r.root, r.commonDir, &s)
		}
		return r.canonicalLocked(p, b, mode, &s, ru)
	}
}

// canonicalLocked is a working-tree file's content b as git would store
// it, under the settings s and attributes ru. r.mu must be held.
func (r *Repo) canonicalLocked(p string, b []byte, mode uint32, s *settings, ru *rules) (content []byte, _ uint32, warnings []string, err error) {
	rel, _ := cleanRel(p)
	plan := planFor(ru.attrs(rel), s)
	if plan.unsupported != "" {
		return b, mode, []string{fmt.Sprintf("%s: %s not applied", rel, plan.unsupported)}, nil
	}
	var ie *idxEntry
	if r.idx != nil {
		ie = r.idx.get(rel)
	}
	c, err := r.cleanLocked(rel, b, plan, ie)
	if err != nil {
		warnings = []string{fmt.Sprintf("%v; shown as it is on disk", err)}
	}
	return c, mode, warnings, nil
}

// lstatInside validates p and lstats it, refusing any symlinked parent.
func (r *Repo) lstatInside(p string) (string, fs.FileInfo, error) {
	rel, err := cleanRel(p)
	if err != nil {
		return "", nil, fmt.Errorf("scm: read worktree %s: %w", p, err)
	}
	if rel == "" {
		return "", nil, fmt.Errorf("scm: read worktree %s: is the root", p)
	}
	parts := strings.Split(rel, "/")
	cur := r.root
	for _, c := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if err != nil {
			return "", nil, fmt.Errorf("scm: read worktree %s: %w", rel, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", nil, fmt.Errorf("scm: read worktree %s: %w: %s is a symlink", rel, ErrOutsideWorktree, c)
		}
		if !fi.IsDir() {
			return "", nil, fmt.Errorf("scm: read worktree %s: %s is not a directory", rel, c)
		}
	}
	fi, err := os.Lstat(filepath.Join(r.root, filepath.FromSlash(rel)))
	if err != nil {
		return "", nil, fmt.Errorf("scm: read worktree %s: %w", rel, err)
	}
	return rel, fi, nil
}

// DefaultBaseBranch returns the branch a "branch" changeset compares with:
// the target of origin/HEAD (as "origin/<name>"), else main, else master
// (local first, then origin's).
func (r *Repo) DefaultBaseBranch() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ref, err := r.repo.Reference("refs/remotes/origin/HEAD", false); err == nil && ref.Type() == plumbing.SymbolicReference {
		t := ref.Target()
		if _, err := r.repo.Reference(t, true); err == nil && t.IsRemote() {
			return strings.TrimPrefix(t.String(), "refs/remotes/"), nil
		}
	}
	for _, b := range []string{"main", "master"} {
		for _, cand := range []plumbing.ReferenceName{plumbing.NewBranchReferenceName(b), plumbing.NewRemoteReferenceName("origin", b)} {
			if _, err := r.repo.Reference(cand, true); err == nil {
				return cand.Short(), nil
			}
		}
	}
	return "", ErrNoBaseBranch
}

// headState is HEAD resolved: the commit (zero when unborn) and branch.
type headState struct {
	commit plumbing.Hash
	branch string
}

// headMemo is HEAD resolved through a branch, and the stat data of HEAD,
// the branch's loose ref and packed-refs when it was (zero for a file
// that was missing). git replaces each of them by renaming a lock file
// over it, so a file that stats the same holds the same content.
type headMemo struct {
	files  [3]fileStat
	target plumbing.ReferenceName
	hs     headState
}

// statOrZero is path's lstat data, zero when it cannot be read.
func statOrZero(path string) fileStat {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileStat{}
	}
	return statOf(fi)
}

// headLocked resolves HEAD. r.mu must be held.
func (r *Repo) headLocked() (headState, error) {
	if m := &r.head; m.target != "" {
		// Three lstats instead of reading HEAD and resolving the branch
		// again: a view asks for HEAD once per file it shows.
		files := [3]fileStat{statOrZero(filepath.Join(r.gitDir, "HEAD")),
			statOrZero(filepath.Join(r.commonDir, filepath.FromSlash(string(m.target)))),
			statOrZero(filepath.Join(r.commonDir, "packed-refs"))}
		if files == m.files && files[0] != (fileStat{}) {
			return m.hs, nil
		}
	}
	var hs headState
	files := [3]fileStat{statOrZero(filepath.Join(r.gitDir, "HEAD"))}
	// Read as git reads it, every time HEAD's file changed: it may have
	// been damaged since Open.
	target, id, err := readHead(r.gitDir)
	if err != nil {
		return hs, fmt.Errorf("scm: read HEAD: %w", err)
	}
	if target == "" {
		hs.commit = id
		return hs, nil
	}
	if target.IsBranch() {
		hs.branch = target.Short()
	}
	// The ref files are stat'ed before they are read: a change after
	// the stat makes the next call read them again.
	files[1] = statOrZero(filepath.Join(r.commonDir, filepath.FromSlash(string(target))))
	files[2] = statOrZero(filepath.Join(r.commonDir, "packed-refs"))
	r.head = headMemo{}
	res, err := r.repo.Reference(target, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return hs, nil // unborn branch
	}
	if err != nil {
		return hs, fmt.Errorf("scm: resolve HEAD: %w", err)
	}
	hs.commit = res.Hash()
	if target.IsBranch() && res.Name() == target {
		// A branch whose ref is a commit id (not another symbolic ref,
		// whose own file the stat data would not cover).
		r.head = headMemo{files: files, target: target, hs: hs}
	}
	return hs, nil
}

// maxObjectMemo bounds Repo.commitTrees and Repo.blobSizes: 100,000 sizes
// are about 4 MB, more than the changed files of any view we serve.
const maxObjectMemo = 100000

// blobSizeLocked returns the size of blob h. r.mu must be held.
func (r *Repo) blobSizeLocked(h plumbing.Hash) (int64, error) {
	if n, ok := r.blobSizes[h]; ok {
		return n, nil
	}
	n, ok := r.objectSize(h, plumbing.BlobObject)
	if !ok {
		var err error
		if n, err = r.repo.Storer.EncodedObjectSize(h); err != nil {
			return 0, err
		}
	}
	if len(r.blobSizes) >= maxObjectMemo {
		clear(r.blobSizes)
	}
	r.blobSizes[h] = n
	return n, nil
}

// BlobSize returns the size of the stored blob oid without reading its
// content.
func (r *Repo) BlobSize(oid string) (int64, error) {
	h, err := parseOID(oid)
	if err != nil {
		return 0, fmt.Errorf("scm: blob size %s: %w", oid, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blobSizeLocked(h)
}

// flatTree is a tree flattened to path -> entry (gitlinks included, not
// descended): paths sorted bytewise and their entries beside them, looked
// up by binary search. Two slices rather than a map: at a million paths a
// map[string]treeEntry is a hundred megabytes of buckets the collector
// scans, the entries' slice is 24 bytes a path and holds no pointer. The
// paths are mostly the index's own strings (see fromCacheTree).
type flatTree struct {
	paths []string
	ents  []treeEntry // ents[i] is paths[i]'s entry
}

type treeEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

var emptyTree = &flatTree{}

// get returns path p's entry.
func (t *flatTree) get(p string) (treeEntry, bool) {
	i, ok := slices.BinarySearch(t.paths, p)
	if !ok {
		return treeEntry{}, false
	}
	return t.ents[i], true
}

func (t *flatTree) add(p string, e treeEntry) {
	t.paths = append(t.paths, p)
	t.ents = append(t.ents, e)
}

// sortPaths puts the paths in order, their entries with them. Trees are
// flattened in git's order, which is the paths' bytewise order, so this
// is only a check unless a tree was out of order.
func (t *flatTree) sortPaths() {
	if slices.IsSorted(t.paths) {
		return
	}
	order := make([]int, len(t.paths))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(t.paths[a], t.paths[b]) })
	paths := make([]string, len(order))
	ents := make([]treeEntry, len(order))
	for i, j := range order {
		paths[i], ents[i] = t.paths[j], t.ents[j]
	}
	t.paths, t.ents = paths, ents
}

// under returns the sorted paths equal to scope or below it ("" = all).
func under(sorted []string, scope string) []string {
	if scope == "" {
		return sorted
	}
	var out []string
	if i := sort.SearchStrings(sorted, scope); i < len(sorted) && sorted[i] == scope {
		out = append(out, scope)
	}
	prefix := scope + "/"
	i := sort.SearchStrings(sorted, prefix)
	j := i
	for j < len(sorted) && strings.HasPrefix(sorted[j], prefix) {
		j++
	}
	return append(out, sorted[i:j]...)
}

// treeLocked returns the flattened tree of commit c (the empty tree for the
// zero hash). r.mu must be held.
func (r *Repo) treeLocked(ctx context.Context, c plumbing.Hash) (*flatTree, error) {
	if c.IsZero() {
		return emptyTree, nil
	}
	treeHash, ok := r.commitTrees[c]
	if !ok {
		var err error
		if treeHash, err = r.commitTree(c); err != nil {
			return nil, fmt.Errorf("scm: read commit %s: %w", c, err)
		}
		if len(r.commitTrees) >= maxObjectMemo {
			clear(r.commitTrees)
		}
		r.commitTrees[c] = treeHash
	}
	if t, ok := r.trees[treeHash]; ok {
		return t, nil
	}
	// The index's cache-tree spares reading the trees it vouches for; an
	// unreadable index only means no shortcut.
	idx, _ := r.indexLocked()
	ft := &flatTree{}
	if idx != nil {
		// The index's size is a close guess of the tree's: it spares
		// the entries' growth. The paths are often the index's own
		// (fromCacheTree), so they grow as needed.
		ft.ents = make([]treeEntry, 0, len(idx.names))
	}
	if err := r.flatten(ctx, treeHash, "", ft, idx); err != nil {
		return nil, fmt.Errorf("scm: read tree %s: %w", treeHash, err)
	}
	ft.sortPaths()
	// A handful of trees is enough: HEAD's, plus a merge base or two.
	if len(r.trees) >= 4 {
		clear(r.trees)
	}
	r.trees[treeHash] = ft
	return ft, nil
}

// flatten adds tree h, found at directory prefix, to ft. Where the index's
// cache-tree holds a valid entry for prefix with the same tree id, the
// index entries below prefix are that tree's content (git's cache-tree
// invariant), so they are taken from the index and no tree object is read;
// this is how git's diff-index skips unchanged directories. The entries
// are checked against the cache-tree's count and must all be plain merged
// entries; anything else falls back to reading the tree.
func (r *Repo) flatten(ctx context.Context, h plumbing.Hash, prefix string, ft *flatTree, idx *indexSnapshot) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if idx != nil && fromCacheTree(idx, h, prefix, ft) {
		r.treeShortcuts++
		return nil
	}
	r.treeReads++
	entries, err := r.readTree(h)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := e.Name
		if prefix != "" {
			p = prefix + "/" + e.Name
		}
		if e.Mode == filemode.Dir {
			if err := r.flatten(ctx, e.Hash, p, ft, idx); err != nil {
				return err
			}
			continue
		}
		ft.add(p, treeEntry{mode: e.Mode, hash: e.Hash})
	}
	return nil
}

// commitTree returns commit c's tree id, from the object reader's bytes
// (a commit starts with "tree <id>\n") or else through go-git.
func (r *Repo) commitTree(c plumbing.Hash) (plumbing.Hash, error) {
	if b, ok := r.readObject(c, plumbing.CommitObject); ok {
		const n = len("tree ") + 40
		if len(b) > n && string(b[:5]) == "tree " && b[n] == '\n' && plumbing.IsHash(string(b[5:n])) {
			return plumbing.NewHash(string(b[5:n])), nil
		}
	}
	commit, err := r.repo.CommitObject(c)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return commit.TreeHash, nil
}

// readTree returns tree h's entries, decoded from the object reader's
// bytes, or through go-git when the reader cannot answer or the bytes do
// not decode.
func (r *Repo) readTree(h plumbing.Hash) ([]object.TreeEntry, error) {
	if b, ok := r.readObject(h, plumbing.TreeObject); ok {
		if entries, err := decodeTree(b); err == nil {
			return entries, nil
		}
	}
	t, err := object.GetTree(r.repo.Storer, h)
	if err != nil {
		return nil, err
	}
	return t.Entries, nil
}

// errCorrupt is wrapped by errors for malformed objects.
var errCorrupt = gitobj.ErrCorrupt

// decodeTree decodes a raw tree object: entries of
// "<octal mode> <name>\0<20-byte id>".
func decodeTree(b []byte) ([]object.TreeEntry, error) {
	n := 0
	for i := range b {
		if b[i] == 0 {
			n++
		}
	}
	entries := make([]object.TreeEntry, 0, n)
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		if sp <= 0 {
			return nil, fmt.Errorf("%w: tree entry mode", errCorrupt)
		}
		var mode uint32
		for _, c := range b[:sp] {
			if c < '0' || c > '7' || mode > 1<<28 {
				return nil, fmt.Errorf("%w: tree entry mode %q", errCorrupt, b[:sp])
			}
			mode = mode<<3 | uint32(c-'0')
		}
		b = b[sp+1:]
		nul := bytes.IndexByte(b, 0)
		if nul <= 0 || len(b) < nul+1+len(plumbing.ZeroHash) {
			return nil, fmt.Errorf("%w: tree entry name", errCorrupt)
		}
		e := object.TreeEntry{Name: string(b[:nul]), Mode: filemode.FileMode(mode)}
		copy(e.Hash[:], b[nul+1:])
		entries = append(entries, e)
		b = b[nul+1+len(plumbing.ZeroHash):]
	}
	return entries, nil
}

// fromCacheTree adds the index entries below prefix to ft if the index's
// cache-tree vouches that they are tree h; it reports whether it did.
func fromCacheTree(idx *indexSnapshot, h plumbing.Hash, prefix string, ft *flatTree) bool {
	ct, ok := idx.tree[prefix]
	if !ok || ct.oid != h {
		return false
	}
	if prefix != "" && idx.get(prefix) != nil {
		return false // a file where the tree has a directory
	}
	lo, hi := idx.below(prefix)
	if hi-lo != ct.count {
		return false
	}
	for i := lo; i < hi; i++ {
		ie := &idx.ents[i]
		if ie.conflict || ie.e.IntentToAdd || !validTreeMode(ie.e.Mode) {
			return false
		}
	}
	if len(ft.paths) == 0 && prefix == "" {
		// The whole tree is the index's: its paths are the index's
		// names, shared (capped, so that nothing appends into them).
		ft.paths = idx.names[lo:hi:hi]
		for i := lo; i < hi; i++ {
			e := idx.ents[i].e
			ft.ents = append(ft.ents, treeEntry{mode: e.Mode, hash: e.Hash})
		}
		return true
	}
	for i := lo; i < hi; i++ {
		e := idx.ents[i].e
		ft.add(idx.names[i], treeEntry{mode: e.Mode, hash: e.Hash})
	}
	return true
}

// validTreeMode reports whether m is a mode git writes for a tree entry.
func validTreeMode(m filemode.FileMode) bool {
	switch m {
	case filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule:
		return true
	}
	return false
}

// indexSnapshot is the decoded index: one entry per path, in the paths'
// order, looked up by binary search. Slices rather than a map, for the
// reason flatTree gives.
type indexSnapshot struct {
	stat  fileStat   // of the index file when read
	names []string   // sorted, one per path
	ents  []idxEntry // ents[i] is names[i]'s
	mtime int64      // index file mtime (ns): the racy-git boundary
	// tree is the index's valid cache-tree entries by directory; see
	// cacheTree and (*Repo).flatten.
	tree map[string]cacheTree
}

// stageMerged is the stage of an ordinary entry as the decoder returns it
// (the on-disk stage bits, 0). go-git's index.Merged constant is 1, which
// is the "ancestor" stage of a conflict, so it is not used here.
const stageMerged index.Stage = 0

// find returns the position of path p's entry, -1 when the index has
// none.
func (x *indexSnapshot) find(p string) int {
	i, ok := slices.BinarySearch(x.names, p)
	if !ok {
		return -1
	}
	return i
}

// findIn is find among the entries lo to hi.
func (x *indexSnapshot) findIn(p string, lo, hi int) int {
	i, ok := slices.BinarySearch(x.names[lo:hi], p)
	if !ok {
		return -1
	}
	return lo + i
}

// get returns path p's entry, nil when the index has none.
func (x *indexSnapshot) get(p string) *idxEntry {
	i, ok := slices.BinarySearch(x.names, p)
	if !ok {
		return nil
	}
	return &x.ents[i]
}

// at yields the position and name of each entry at or below scope ("":
// all), in order: the scope's own entry, then the run below it.
func (x *indexSnapshot) at(scope string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		lo, hi := 0, len(x.names)
		if scope != "" {
			if i := x.find(scope); i >= 0 && !yield(i, scope) {
				return
			}
			lo, hi = x.below(scope)
		}
		for i := lo; i < hi; i++ {
			if !yield(i, x.names[i]) {
				return
			}
		}
	}
}

// below returns the range of names under directory dir ("" = all), dir
// itself excluded.
func (x *indexSnapshot) below(dir string) (lo, hi int) {
	if dir == "" {
		return 0, len(x.names)
	}
	prefix := dir + "/"
	lo, _ = slices.BinarySearch(x.names, prefix)
	hi = lo + sort.Search(len(x.names)-lo, func(i int) bool { return !strings.HasPrefix(x.names[lo+i], prefix) })
	return lo, hi
}

type idxEntry struct {
	// e is the path's stage-0 entry, or its first conflict stage.
	e indexEntry
	// conflict: only stages 1-3 exist for this path.
	conflict bool
	// assumed: the entry carries the assume-valid bit ("git update-index
	// --assume-unchanged"): git takes the working file to be the entry,
	// whatever is on disk.
	assumed bool
}

// indexEntry is what the resident index keeps of an entry: fixed size
// (60 bytes) and free of pointers, where go-git's index.Entry is 128
// bytes with two time.Times whose locations the collector follows (148
// MB of live heap at a million files, with the names). The names are
// indexSnapshot's. Times are as the index file stores them, seconds and
// nanoseconds; modTime and changeTime give them back as the decoder's
// time.Time would be.
type indexEntry struct {
	Hash                     plumbing.Hash
	Mode                     filemode.FileMode
	Size, Inode, UID, GID    uint32
	msec, mnsec, csec, cnsec uint32
	IntentToAdd              bool
	SkipWorktree             bool
}

// newIndexEntry keeps what the resident index needs of e.
func newIndexEntry(e *index.Entry) indexEntry {
	x := indexEntry{Hash: e.Hash, Mode: e.Mode, Size: e.Size, Inode: e.Inode, UID: e.UID, GID: e.GID,
		IntentToAdd: e.IntentToAdd, SkipWorktree: e.SkipWorktree}
	x.msec, x.mnsec = fileTime(e.ModifiedAt)
	x.csec, x.cnsec = fileTime(e.CreatedAt)
	return x
}

// fileTime is t as an index entry stores it: the zero Time (no stat
// data) as 0, 0, as the decoder reads it back.
func fileTime(t time.Time) (sec, nsec uint32) {
	if t.IsZero() {
		return 0, 0
	}
	return uint32(t.Unix()), uint32(t.Nanosecond())
}

// indexTime is fileTime's inverse, the decoder's reading.
func indexTime(sec, nsec uint32) time.Time {
	if sec == 0 && nsec == 0 {
		return time.Time{}
	}
	return time.Unix(int64(sec), int64(nsec))
}

// modTime is the entry's mtime, as go-git's ModifiedAt.
func (e *indexEntry) modTime() time.Time { return indexTime(e.msec, e.mnsec) }

// changeTime is the entry's ctime, as go-git's CreatedAt.
func (e *indexEntry) changeTime() time.Time { return indexTime(e.csec, e.cnsec) }

// indexLocked returns the index, re-decoding it when the file changed.
// r.mu must be held.
func (r *Repo) indexLocked() (*indexSnapshot, error) {
	path := filepath.Join(r.gitDir, "index")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		r.idx = &indexSnapshot{}
		return r.idx, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scm: read index: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("scm: read index: %w", err)
	}
	st := statOf(fi)
	if r.idx != nil && r.idx.stat == st {
		return r.idx, nil
	}
	// One buffer of the size stat gave (io.ReadAll would grow one by
	// doubling: about twice the index in garbage). git replaces the index
	// by renaming, so the open file does not change size under us.
	b := make([]byte, fi.Size())
	if n, err := io.ReadFull(f, b); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("scm: read index: %w", err)
	} else {
		b = b[:n]
	}
	snap, err := r.decodeSnapshot(b, path)
	if err != nil {
		return nil, fmt.Errorf("scm: read index: %w", err)
	}
	snap.stat, snap.mtime = st, st.mtime
	r.idx = snap
	return snap, nil
}

// decodeSnapshot decodes index file b (at path) into the resident
// index, without its stat data. An index that is neither split nor
// sparse, its entries in git's order, as nearly every index is, goes
// straight into the compact entries; any other through the full
// decoder, which merges a split index with its shared one and expands
// a sparse one.
func (r *Repo) decodeSnapshot(b []byte, path string) (*indexSnapshot, error) {
	if snap, ok, err := compactSnapshot(b); err != nil || ok {
		return snap, err
	}
	return r.fullSnapshot(b, path)
}

// fullSnapshot is decodeSnapshot through the full decoder.
func (r *Repo) fullSnapshot(b []byte, path string) (*indexSnapshot, error) {
	idx, err := decodeIndex(b, sharedIndexReader(path, r.gitDir))
	if err != nil {
		return nil, err
	}
	var sparseTrees map[string]cacheTree
	if idx.sparse {
		if sparseTrees, err = r.expandSparseLocked(context.Background(), idx); err != nil {
			return nil, err
		}
	}
	snap := &indexSnapshot{tree: idx.validTree()}
	if sparseTrees != nil {
		if snap.tree == nil {
			snap.tree = map[string]cacheTree{}
		}
		maps.Copy(snap.tree, sparseTrees)
	}
	// git writes entries sorted by path and stage; an index that is not
	// is sorted here, its stages kept in the order read.
	entries := idx.entries
	byName := func(a, b *index.Entry) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(entries, byName) {
		entries = slices.Clone(entries)
		slices.SortStableFunc(entries, byName)
	}
	snap.ents = make([]idxEntry, 0, len(entries))
	snap.names = make([]string, 0, len(entries))
	for _, e := range entries {
		n := len(snap.names)
		var added bool
		snap.ents, added = appendStage(snap.ents, n > 0 && snap.names[n-1] == e.Name, newIndexEntry(e), e.Stage, idx.assumeValid[e])
		if added {
			snap.names = append(snap.names, e.Name)
		}
	}
	return snap, nil
}

// appendStage adds one stage of a path to the resident entries, which
// keep one entry per path: its stage-0 entry when it has one, else its
// first conflict stage. same tells whether the path is the last one
// added; added whether e started a new path.
func appendStage(ents []idxEntry, same bool, e indexEntry, stage index.Stage, assumeValid bool) (_ []idxEntry, added bool) {
	if same {
		if stage == stageMerged {
			ents[len(ents)-1] = idxEntry{e: e, assumed: assumeValid}
		}
		return ents, false
	}
	return append(ents, idxEntry{e: e, conflict: stage != stageMerged, assumed: stage == stageMerged && assumeValid}), true
}

// compactSnapshot decodes index file b straight into the resident
// index: no go-git entry per path (128 bytes with two times, then
// garbage), only the compact entries and one string of all names.
// ok is false, with no error, for an index it leaves to the full
// decoder: split, sparse, or its entries out of git's order.
func compactSnapshot(b []byte) (snap *indexSnapshot, ok bool, err error) {
	version, n, end, err := indexHeader(b)
	if err != nil {
		return nil, false, err
	}
	ents := make([]idxEntry, 0, n)
	names := make([]byte, 0, nameCapacity(b, version, n, end))
	ends := make([]int, 0, n)
	sorted := true
	var last []byte // the name of ents[len(ents)-1], in names
	off, err := readEntries(b, version, n, end, func(_ int, r *rawEntry) {
		if !sorted {
			return
		}
		e := indexEntry{Hash: r.hash, Mode: filemode.FileMode(r.mode), Size: r.size, Inode: r.inode, UID: r.uid, GID: r.gid,
			IntentToAdd: r.intentToAdd, SkipWorktree: r.skipWorktree, msec: r.msec, mnsec: r.mnsec, csec: r.csec, cnsec: r.cnsec}
		c := 1
		if len(ents) > 0 {
			c = bytes.Compare(r.name, last)
		}
		if c < 0 {
			sorted = false
			return
		}
		var added bool
		if ents, added = appendStage(ents, c == 0, e, r.stage, r.assumeValid); added {
			names = append(names, r.name...)
			ends = append(ends, len(names))
			last = names[len(names)-len(r.name):]
		}
	})
	if err != nil {
		return nil, false, err
	}
	var x indexFile
	link, err := readExtensions(b, off, end, &x)
	if err != nil {
		return nil, false, err
	}
	if !sorted || link != nil || x.sparse {
		return nil, false, nil
	}
	snap = &indexSnapshot{ents: ents, names: make([]string, len(ends)), tree: x.validTree()}
	all := string(names)
	start := 0
	for i, e := range ends {
		snap.names[i] = all[start:e]
		start = e
	}
	return snap, true, nil
}

// sparseDir is a sparse directory entry: the directory and its tree.
type sparseDir struct {
	dir string
	h   plumbing.Hash
}

// maxSparseTrees bounds Repo.sparseTrees: a cone rarely leaves out more
// than a few hundred directories.
const maxSparseTrees = 1024

// expandSparseLocked replaces the sparse directory entries of a sparse
// index with the entries of the trees they stand for, each skip-worktree
// with no stat data, as git's ensure_full_index does; the rest of the
// package then sees an ordinary index with skip-worktree entries, which
// status already compares as git does. It returns, for each expanded
// directory, the cache-tree entry the expansion makes true (its entries
// are exactly its tree), so that flattening HEAD takes an unchanged
// directory from the index instead of reading its trees a second time.
// r.mu must be held.
func (r *Repo) expandSparseLocked(ctx context.Context, x *indexFile) (map[string]cacheTree, error) {
	trees := map[string]cacheTree{}
	out := make([]*index.Entry, 0, len(x.entries))
	for _, e := range x.entries {
		if !isSparseDir(e) {
			out = append(out, e)
			continue
		}
		if e.Stage != stageMerged {
			return nil, fmt.Errorf("sparse directory %s is unmerged", e.Name)
		}
		dir := strings.TrimSuffix(e.Name, "/")
		key := sparseDir{dir, e.Hash}
		ft, ok := r.sparseTrees[key]
		if !ok {
			ft = &flatTree{}
			if err := r.flatten(ctx, e.Hash, dir, ft, nil); err != nil {
				return nil, fmt.Errorf("sparse directory %s: tree %s: %w", e.Name, e.Hash, err)
			}
			ft.sortPaths()
			if r.sparseTrees == nil || len(r.sparseTrees) >= maxSparseTrees {
				r.sparseTrees = map[sparseDir]*flatTree{}
			}
			r.sparseTrees[key] = ft
		}
		for i, p := range ft.paths {
			te := ft.ents[i]
			out = append(out, &index.Entry{Name: p, Mode: te.mode, Hash: te.hash, SkipWorktree: true})
		}
		trees[dir] = cacheTree{count: len(ft.paths), oid: e.Hash}
	}
	x.entries, x.sparse = out, false
	return trees, nil
}

// resolveNestedHead returns the commit checked out in the repository at dir
// (a submodule or nested repository), reading its HEAD and refs directly.
func resolveNestedHead(dir string) (plumbing.Hash, bool) {
	gitDir, err := resolveGitDir(dir)
	if err != nil {
		return plumbing.ZeroHash, false
	}
	commonDir := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		commonDir = c
	}
	ref := "HEAD"
	for range 5 {
		var b []byte
		var err error
		if ref == "HEAD" {
			b, err = os.ReadFile(filepath.Join(gitDir, "HEAD"))
		} else {
			b, err = os.ReadFile(filepath.Join(commonDir, filepath.FromSlash(ref)))
		}
		if err != nil {
			if ref == "HEAD" {
				return plumbing.ZeroHash, false
			}
			return packedRef(commonDir, ref)
		}
		v := strings.TrimSpace(string(b))
		if t, ok := strings.CutPrefix(v, "ref:"); ok {
			ref = strings.TrimSpace(t)
			continue
		}
		if plumbing.IsHash(v) {
			return plumbing.NewHash(v), true
		}
		return plumbing.ZeroHash, false
	}
	return plumbing.ZeroHash, false
}

func packedRef(commonDir, ref string) (plumbing.Hash, bool) {
	f, err := os.Open(filepath.Join(commonDir, "packed-refs"))
	if err != nil {
		return plumbing.ZeroHash, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if h, name, ok := strings.Cut(line, " "); ok && name == ref && plumbing.IsHash(h) {
			return plumbing.NewHash(h), true
		}
	}
	return plumbing.ZeroHash, false
}
