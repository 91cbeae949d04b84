package scm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// ErrIndexLocked is returned by index writes when .git/index.lock exists.
// We never wait for the lock and never remove a lock we did not create.
var ErrIndexLocked = errors.New("scm: index.lock exists: another git process is writing the index")

// Index writes follow git's lockfile protocol: create index.lock with
// O_EXCL, write the whole new index into it, fsync, rename it over index.
//
// The new index is written by our codec (index_codec.go) from the
// entries as read, so every entry we do not replace keeps its flags,
// assume-valid ("update-index --assume-unchanged") included. Extensions:
//   - TREE (cache-tree) is kept with the entries of the root and of the
//     directories above every changed path invalidated (entry count -1),
//     as git's cache_tree_invalidate_path does: untouched directories
//     stay valid, so git's diff-index and write-tree and our own
//     fromCacheTree still skip them;
//   - REUC (resolve-undo) is kept byte for byte: it only records the
//     conflict stages of resolved paths and nothing refers to it;
//   - UNTR (untracked cache), FSMN (fsmonitor), EOIE/IEOT (offset tables)
//     and unknown optional extensions are dropped: they describe entry
//     positions or directory contents that a change can invalidate, and
//     git recomputes them;
//   - a split index ("link") is merged with its shared index and written
//     back whole, which git reads and re-splits on its next write under
//     core.splitIndex; the split index's TREE and REUC are dropped. A
//     sparse index ("sdir") is expanded and written back whole, without
//     its TREE, which git likewise reads and makes sparse again.
//
// Untouched entries otherwise stay byte-identical, except that an entry
// racily clean with respect to the old index file (mtime not older than
// it) whose file content no longer matches gets its size zeroed, as git's
// ce_smudge_racily_clean_entry does; otherwise the rewrite would make the
// stale stat data look trustworthy.

// indexEdit is the index being changed by one write: entries by path
// (stages ascending), plus what the write touched.
type indexEdit struct {
	m       map[string][]*index.Entry
	names   []string // sorted paths of the index as read
	touched map[string]bool
}

func (x *indexEdit) remove(name string) {
	if _, ok := x.m[name]; ok {
		delete(x.m, name)
		x.touched[name] = true
	}
}

// removeBelow removes every entry strictly below directory dir.
func (x *indexEdit) removeBelow(dir string) {
	prefix := dir + "/"
	for i := sort.SearchStrings(x.names, prefix); i < len(x.names) && strings.HasPrefix(x.names[i], prefix); i++ {
		x.remove(x.names[i])
	}
}

// set makes e the only entry for its path, removing entries that would
// clash with it as a file against a directory (git add's
// ADD_CACHE_OK_TO_REPLACE).
func (x *indexEdit) set(e *index.Entry) {
	for d := parentDir(e.Name); d != ""; d = parentDir(d) {
		x.remove(d)
	}
	x.removeBelow(e.Name)
	x.m[e.Name] = []*index.Entry{e}
	x.touched[e.Name] = true
}

// stage0 returns the ordinary entry of name, or nil.
func (x *indexEdit) stage0(name string) *index.Entry {
	for _, e := range x.m[name] {
		if e.Stage == stageMerged {
			return e
		}
	}
	return nil
}

// editIndexLocked runs edit on the index under index.lock and writes the
// result. r.mu must be held.
func (r *Repo) editIndexLocked(ctx context.Context, op string, edit func(x *indexEdit, s *scan) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	indexPath := filepath.Join(r.gitDir, "index")
	lock, err := acquireNotedLock(indexPath, r.tempDir())
	if isLocked(err) {
		return fmt.Errorf("%s: %w (%s.lock)", op, ErrIndexLocked, indexPath)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer func() {
		lock.Rollback()
		// Whatever happened, re-read the index on next use.
		r.idx = nil
	}()

	raw, err := os.ReadFile(indexPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: read index: %w", op, err)
	}
	var oldMtime int64
	if fi, err := os.Stat(indexPath); err == nil {
		oldMtime = fi.ModTime().UnixNano()
	}
	old := &indexFile{version: 2}
	if raw != nil {
		if old, err = decodeIndex(raw, sharedIndexReader(indexPath, r.gitDir)); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if old.sparse {
			// Written back whole, as git does for a command that needs
			// the full index: git reads it and makes it sparse again on
			// its next write under index.sparse. The cache-tree counted
			// sparse directories as one entry each, so it goes.
			if _, err := r.expandSparseLocked(ctx, old); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			old.tree = nil
		}
	}
	x := &indexEdit{m: make(map[string][]*index.Entry, len(old.entries)), touched: map[string]bool{}}
	for _, e := range old.entries {
		if _, ok := x.m[e.Name]; !ok {
			x.names = append(x.names, e.Name)
		}
		x.m[e.Name] = append(x.m[e.Name], e)
	}
	sort.Strings(x.names)
	r.idx = nil // the scan must see the index we just read
	s, err := r.newScan(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := edit(x, s); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(x.touched) == 0 {
		return nil // nothing to write; the lock is released
	}

	version := old.version
	names := make([]string, 0, len(x.m))
	for n := range x.m {
		names = append(names, n)
	}
	sort.Strings(names)
	extended := false
	var entries []*index.Entry
	for _, n := range names {
		es := x.m[n]
		sort.SliceStable(es, func(i, j int) bool { return es[i].Stage < es[j].Stage })
		for _, e := range es {
			if !x.touched[n] {
				r.smudgeIfRacy(s, e, oldMtime)
			}
			extended = extended || e.IntentToAdd || e.SkipWorktree
			entries = append(entries, e)
		}
	}
	if version == 2 || version == 3 {
		// As git: version 3 only when an entry needs extended flags.
		version = 2
		if extended {
			version = 3
		}
	}
	var exts []extension
	if !old.split {
		if old.tree != nil {
			for n := range x.touched {
				old.tree.invalidate(n)
			}
			exts = append(exts, extension{sig: "TREE", data: encodeCacheTree(old.tree)})
		}
		if reuc := old.ext("REUC"); reuc != nil {
			exts = append(exts, extension{sig: "REUC", data: reuc})
		}
	}
	// Entries not replaced are the decoded ones, so their assume-valid
	// bits carry over; new entries have none.
	body, err := encodeIndex(version, entries, old.assumeValid, exts)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, err := lock.Write(body); err != nil {
		return fmt.Errorf("%s: write index: %w", op, err)
	}
	if err := lock.Commit(); err != nil {
		return fmt.Errorf("%s: write index: %w", op, err)
	}
	return nil
}

// smudgeIfRacy is git's ce_smudge_racily_clean_entry: an untouched entry
// whose mtime is not older than the old index file, whose stat still
// matches the file but whose content does not, gets size 0 so that
// readers of the new index hash it instead of trusting its stat.
func (r *Repo) smudgeIfRacy(s *scan, e *index.Entry, oldMtime int64) {
	if oldMtime == 0 || e.Stage != stageMerged || e.Size == 0 || e.SkipWorktree || e.IntentToAdd ||
		e.ModifiedAt.IsZero() || e.ModifiedAt.UnixNano() < oldMtime ||
		(e.Mode != filemode.Regular && e.Mode != filemode.Executable && e.Mode != filemode.Symlink) {
		return
	}
	if !s.realDir(parentDir(e.Name)) {
		return
	}
	fi, err := os.Lstat(s.abs(e.Name))
	if err != nil {
		return
	}
	ie := &idxEntry{e: newIndexEntry(e)}
	st := statOf(fi)
	mode := workMode(&s.set, st, ie)
	if mode != e.Mode || !s.statMatches(ie, st) {
		return // visibly changed already
	}
	if h, ok, err := s.hash(e.Name, st, mode, ie); err == nil && ok && h == e.Hash {
		return
	}
	e.Size = 0
}

// writeBlobLocked stores content as a loose blob (unless present) and
// returns its id. r.mu must be held.
func (r *Repo) writeBlobLocked(content []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(plumbing.BlobObject, content)
	if r.repo.Storer.HasEncodedObject(h) == nil {
		return h, nil
	}
	got, err := r.storeObject(plumbing.BlobObject, int64(len(content)), bytes.NewReader(content))
	if err != nil {
		return h, err
	}
	if got != h {
		return h, fmt.Errorf("stored blob %s, expected %s", got, h)
	}
	return h, nil
}

// writeLFSObject stores content where git-lfs's clean filter would:
// lfs/objects/aa/bb/<sha256> in the common dir, so a later push finds it.
func (r *Repo) writeLFSObject(content []byte) error {
	if isLFSPointer(content) {
		return nil
	}
	sum := sha256.Sum256(content)
	oid := hex.EncodeToString(sum[:])
	dir := filepath.Join(r.commonDir, "lfs", "objects", oid[:2], oid[2:4])
	dst := filepath.Join(dir, oid)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, oid+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// entryFromWorktree hashes the working-tree file rel (stat fi), stores its
// blob and returns the entry git add would write: clean filters applied,
// mode per core.fileMode/core.symlinks, stat data from before the read
// (zeroed if the file changed while we read it).
func (r *Repo) entryFromWorktree(s *scan, rel string, fi fs.FileInfo) (*index.Entry, error) {
	st := statOf(fi)
	ie := s.idx.get(rel)
	mode := workMode(&s.set, st, ie)
	abs := s.abs(rel)
	if p, ok := r.pre[rel]; ok && p.st == st && mode != filemode.Symlink {
		e := &index.Entry{Name: rel, Hash: p.h, Mode: mode}
		fillStat(e, st)
		return e, nil
	}
	var content []byte
	switch {
	case mode == 0:
		return nil, fmt.Errorf("scm: stage %s: not a regular file or symlink", rel)
	case st.mode&fs.ModeSymlink != 0:
		t, err := os.Readlink(abs)
		if err != nil {
			return nil, fmt.Errorf("scm: stage %s: %w", rel, err)
		}
		content = []byte(t)
	case mode == filemode.Symlink: // core.symlinks=false: the file holds the target
		b, err := readRegular(abs)
		if err != nil {
			return nil, fmt.Errorf("scm: stage %s: %w", rel, err)
		}
		content = b
	default:
		if r.storing != nil {
			r.storing(rel)
		}
		b, err := readRegular(abs)
		if err != nil {
			return nil, fmt.Errorf("scm: stage %s: %w", rel, err)
		}
		plan := planFor(s.rules.attrs(rel), &s.set)
		if plan.unsupported != "" {
			return nil, fmt.Errorf("scm: stage %s: %s cannot be applied without git", rel, plan.unsupported)
		}
		if plan.lfs {
			if err := r.writeLFSObject(b); err != nil {
				return nil, fmt.Errorf("scm: stage %s: store lfs object: %w", rel, err)
			}
		}
		c, err := r.cleanLocked(rel, b, plan, ie)
		if err != nil {
			return nil, fmt.Errorf("scm: stage %s: %w", rel, err)
		}
		content = c
	}
	h, err := r.writeBlobLocked(content)
	if err != nil {
		return nil, fmt.Errorf("scm: stage %s: write blob: %w", rel, err)
	}
	e := &index.Entry{Name: rel, Hash: h, Mode: mode}
	if fi2, err := os.Lstat(abs); err == nil && statOf(fi2) == st {
		fillStat(e, st)
	}
	return e, nil
}

func fillStat(e *index.Entry, st fileStat) {
	if st.mtime > 0 {
		e.ModifiedAt = time.Unix(0, st.mtime)
	}
	if st.ctime > 0 {
		e.CreatedAt = time.Unix(0, st.ctime)
	}
	e.Inode = uint32(st.ino)
	e.UID, e.GID = st.uid, st.gid
	e.Size = uint32(st.size)
}

// gitlinkEntry is the entry for a submodule checked out at rel.
func gitlinkEntry(s *scan, rel string) (*index.Entry, error) {
	h, ok := resolveNestedHead(s.abs(rel))
	if !ok {
		return nil, fmt.Errorf("scm: stage %s: submodule has no checked-out commit", rel)
	}
	return &index.Entry{Name: rel, Hash: h, Mode: filemode.Submodule}, nil
}

// stagePath is git add -- rel for one path: a file or symlink is added or
// updated, a directory is staged recursively (ignore rules apply), a
// submodule gets its checked-out commit, a missing path is removed.
func (r *Repo) stagePath(x *indexEdit, s *scan, rel string) error {
	for _, e := range x.m[rel] {
		if e.SkipWorktree {
			return fmt.Errorf("scm: stage %s: outside the sparse-checkout cone (skip-worktree)", rel)
		}
	}
	if !s.realDir(parentDir(rel)) {
		x.remove(rel)
		x.removeBelow(rel)
		return nil
	}
	fi, err := os.Lstat(s.abs(rel))
	if errors.Is(err, fs.ErrNotExist) {
		x.remove(rel)
		x.removeBelow(rel)
		return nil
	}
	if err != nil {
		return fmt.Errorf("scm: stage %s: %w", rel, err)
	}
	if fi.IsDir() {
		ie := s.idx.get(rel)
		_, nestedErr := os.Lstat(filepath.Join(s.abs(rel), ".git"))
		if (ie != nil && ie.e.Mode == filemode.Submodule) || nestedErr == nil {
			e, err := gitlinkEntry(s, rel)
			if err != nil {
				return err
			}
			x.set(e)
			return nil
		}
		return r.stageScopes(x, s, []string{rel})
	}
	e, err := r.entryFromWorktree(s, rel, fi)
	if err != nil {
		return err
	}
	x.set(e)
	return nil
}

// stageScopes is git add -A limited to scopes ("" = everything): modified
// and deleted tracked files, and untracked files that are not ignored.
// Untracked nested repositories are not added (git would add them as
// gitlinks with a warning); skip-worktree entries are left alone.
func (r *Repo) stageScopes(x *indexEdit, s *scan, scopes []string) error {
	scopes, err := s.fill(scopes)
	if err != nil {
		return err
	}
	for _, sc := range scopes {
		for i, name := range s.idx.at(sc) {
			if err := s.ctx.Err(); err != nil {
				return err
			}
			ie := &s.idx.ents[i]
			if ie.e.SkipWorktree {
				continue
			}
			w := s.work.at(i, name)
			switch {
			case w == nil:
				x.remove(name)
			case w.submodule:
				if ie.conflict || ie.e.Mode != filemode.Submodule || w.oid != ie.e.Hash {
					e, err := gitlinkEntry(s, name)
					if err != nil {
						return err
					}
					x.set(e)
				}
			case !ie.conflict && !ie.e.IntentToAdd && w.known && w.mode == ie.e.Mode && w.oid == ie.e.Hash:
				// unchanged
			default:
				fi, err := os.Lstat(s.abs(name))
				if err != nil {
					x.remove(name)
					continue
				}
				e, err := r.entryFromWorktree(s, name, fi)
				if err != nil {
					return err
				}
				x.set(e)
			}
		}
	}
	sort.Strings(s.untracked)
	for _, name := range s.untracked {
		if w := s.work.get(name); w == nil || w.submodule {
			continue
		}
		fi, err := os.Lstat(s.abs(name))
		if err != nil {
			continue // gone since the walk
		}
		e, err := r.entryFromWorktree(s, name, fi)
		if err != nil {
			return err
		}
		x.set(e)
	}
	return nil
}

// refreshEntry fills e's stat data from the working tree when the file
// there has e's mode and content, as git's refresh does after a reset.
func refreshEntry(s *scan, e *index.Entry) {
	if e.Mode != filemode.Regular && e.Mode != filemode.Executable && e.Mode != filemode.Symlink {
		return
	}
	if !s.realDir(parentDir(e.Name)) {
		return
	}
	fi, err := os.Lstat(s.abs(e.Name))
	if err != nil {
		return
	}
	st := statOf(fi)
	ie := &idxEntry{e: newIndexEntry(e)}
	if workMode(&s.set, st, ie) != e.Mode {
		return
	}
	if h, ok, err := s.hash(e.Name, st, e.Mode, ie); err == nil && ok && h == e.Hash {
		fillStat(e, st)
	}
}

// StagePath is git add -- path: the working-tree file or symlink at path
// is hashed (clean filters applied), its blob written to the object store
// and its index entry replaced, with the file's current stat so that a
// later status need not hash it. A conflict at path is resolved. When the
// file is gone, the entry is removed (git rm --cached). A directory is
// staged recursively like git add -A dir; a submodule gets its checked-out
// commit. An ignored path named explicitly is staged (as git add -f).
func (r *Repo) StagePath(ctx context.Context, p string) error {
	rel, err := cleanRel(p)
	if err != nil {
		return fmt.Errorf("scm: stage %s: %w", p, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Large files are stored before index.lock is taken (see
	// streamBlobMin); the edit uses those blobs if the files are
	// unchanged.
	if fi, err := os.Lstat(filepath.Join(r.root, filepath.FromSlash(rel))); err == nil && fi.IsDir() {
		r.pre = r.prestoreScopesLocked(ctx, []string{rel})
		defer func() { r.pre = nil }()
	} else if pre, ok := r.prestoreLocked(ctx, rel); ok && rel != "" {
		r.pre = map[string]preStored{rel: pre}
		defer func() { r.pre = nil }()
	}
	return r.editIndexLocked(ctx, "scm: stage "+p, func(x *indexEdit, s *scan) error {
		if rel == "" {
			return r.stageScopes(x, s, []string{""})
		}
		return r.stagePath(x, s, rel)
	})
}

// StageAll is git add -A: every modified, deleted and untracked (not
// ignored) file is staged.
func (r *Repo) StageAll(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pre = r.prestoreScopesLocked(ctx, []string{""})
	defer func() { r.pre = nil }()
	return r.editIndexLocked(ctx, "scm: stage all", func(x *indexEdit, s *scan) error {
		return r.stageScopes(x, s, []string{""})
	})
}

// StageContent sets the index entry of path to a blob holding content,
// stored as given (no clean filter: it is the canonical form, e.g. the
// index blob with some hunks applied), with mode 0o100644, 0o100755 or
// 0o120000. The stat data is zeroed, so status compares the working tree
// by content. The working tree is not touched.
func (r *Repo) StageContent(ctx context.Context, p string, content []byte, mode uint32) error {
	rel, err := writeTarget("stage", p)
	if err != nil {
		return err
	}
	fm := filemode.FileMode(mode)
	if fm != filemode.Regular && fm != filemode.Executable && fm != filemode.Symlink {
		return fmt.Errorf("scm: stage %s: unsupported mode %o", rel, mode)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.editIndexLocked(ctx, "scm: stage "+rel, func(x *indexEdit, s *scan) error {
		for _, e := range x.m[rel] {
			if e.SkipWorktree {
				return fmt.Errorf("scm: stage %s: outside the sparse-checkout cone (skip-worktree)", rel)
			}
		}
		h, err := r.writeBlobLocked(content)
		if err != nil {
			return fmt.Errorf("scm: stage %s: write blob: %w", rel, err)
		}
		if old := x.stage0(rel); old != nil && len(x.m[rel]) == 1 && old.Hash == h && old.Mode == fm && !old.IntentToAdd {
			return nil // already staged exactly so
		}
		x.set(&index.Entry{Name: rel, Hash: h, Mode: fm})
		return nil
	})
}

// UnstagePath is git restore --staged -- path: the index entries at path
// and below it are reset to HEAD's (stat data refreshed when the working
// tree matches), and entries HEAD lacks are removed. Entries that already
// equal HEAD's are left untouched. For a rename, unstage both paths.
func (r *Repo) UnstagePath(ctx context.Context, p string) error {
	rel, err := cleanRel(p)
	if err != nil {
		return fmt.Errorf("scm: unstage %s: %w", p, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil {
		return err
	}
	head, err := r.treeLocked(ctx, hs.commit)
	if err != nil {
		return err
	}
	return r.editIndexLocked(ctx, "scm: unstage "+p, func(x *indexEdit, s *scan) error {
		for _, name := range under(x.names, rel) {
			if _, ok := head.get(name); !ok {
				x.remove(name)
			}
		}
		for _, name := range under(head.paths, rel) {
			he, _ := head.get(name)
			if old := x.stage0(name); old != nil && len(x.m[name]) == 1 && old.Hash == he.hash && old.Mode == he.mode && !old.IntentToAdd {
				continue
			}
			e := &index.Entry{Name: name, Hash: he.hash, Mode: he.mode}
			refreshEntry(s, e)
			x.set(e)
		}
		return nil
	})
}

// IndexBlob returns the staged (stage 0) entry of path: blob id and mode.
// ok is false when the index has no such entry, including paths that are
// only present as conflict stages.
func (r *Repo) IndexBlob(p string) (oid string, mode uint32, ok bool, err error) {
	rel, err := cleanRel(p)
	if err != nil {
		return "", 0, false, fmt.Errorf("scm: index entry %s: %w", p, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	idx, err := r.indexLocked()
	if err != nil {
		return "", 0, false, err
	}
	ie := idx.get(rel)
	if ie == nil || ie.conflict {
		return "", 0, false, nil
	}
	return ie.e.Hash.String(), uint32(ie.e.Mode), true, nil
}

// HeadBlob returns HEAD's entry at path (ok is false when HEAD lacks it or
// the branch is unborn).
func (r *Repo) HeadBlob(p string) (oid string, mode uint32, ok bool, err error) {
	rel, err := cleanRel(p)
	if err != nil {
		return "", 0, false, fmt.Errorf("scm: head entry %s: %w", p, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil {
		return "", 0, false, err
	}
	t, err := r.treeLocked(context.Background(), hs.commit)
	if err != nil {
		return "", 0, false, err
	}
	te, found := t.get(rel)
	if !found {
		return "", 0, false, nil
	}
	return te.hash.String(), uint32(te.mode), true, nil
}

// StagedFlags reports, for each of paths, whether its index entry differs
// from HEAD's (HeadBlob against IndexBlob, a conflicted entry counting as
// absent), reading HEAD's tree and the index once for all of them; false
// for a path that cannot be named or when either cannot be read.
func (r *Repo) StagedFlags(paths []string) []bool {
	out := make([]bool, len(paths))
	r.mu.Lock()
	defer r.mu.Unlock()
	idx, err := r.indexLocked()
	if err != nil {
		return out
	}
	hs, err := r.headLocked()
	if err != nil {
		return out
	}
	t, err := r.treeLocked(context.Background(), hs.commit)
	if err != nil {
		return out
	}
	for i, p := range paths {
		rel, err := cleanRel(p)
		if err != nil {
			continue
		}
		ie := idx.get(rel)
		inIndex := ie != nil && !ie.conflict
		te, inHead := t.get(rel)
		switch {
		case inIndex != inHead:
			out[i] = true
		case inIndex:
			out[i] = ie.e.Hash != te.hash || ie.e.Mode != te.mode
		}
	}
	return out
}

// HasStaged reports whether the index differs from HEAD's tree (conflicts
// count; intent-to-add entries do not, as they are not committed).
func (r *Repo) HasStaged(ctx context.Context) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil {
		return false, err
	}
	head, err := r.treeLocked(ctx, hs.commit)
	if err != nil {
		return false, err
	}
	idx, err := r.indexLocked()
	if err != nil {
		return false, err
	}
	return hasStaged(idx, head), nil
}

func hasStaged(idx *indexSnapshot, head *flatTree) bool {
	n := 0
	for _, name := range idx.names {
		ie := idx.get(name)
		if ie.conflict {
			return true
		}
		if ie.e.IntentToAdd {
			continue
		}
		he, ok := head.get(name)
		if !ok || he.hash != ie.e.Hash || he.mode != ie.e.Mode {
			return true
		}
		n++
	}
	return n != len(head.paths)
}
