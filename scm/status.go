package scm

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// ChangeKind classifies a Change.
type ChangeKind int

const (
	Modified    ChangeKind = iota + 1 // content or executable bit differs
	Added                             // absent at the base: untracked, or staged new
	Deleted                           // absent in the working tree
	TypeChanged                       // file, symlink and submodule swapped
)

func (k ChangeKind) String() string {
	switch k {
	case Modified:
		return "M"
	case Added:
		return "A"
	case Deleted:
		return "D"
	case TypeChanged:
		return "T"
	}
	return fmt.Sprintf("ChangeKind(%d)", int(k))
}

// FileState is one side of a Change.
type FileState struct {
	Path string
	Mode uint32 // git mode: 0100644, 0100755, 0120000 or 0160000
	// OID is the hex blob id (commit id for submodules); "" when unknown or
	// not hashed (untracked files that are new at the base are not hashed;
	// see HashWorktree).
	OID  string
	Size int64 // blob size at the base; size on disk in the working tree
	// Stored: the working-tree side is the index entry's blob, not the
	// file on disk, which git does not look at (an entry marked
	// assume-unchanged, or skip-worktree); read it from the object store.
	Stored bool
	// Content, on a working-tree side, is the content OID was computed
	// from (clean conversion applied: what ReadWorktreeCanonical gives),
	// when the scan read the file to hash it and was asked to keep it
	// (StatusOptions.KeepContent); nil otherwise. A diff takes it instead
	// of reading the file a second time.
	Content []byte
}

// Change is one path whose working-tree state differs from the base.
type Change struct {
	Path      string // slash-separated, relative to the root
	Kind      ChangeKind
	Head      *FileState // nil when absent at the base
	Work      *FileState // nil when absent in the working tree
	Untracked bool       // the working-tree side is not in the index
	Submodule bool       // either side is a gitlink (or an untracked nested repository)
}

// Status is a full scan.
type Status struct {
	Changes  []Change // sorted by path
	Warnings []string // clean steps that could not be applied, and the like
	HeadOID  string   // "" on an unborn branch
	Branch   string   // short name; "" when HEAD is detached
	// BaseOID is the commit whose tree was the base: HEAD, or the merge
	// base for StatusAgainst; "" for the empty tree.
	BaseOID string
}

// maxWarnings caps Status.Warnings; a repo full of filtered files would
// otherwise produce one line per file.
const maxWarnings = 20

// racySlack widens the racy window of our own cache. File timestamps come
// from the kernel's coarse clock, which lags time.Now by up to a tick (4 ms
// at HZ=250, 10 ms at HZ=100), so a write just after we read a file can
// carry a timestamp slightly before our read started.
const racySlack = 100 * time.Millisecond

// cacheEntry is what we learnt by hashing a file.
type cacheEntry struct {
	st   fileStat
	plan string        // cleanPlan.key() the hash was made under
	base plumbing.Hash // index blob, when the plan consulted it
	oid  plumbing.Hash
}

// Status compares the HEAD tree (the empty tree on an unborn branch) with
// the working tree: staged and unstaged changes together, plus untracked
// files listed one by one.
func (r *Repo) Status(ctx context.Context) (*Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil {
		return nil, err
	}
	return r.statusLocked(ctx, hs, hs.commit)
}

// Preload reads what a Status starts with, the index and HEAD's tree, into
// the Repo's caches, so that it can overlap other work (the file watcher
// being armed) that must come before the Status's walk of the tree.
func (r *Repo) Preload(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil {
		return err
	}
	_, err = r.treeLocked(ctx, hs.commit)
	return err
}

// StatusAgainst is Status with the base set to the merge base of baseRev
// (a branch such as "main" or "origin/main", or any revision) and HEAD.
func (r *Repo) StatusAgainst(ctx context.Context, baseRev string) (*Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil {
		return nil, err
	}
	h, err := r.repo.ResolveRevision(plumbing.Revision(baseRev))
	if err != nil {
		return nil, fmt.Errorf("scm: resolve %s: %w", baseRev, err)
	}
	if hs.commit.IsZero() {
		return nil, fmt.Errorf("scm: merge base of %s and HEAD: HEAD has no commits", baseRev)
	}
	base, err := r.mergeBaseLocked(*h, hs.commit)
	if err != nil {
		return nil, fmt.Errorf("scm: merge base of %s and HEAD: %w", baseRev, err)
	}
	return r.statusLocked(ctx, hs, base)
}

func (r *Repo) mergeBaseLocked(a, b plumbing.Hash) (plumbing.Hash, error) {
	if a == b {
		return a, nil
	}
	ca, err := r.repo.CommitObject(a)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	cb, err := r.repo.CommitObject(b)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	bases, err := ca.MergeBase(cb)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if len(bases) == 0 {
		return plumbing.ZeroHash, fmt.Errorf("no common ancestor")
	}
	// Criss-cross histories have several; pick deterministically.
	sort.Slice(bases, func(i, j int) bool { return bases[i].Hash.String() < bases[j].Hash.String() })
	return bases[0].Hash, nil
}

func (r *Repo) statusLocked(ctx context.Context, hs headState, baseCommit plumbing.Hash) (*Status, error) {
	base, err := r.treeLocked(ctx, baseCommit)
	if err != nil {
		return nil, err
	}
	s, err := r.newScan(ctx)
	if err != nil {
		return nil, err
	}
	changes, err := s.run([]string{""}, base)
	if err != nil {
		return nil, err
	}
	st := &Status{Changes: changes, Warnings: s.warnings(), Branch: hs.branch}
	if !hs.commit.IsZero() {
		st.HeadOID = hs.commit.String()
	}
	if !baseCommit.IsZero() {
		st.BaseOID = baseCommit.String()
	}
	return st, nil
}

// StatusOptions are a path-scoped status's options.
type StatusOptions struct {
	// KeepContent is how many bytes of content, in all, the scan keeps
	// of the files it reads to hash (FileState.Content), each no larger
	// than MaxKeptFile; past it files are hashed without being kept.
	// Zero keeps nothing.
	KeepContent, MaxKeptFile int64
}

// StatusPaths re-checks only paths (files or directories, relative to the
// root; "" or "." is the whole tree) against HEAD and returns the current
// changes at or below them, sorted; an empty result means clean. The stat
// cache from earlier scans is reused, so only files whose stat changed are
// hashed. Warnings are dropped; Status reports them.
func (r *Repo) StatusPaths(ctx context.Context, paths []string) ([]Change, error) {
	return r.StatusPathsWith(ctx, paths, StatusOptions{})
}

// StatusPathsWith is StatusPaths with options: the content of each
// changed file the scan read is kept in its change, within a budget, for
// a diff to take without reading the file again.
func (r *Repo) StatusPathsWith(ctx context.Context, paths []string, opt StatusOptions) ([]Change, error) {
	scopes := make([]string, 0, len(paths))
	for _, p := range paths {
		rel, err := cleanRel(p)
		if err != nil {
			return nil, fmt.Errorf("scm: status %s: %w", p, err)
		}
		scopes = append(scopes, rel)
	}
	if len(scopes) == 0 {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil {
		return nil, err
	}
	base, err := r.treeLocked(ctx, hs.commit)
	if err != nil {
		return nil, err
	}
	s, err := r.newScan(ctx)
	if err != nil {
		return nil, err
	}
	s.keepLeft, s.keepMax = opt.KeepContent, opt.MaxKeptFile
	return s.run(scopes, base)
}

// HashWorktree returns the blob id git would store for the working-tree
// file at path (clean filters applied), using and filling the stat cache.
func (r *Repo) HashWorktree(ctx context.Context, p string) (string, error) {
	rel, fi, err := r.lstatInside(p)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.newScan(ctx)
	if err != nil {
		return "", err
	}
	st := statOf(fi)
	ie := s.idx.get(rel)
	mode := workMode(&s.set, st, ie)
	if mode == 0 {
		return "", fmt.Errorf("scm: hash %s: not a file or symlink", rel)
	}
	h, ok, err := s.hash(rel, st, mode, ie)
	if err != nil {
		return "", fmt.Errorf("scm: hash %s: %w", rel, err)
	}
	if !ok {
		return "", fmt.Errorf("scm: hash %s: %s", rel, strings.Join(s.warns, "; "))
	}
	return h.String(), nil
}

// scan is one status computation. It runs with r.mu held.
type scan struct {
	r     *Repo
	ctx   context.Context
	arm   func(rel string, tree bool) // WithDirHook's, or nil
	set   settings
	rules *rules
	idx   *indexSnapshot

	work      workSet
	untracked []string        // paths in work that are not in the index
	visited   map[string]bool // directories fully listed by the walk
	dirOK     map[string]bool // directories known to be real (not symlinks)
	warns     []string
	nwarn     int

	// kept is the content of files read to hash, by path, while keepLeft
	// bytes remain to keep and a file is at most keepMax bytes
	// (StatusOptions).
	kept              map[string][]byte
	keepLeft, keepMax int64
	// pre is what prefetch read ahead, by path; nil when it did not run.
	pre map[string]*fetched
}

// workFile is a path present in the working tree.
type workFile struct {
	mode      filemode.FileMode
	oid       plumbing.Hash // zero: not hashed
	known     bool          // oid is meaningful
	size      int64
	untracked bool
	submodule bool
	stored    bool // taken from the index entry, not the disk
	st        fileStat
}

func (r *Repo) newScan(ctx context.Context) (*scan, error) {
	idx, err := r.indexLocked()
	if err != nil {
		return nil, err
	}
	set := newSettings(loadConfig(r.commonDir, r.gitDir))
	return &scan{
		r:     r,
		ctx:   ctx,
		arm:   dirHookOf(ctx),
		set:   set,
		rules: newRules(r.root, r.commonDir, &set),
		idx:   idx,
		// Sized for a few paths, as a save re-checks: a map sized for
		// the whole index here cost each save an allocation the size of
		// the tree. Status adds a table for the tree.
		work:    workSet{idx: idx, files: make(map[string]*workFile, 64)},
		visited: make(map[string]bool),
		dirOK:   map[string]bool{"": true},
	}, nil
}

func (s *scan) warn(format string, args ...any) {
	s.nwarn++
	if len(s.warns) < maxWarnings {
		s.warns = append(s.warns, fmt.Sprintf(format, args...))
	}
}

func (s *scan) warnings() []string {
	if s.nwarn > len(s.warns) {
		return append(s.warns, fmt.Sprintf("and %d more warnings", s.nwarn-len(s.warns)))
	}
	return s.warns
}

func (s *scan) abs(rel string) string { return filepath.Join(s.r.root, filepath.FromSlash(rel)) }

// normScopes drops scopes covered by another and lifts scopes inside a
// submodule to the submodule itself.
func (s *scan) normScopes(scopes []string) []string {
	for i, sc := range scopes {
		parts := splitPath(sc)
		for j := 1; j < len(parts); j++ {
			pre := strings.Join(parts[:j], "/")
			if ie := s.idx.get(pre); ie != nil && ie.e.Mode == filemode.Submodule {
				scopes[i] = pre
				break
			}
		}
	}
	sort.Strings(scopes)
	var out []string
	for _, sc := range scopes {
		if len(out) > 0 {
			last := out[len(out)-1]
			if last == "" || sc == last || strings.HasPrefix(sc, last+"/") {
				continue
			}
		}
		out = append(out, sc)
	}
	return out
}

// run scans scopes and returns the changes against base below them.
func (s *scan) run(scopes []string, base *flatTree) ([]Change, error) {
	scopes, err := s.fill(scopes)
	if err != nil {
		return nil, err
	}
	sort.Strings(s.untracked)
	s.untracked = slices.Compact(s.untracked)
	if len(scopes) == 1 && scopes[0] == "" {
		return s.runAll(base)
	}
	var cands []string
	if len(scopes) <= 1 {
		for _, sc := range scopes {
			cands = mergeSorted(under(base.paths, sc), under(s.idx.names, sc))
		}
		cands = mergeSorted(cands, s.untracked)
	} else {
		// Many scopes (a burst of saves, a checkout): gathered, then
		// sorted once. Merging them one by one would copy the list once
		// per scope. Scopes are disjoint but their ranges interleave
		// ("a.b" < "a/"), so the sort is needed anyway.
		for _, sc := range scopes {
			cands = append(cands, under(base.paths, sc)...)
			cands = append(cands, under(s.idx.names, sc)...)
		}
		cands = append(cands, s.untracked...)
		sort.Strings(cands)
		cands = slices.Compact(cands)
	}
	var out []Change
	for _, p := range cands {
		if err := s.ctx.Err(); err != nil {
			return nil, err
		}
		he, inHead := base.get(p)
		c, ok, err := s.compare(p, he, inHead, s.work.get(p))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// runAll is run over the whole tree: HEAD's paths, the index's and the
// untracked ones, all sorted, are merged in one pass, so that no path is
// looked up by name.
func (s *scan) runAll(base *flatTree) ([]Change, error) {
	names, untracked := s.idx.names, s.untracked
	bi, ii, ui := 0, 0, 0
	var out []Change
	for n := 0; bi < len(base.paths) || ii < len(names) || ui < len(untracked); n++ {
		if n%4096 == 0 {
			if err := s.ctx.Err(); err != nil {
				return nil, err
			}
		}
		// The least of the three heads.
		var p string
		has := false
		if bi < len(base.paths) {
			p, has = base.paths[bi], true
		}
		if ii < len(names) && (!has || names[ii] < p) {
			p, has = names[ii], true
		}
		if ui < len(untracked) && (!has || untracked[ui] < p) {
			p = untracked[ui]
		}
		var he treeEntry
		inHead := bi < len(base.paths) && base.paths[bi] == p
		if inHead {
			he = base.ents[bi]
			bi++
		}
		var w *workFile
		if ii < len(names) && names[ii] == p {
			if inHead && s.work.clean[ii] && he.mode == s.idx.ents[ii].e.Mode && he.hash == s.idx.ents[ii].e.Hash {
				ii++
				continue // the common case: as in HEAD, as in the index
			}
			w = s.work.at(ii, p)
			ii++
		}
		if ui < len(untracked) && untracked[ui] == p {
			w = s.work.files[p]
			ui++
		}
		c, ok, err := s.compare(p, he, inHead, w)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// fill scans scopes into s.work and s.untracked and returns the
// normalised scopes.
func (s *scan) fill(scopes []string) ([]string, error) {
	scopes = s.normScopes(scopes)
	if len(scopes) == 1 && scopes[0] == "" && s.work.clean == nil {
		s.work.table(len(s.idx.names)) // every file of the tree
	}
	if s.keepMax > 0 {
		s.prefetch(scopes)
	}
	for _, sc := range scopes {
		if err := s.scanScope(sc); err != nil {
			return nil, err
		}
	}
	// Index entries the walk did not meet: skip-worktree entries, files in
	// ignored or nested-repository directories, and deletions.
	for _, sc := range scopes {
		for i, name := range s.idx.at(sc) {
			if !s.work.seenAt(i, name) {
				if err := s.checkUnseen(name, i); err != nil {
					return nil, err
				}
			}
		}
	}
	return scopes, nil
}

// scanScope fills s.work for the worktree at or below sc.
func (s *scan) scanScope(sc string) error {
	if sc == "" {
		return s.walk("")
	}
	parent := parentDir(sc)
	if !s.realDir(parent) {
		return nil // below a symlink or a file: nothing there is in the worktree
	}
	fi, err := s.lstat(sc)
	if err != nil {
		return nil
	}
	i := s.idx.find(sc)
	var ie *idxEntry
	if i >= 0 {
		ie = &s.idx.ents[i]
	}
	switch {
	case fi.IsDir():
		if ie != nil && ie.e.Mode == filemode.Submodule {
			return s.checkGitlink(sc, i, true, fileStat{})
		}
		if s.rules.pathIgnored(sc, true) {
			return nil
		}
		return s.walk(sc)
	case fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0:
		if ie != nil {
			return s.checkTracked(sc, i, statOf(fi))
		}
		if !s.rules.pathIgnored(sc, false) {
			s.addUntracked(sc, statOf(fi))
		}
	}
	return nil
}

// realDir reports whether rel is a directory reached without symlinks.
func (s *scan) realDir(rel string) bool {
	if ok, known := s.dirOK[rel]; known {
		return ok
	}
	ok := s.realDir(parentDir(rel))
	if ok {
		fi, err := os.Lstat(s.abs(rel))
		ok = err == nil && fi.IsDir()
	}
	s.dirOK[rel] = ok
	return ok
}

// checkUnseen decides the index's entry i, name, which the walk did not
// reach.
func (s *scan) checkUnseen(name string, i int) error {
	ie := &s.idx.ents[i]
	if ie.e.SkipWorktree || ie.assumed {
		s.work.put(name, i, workFile{mode: ie.e.Mode, oid: ie.e.Hash, known: true, size: int64(ie.e.Size), submodule: ie.e.Mode == filemode.Submodule, stored: true})
		return nil
	}
	parent := parentDir(name)
	if s.visited[parent] || !s.realDir(parent) {
		return nil // listed without it, or behind a symlink: absent
	}
	fi, err := os.Lstat(s.abs(name))
	if err != nil {
		return nil
	}
	switch {
	case fi.IsDir():
		if ie.e.Mode == filemode.Submodule {
			return s.checkGitlink(name, i, true, fileStat{})
		}
	case fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0:
		return s.checkTracked(name, i, statOf(fi))
	}
	return nil
}

// workMode is the git mode of a working-tree file (0 if it is neither a
// regular file nor a symlink), honouring core.fileMode and core.symlinks.
func workMode(set *settings, st fileStat, ie *idxEntry) filemode.FileMode {
	switch {
	case st.mode&fs.ModeSymlink != 0:
		return filemode.Symlink
	case st.mode.IsRegular():
		if ie != nil && ie.e.Mode == filemode.Symlink && !set.symlinks {
			return filemode.Symlink
		}
		if !set.fileMode {
			if ie != nil && ie.e.Mode == filemode.Executable {
				return filemode.Executable
			}
			return filemode.Regular
		}
		if st.mode&0o100 != 0 {
			return filemode.Executable
		}
		return filemode.Regular
	}
	return 0
}

// statMatches is git's ce_match_stat_basic for the fields we compare.
func (s *scan) statMatches(ie *idxEntry, st fileStat) bool {
	e := &ie.e
	mtime, ctime := e.modTime(), e.changeTime()
	full := s.set.checkStat && st.sys
	if mtime.Unix() != floorDiv(st.mtime, 1e9) {
		return false
	}
	// An entry whose nanoseconds are 0 was written by a tool that keeps
	// whole seconds (or git built without USE_NSEC): its seconds are all
	// it knows, and the racy rule covers the rest of that second.
	if full && mtime.Nanosecond() != 0 && int64(mtime.Nanosecond()) != floorMod(st.mtime, 1e9) {
		return false
	}
	if s.set.trustCtime && st.sys {
		if ctime.Unix() != floorDiv(st.ctime, 1e9) {
			return false
		}
		if full && ctime.Nanosecond() != 0 && int64(ctime.Nanosecond()) != floorMod(st.ctime, 1e9) {
			return false
		}
	}
	if e.Size != uint32(st.size) {
		return false
	}
	if full && (e.Inode != uint32(st.ino) || e.UID != st.uid || e.GID != st.gid) {
		return false
	}
	return true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// racy is git's is_racy_timestamp: an entry not older than the index file
// may have changed after it was recorded, within the same timestamp tick.
// An entry without nanoseconds is racy within the whole second of the
// index file's mtime, as git without nanosecond times judges it.
func (s *scan) racy(ie *idxEntry) bool {
	if s.idx.mtime == 0 {
		return false
	}
	mtime := ie.e.modTime()
	if mtime.Nanosecond() == 0 {
		return mtime.Unix() >= floorDiv(s.idx.mtime, 1e9)
	}
	return mtime.UnixNano() >= s.idx.mtime
}

// checkTracked decides the index's entry i, p, found with stat st.
func (s *scan) checkTracked(p string, i int, st fileStat) error {
	ie := &s.idx.ents[i]
	if ie.e.SkipWorktree || ie.assumed {
		return s.checkUnseen(p, i)
	}
	mode := workMode(&s.set, st, ie)
	if mode == 0 {
		return nil
	}
	size := st.size
	if !ie.conflict && mode == ie.e.Mode && s.statMatches(ie, st) && !s.racy(ie) && !s.r.edited[p] &&
		!(ie.e.Size == 0 && ie.e.Hash != emptyBlob) { // size 0 may be a smudged racy entry
		s.work.put(p, i, workFile{mode: mode, oid: ie.e.Hash, known: true, size: size, st: st})
		return nil
	}
	h, ok, err := s.hash(p, st, mode, ie)
	if err != nil {
		return err
	}
	s.work.put(p, i, workFile{mode: mode, oid: h, known: ok, size: size, st: st})
	return nil
}

// checkGitlink decides a gitlink entry whose path is a directory (isDir)
// or a file or symlink with stat st.
func (s *scan) checkGitlink(p string, i int, isDir bool, st fileStat) error {
	if !isDir {
		return s.checkTracked(p, i, st)
	}
	ie := &s.idx.ents[i]
	w := workFile{mode: filemode.Submodule, known: true, submodule: true}
	if h, ok := resolveNestedHead(s.abs(p)); ok {
		w.oid = h
	} else {
		// Not initialised (empty directory): git reports no change.
		w.oid = ie.e.Hash
	}
	s.work.put(p, i, w)
	return nil
}

func (s *scan) addUntracked(p string, st fileStat) {
	mode := workMode(&s.set, st, nil)
	if mode == 0 {
		return
	}
	s.work.put(p, -1, workFile{mode: mode, size: st.size, untracked: true, st: st})
	s.untracked = append(s.untracked, p)
}

// addNested records an untracked nested repository (git shows "dir/").
// Entries tracked below it are still checked one by one.
func (s *scan) addNested(rel string) {
	if len(under(s.idx.names, rel)) > 0 {
		return
	}
	if s.rules.pathIgnored(rel, true) {
		return
	}
	w := workFile{mode: filemode.Submodule, untracked: true, submodule: true}
	if h, ok := resolveNestedHead(s.abs(rel)); ok {
		w.oid, w.known = h, true
	}
	s.work.put(rel, -1, w)
	s.untracked = append(s.untracked, rel)
}

// hash returns the blob id git would store for the file at p, using the
// stat cache. ok is false when a clean step cannot be applied and there is
// no index entry to fall back on.
func (s *scan) hash(p string, st fileStat, mode filemode.FileMode, ie *idxEntry) (plumbing.Hash, bool, error) {
	var plan cleanPlan
	if mode != filemode.Symlink {
		plan = planFor(s.rules.attrs(p), &s.set)
	}
	var baseHash plumbing.Hash
	if plan.crlf == crlfAuto && ie != nil && !ie.conflict {
		baseHash = ie.e.Hash
	}
	key := plan.key()
	if c, ok := s.r.cache[p]; ok && c.st == st && c.plan == key && c.base == baseHash {
		return c.oid, true, nil
	}
	if plan.unsupported != "" {
		// Without the clean step the content cannot be compared. A file
		// whose stat data still matches its index entry (hashed only
		// because the entry is racy) keeps the index state; any other is
		// shown as changed, never left out: a real edit must not vanish.
		if ie != nil && !ie.conflict && s.statMatches(ie, st) {
			s.warn("%s: %s not applied; showing the index state", p, plan.unsupported)
			return ie.e.Hash, true, nil
		}
		s.warn("%s: %s not applied; shown as changed, its content not compared", p, plan.unsupported)
		return plumbing.ZeroHash, false, nil
	}
	if err := s.ctx.Err(); err != nil {
		return plumbing.ZeroHash, false, err
	}
	start := time.Now()
	s.r.hashes++
	var h plumbing.Hash
	var err error
	var content []byte // what was hashed, when it is kept
	keep := s.keepMax > 0 && st.size <= s.keepMax && st.size <= s.keepLeft
	pre, at, fetched := s.prefetched(p, st)
	if fetched {
		start = at // read then: the racy rule below counts from there
	}
	abs := s.abs(p)
	switch {
	case mode == filemode.Symlink && st.mode&fs.ModeSymlink != 0:
		var t string
		t, err = os.Readlink(abs)
		content = []byte(t)
		h = plumbing.ComputeHash(plumbing.BlobObject, content)
	case plan.identity() && !keep && !fetched:
		h, err = hashFileStream(abs)
	default:
		b := pre
		if !fetched {
			b, err = readRegular(abs)
		}
		if err == nil {
			content = b
			if !plan.identity() {
				c, cerr := s.r.cleanLocked(p, b, plan, ie)
				if cerr != nil {
					s.warn("%v; compared as it is on disk", cerr)
				}
				content = c
			}
			h = plumbing.ComputeHash(plumbing.BlobObject, content)
		}
	}
	if err == nil && keep && int64(len(content)) <= s.keepLeft {
		if s.kept == nil {
			s.kept = map[string][]byte{}
		}
		s.kept[p] = content
		s.keepLeft -= int64(len(content))
	}
	if err != nil {
		// The file changed under us (gone, replaced by a directory...):
		// report it without an id; the next scan sees the new state.
		return plumbing.ZeroHash, false, nil
	}
	if cut := start.Add(-racySlack).UnixNano(); st.mtime < cut && (!st.sys || st.ctime < cut) {
		s.r.cache[p] = cacheEntry{st: st, plan: key, base: baseHash, oid: h}
	} else {
		delete(s.r.cache, p)
	}
	return h, true, nil
}

// cleanLocked applies plan to b in git's order (convert_to_git): the
// clean filter, the working-tree-encoding, CRLF, ident. Content that does
// not decode from its working-tree-encoding goes on as it is, as in git's
// status and diff, and the error says why (git add refuses such a file).
// r.mu must be held.
func (r *Repo) cleanLocked(rel string, b []byte, plan cleanPlan, ie *idxEntry) ([]byte, error) {
	if plan.lfs {
		b = cleanLFS(b)
	}
	var encErr error
	if plan.enc != "" {
		b, encErr = encodeToGit(rel, b, plan.enc)
	}
	b = cleanCRLF(b, plan.crlf, func() bool {
		if ie == nil || ie.conflict {
			return false
		}
		blob, err := r.readBlobLocked(ie.e.Hash)
		return err == nil && hasCRLFText(blob)
	})
	if plan.ident {
		b = identToGit(b)
	}
	return b, encErr
}

// copyBufs are hashFileStream's buffers: io.Copy would allocate one of
// 32 KiB per file, 320 MB for a burst of ten thousand files.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func hashFileStream(abs string) (plumbing.Hash, error) {
	f, fi, err := openRegular(abs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer f.Close()
	hs := plumbing.NewHasher(plumbing.BlobObject, fi.Size())
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	n, err := io.CopyBuffer(hs, io.LimitReader(f, fi.Size()), *buf)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if n != fi.Size() {
		return plumbing.ZeroHash, fmt.Errorf("%s: changed while reading", abs)
	}
	return hs.Sum(), nil
}

// mergeSorted merges two sorted, duplicate-free lists into one.
func mergeSorted(a, b []string) []string {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

func modeKind(m filemode.FileMode) int {
	switch m {
	case filemode.Symlink:
		return 1
	case filemode.Submodule:
		return 2
	}
	return 0
}

// compare builds the change at p, if any, from its entry in the base
// tree (he, when inHead) and what the scan found of it (w; nil: absent).
func (s *scan) compare(p string, he treeEntry, inHead bool, w *workFile) (Change, bool, error) {
	c := Change{Path: p}
	if w != nil && w.untracked && inHead && !w.known && w.mode != filemode.Submodule {
		// Removed from the index but still on disk: compare the content.
		h, ok, err := s.hash(p, w.st, w.mode, nil)
		if err != nil {
			return c, false, err
		}
		w.oid, w.known = h, ok
	}
	switch {
	case !inHead && w == nil:
		return c, false, nil
	case !inHead:
		c.Kind = Added
	case w == nil:
		c.Kind = Deleted
	case he.mode == w.mode && w.known && he.hash == w.oid:
		return c, false, nil
	case modeKind(he.mode) != modeKind(w.mode):
		c.Kind = TypeChanged
	default:
		c.Kind = Modified
	}
	if inHead {
		fsz := int64(0)
		if he.mode != filemode.Submodule {
			if n, err := s.r.blobSizeLocked(he.hash); err == nil {
				fsz = n
			}
		}
		c.Head = &FileState{Path: p, Mode: uint32(he.mode), OID: he.hash.String(), Size: fsz}
		c.Submodule = he.mode == filemode.Submodule
	}
	if w != nil {
		c.Work = &FileState{Path: p, Mode: uint32(w.mode), Size: w.size, Stored: w.stored}
		if w.known {
			c.Work.OID = w.oid.String()
			if b, ok := s.kept[p]; ok && !w.stored {
				c.Work.Content = b
			}
		}
		c.Untracked = w.untracked
		c.Submodule = c.Submodule || w.submodule
	}
	return c, true, nil
}
