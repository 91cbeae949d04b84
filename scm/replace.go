package scm

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// ErrChanged is returned by ReplaceWorktree when the path no longer holds
// what the caller read: it was left alone.
var ErrChanged = errors.New("changed since it was read")

// Held is what a working-tree path held when ReadHeld read it: nothing,
// or its bytes as on disk, its git mode and the stat data they were read
// with.
type Held struct {
	Exists  bool
	Content []byte
	Mode    uint32
	st      fileStat
	readAt  int64 // ns since the epoch, when the read started
}

// HeldSize is the size of what path holds now, from its lstat: 0 when
// there is nothing. It lets a caller refuse to read a file it could not
// keep anyway.
func (r *Repo) HeldSize(p string) (int64, error) {
	_, fi, err := r.lstatInside(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// ReadHeld reads what path holds now, with the stat data that lets
// ReplaceWorktree tell cheaply whether it still does. A file that keeps
// changing while it is read is an error.
func (r *Repo) ReadHeld(p string) (Held, error) {
	s := newSettings(loadConfig(r.commonDir, r.gitDir))
	for range 5 {
		readAt := time.Now().UnixNano()
		_, fi, err := r.lstatInside(p)
		if errors.Is(err, fs.ErrNotExist) {
			return Held{}, nil
		}
		if err != nil {
			return Held{}, err
		}
		b, mode, err := r.readWorktree(p, s)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Held{}, err
		}
		_, again, err := r.lstatInside(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Held{}, err
		}
		if err == nil && sameFile(statOf(fi), statOf(again)) {
			return Held{Exists: true, Content: b, Mode: mode, st: statOf(fi), readAt: readAt}, nil
		}
	}
	return Held{}, fmt.Errorf("scm: read worktree %s: it kept changing while it was read", p)
}

// sameFile reports whether two stats are of one unchanged file: the same
// inode, size, modification time and mode. The change time is left out,
// since a rename sets it.
func sameFile(a, b fileStat) bool {
	return a.mtime == b.mtime && a.size == b.size && a.mode == b.mode && (!a.sys || !b.sys || a.ino == b.ino)
}

// holds reports whether name in root holds h: by its stat data when they
// are unchanged and not racy (modified within racySlack of the read, a
// write in the same tick would keep them), else by its content and
// permission bits.
func holds(root *os.Root, name string, h Held) (bool, error) {
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return !h.Exists, nil
	}
	if err != nil {
		return false, err
	}
	if !h.Exists {
		return false, nil
	}
	st := statOf(fi)
	if sameFile(st, h.st) && h.st.mtime < h.readAt-int64(racySlack) {
		return true, nil
	}
	if st.mode != h.st.mode {
		return false, nil
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := root.Readlink(name)
		if err != nil {
			return false, err
		}
		return t == string(h.Content), nil
	case fi.Mode().IsRegular():
		if fi.Size() != int64(len(h.Content)) {
			return false, nil
		}
		f, _, err := openRegularIn(root, name)
		if err != nil {
			return false, err
		}
		defer f.Close()
		b, err := readAllSized(f, fi.Size())
		if err != nil {
			return false, err
		}
		return bytes.Equal(b, h.Content), nil
	}
	return false, nil
}

// ReplaceWorktree makes path hold next (its content and mode, or nothing
// when next.Exists is false) only if it still holds want, as ReadHeld
// read it: checked immediately before the rename that replaces it, and
// checked again on what the rename moved away, which is put back when it
// is not what was expected (renameat2's exchange, where the file system
// has it). A path that changed is left alone and the error wraps
// ErrChanged. The path rules, temp files and permission bits are those of
// WriteWorktree; a removal also removes the parent directories it left
// empty.
func (r *Repo) ReplaceWorktree(p string, want, next Held) error {
	return r.ReplacePrepared(p, want, next, nil)
}

// Prepared is the new content of a working-tree path made ready ahead of
// its rename: a temp file, already durable.
type Prepared struct {
	tmp string
}

// PrepareWrites writes, for each path whose next content exists, the temp
// file ReplacePrepared renames into place, and makes them all durable
// with one sync of the file system (syncfs), where a write of each on its
// own syncs each: a revert of thousands of files waits for the disk once.
// The result has a nil entry where next[i] is an absence. Temp files not
// used are removed by DiscardPrepared.
func (r *Repo) PrepareWrites(paths []string, next []Held) ([]*Prepared, error) {
	out := make([]*Prepared, len(paths))
	root, err := os.OpenRoot(r.root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	tmpDir, err := r.openTempDir()
	if err != nil {
		return nil, fmt.Errorf("scm: write: temp dir: %w", err)
	}
	defer tmpDir.Close()
	s := newSettings(loadConfig(r.commonDir, r.gitDir))
	var names []string
	for i, p := range paths {
		n := next[i]
		if !n.Exists {
			continue
		}
		rel, err := writeTarget("write", p)
		if err != nil {
			r.DiscardPrepared(out)
			return nil, err
		}
		fm := filemode.FileMode(n.Mode)
		if fm == filemode.Symlink && !s.symlinks {
			fm = filemode.Regular
		}
		var old fs.FileInfo
		if checkParents(root, "write", rel, false) == nil {
			if fi, err := root.Lstat(filepath.FromSlash(rel)); err == nil && fi.Mode().IsRegular() {
				old = fi
			}
		}
		tmp := newTempName()
		if err := makeTempUnsynced(tmpDir, tmp, n.Content, fm, old); err != nil {
			r.DiscardPrepared(out)
			return nil, fmt.Errorf("scm: write %s: %w", rel, err)
		}
		out[i] = &Prepared{tmp: tmp}
		names = append(names, tmp)
	}
	if err := syncTemps(tmpDir, names); err != nil {
		r.DiscardPrepared(out)
		return nil, fmt.Errorf("scm: write: sync: %w", err)
	}
	return out, nil
}

// DiscardPrepared removes the temp files of prepared writes not renamed
// into place.
func (r *Repo) DiscardPrepared(prs []*Prepared) {
	tmpDir, err := r.openTempDir()
	if err != nil {
		return
	}
	defer tmpDir.Close()
	for _, pr := range prs {
		if pr != nil && pr.tmp != "" {
			tmpDir.Remove(pr.tmp)
		}
	}
}

// ReplacePrepared is ReplaceWorktree with next's content already in pr's
// temp file (from PrepareWrites), or, with pr nil, written now.
func (r *Repo) ReplacePrepared(p string, want, next Held, pr *Prepared) error {
	op := "write"
	if !next.Exists {
		op = "remove"
	}
	rel, err := writeTarget(op, p)
	if err != nil {
		return err
	}
	fm := filemode.FileMode(next.Mode)
	if next.Exists {
		switch fm {
		case filemode.Regular, filemode.Executable:
		case filemode.Symlink:
			if len(next.Content) == 0 || bytes.IndexByte(next.Content, 0) >= 0 {
				return fmt.Errorf("scm: write %s: invalid symlink target %q", rel, next.Content)
			}
		default:
			return fmt.Errorf("scm: write %s: unsupported mode %o", rel, next.Mode)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if fm == filemode.Symlink {
		if s := newSettings(loadConfig(r.commonDir, r.gitDir)); !s.symlinks {
			fm = filemode.Regular
		}
	}
	root, err := os.OpenRoot(r.root)
	if err != nil {
		return fmt.Errorf("scm: %s %s: %w", op, rel, err)
	}
	defer root.Close()
	if err := checkParents(root, op, rel, next.Exists); err != nil {
		if !next.Exists && !want.Exists && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	name := filepath.FromSlash(rel)
	tmpDir, err := r.openTempDir()
	if err != nil {
		return fmt.Errorf("scm: %s %s: temp dir: %w", op, rel, err)
	}
	defer tmpDir.Close()
	var pre string
	if pr != nil && next.Exists {
		pre, pr.tmp = pr.tmp, ""
	}
	tmp := pre
	if tmp == "" {
		tmp = newTempName()
	}
	err = r.replaceVia(root, name, tmpDir, tmp, pre != "", want, next, fm)
	if isCrossDevice(err) {
		if pre != "" {
			tmpDir.Remove(pre)
		}
		err = r.replaceVia(root, name, root, tempName(name), false, want, next, fm)
	}
	if err != nil {
		return fmt.Errorf("scm: %s %s: %w", op, rel, err)
	}
	r.forgetLocked(rel)
	if !next.Exists {
		for d := parentDir(rel); d != ""; d = parentDir(d) {
			if root.Remove(filepath.FromSlash(d)) != nil {
				break
			}
		}
	}
	return nil
}

// replaceVia is ReplaceWorktree with its temp name tmp in tdir.
// With made, tmp already holds next's content.
func (r *Repo) replaceVia(root *os.Root, name string, tdir *os.Root, tmp string, made bool, want, next Held, fm filemode.FileMode) error {
	cur, lerr := root.Lstat(name)
	if lerr != nil && !errors.Is(lerr, fs.ErrNotExist) {
		return lerr
	}
	if lerr == nil && cur.IsDir() && !want.Exists {
		// An empty directory where nothing was expected is replaced, as
		// git checkout does; anything else there is a change.
		if empty, err := dirEmpty(root, name); err != nil || !empty {
			return ErrChanged
		}
		if err := root.Remove(name); err != nil {
			return err
		}
	}
	if !next.Exists {
		if !want.Exists {
			if ok, err := holds(root, name, want); err != nil || !ok {
				return errors.Join(ErrChanged, err)
			}
			return nil
		}
		if ok, err := holds(root, name, want); err != nil || !ok {
			return errors.Join(ErrChanged, err)
		}
		if err := rename2(root, name, tdir, tmp, 0); err != nil {
			return err
		}
		return settleMoved(root, name, tdir, tmp, want, false)
	}
	var old fs.FileInfo
	if lerr == nil && !cur.IsDir() {
		old = cur
	}
	if !made {
		if err := makeTemp(tdir, tmp, next.Content, fm, old); err != nil {
			return err
		}
	}
	if !want.Exists {
		err := rename2(tdir, tmp, root, name, renameNoReplace)
		if errors.Is(err, errNoRename2) {
			if ok, herr := holds(root, name, want); herr != nil || !ok {
				tdir.Remove(tmp)
				return errors.Join(ErrChanged, herr)
			}
			err = rename2(tdir, tmp, root, name, 0)
		}
		if errors.Is(err, fs.ErrExist) {
			err = ErrChanged
		}
		if err != nil {
			tdir.Remove(tmp)
		}
		return err
	}
	if ok, err := holds(root, name, want); err != nil || !ok {
		tdir.Remove(tmp)
		return errors.Join(ErrChanged, err)
	}
	err := rename2(tdir, tmp, root, name, renameExchange)
	if errors.Is(err, errNoRename2) {
		// No exchange here: the check just made is the last.
		if err = rename2(tdir, tmp, root, name, 0); err != nil {
			tdir.Remove(tmp)
		}
		return err
	}
	if err != nil {
		tdir.Remove(tmp)
		return err
	}
	return settleMoved(root, name, tdir, tmp, want, true)
}

// settleMoved checks what a rename moved from name to tmp, once no one
// has it open for writing: when it holds want it is deleted; else it goes back (exchanged with what was put in
// its place when exchange, else renamed back unless something new is
// there) and the error wraps ErrChanged. Should that fail too, the file
// stays at tmp and the error names it.
func settleMoved(root *os.Root, name string, tdir *os.Root, tmp string, want Held, exchange bool) error {
	// A writer that opened the file before the rename writes to what
	// was moved away: its content is final only once that is closed.
	release, quiet := quiesce(tdir, tmp)
	ok, err := holds(tdir, tmp, want)
	release()
	if !quiet {
		ok = false
	}
	if err == nil && ok {
		if err := tdir.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	flags := uint(renameNoReplace)
	if exchange {
		flags = renameExchange
	}
	berr := rename2(tdir, tmp, root, name, flags)
	if errors.Is(berr, errNoRename2) && !exchange {
		berr = rename2(tdir, tmp, root, name, 0)
	}
	if berr == nil {
		if exchange {
			tdir.Remove(tmp)
		}
		return errors.Join(ErrChanged, err)
	}
	return fmt.Errorf("%w, and what it held then could not be put back (%v): it is kept at %s", ErrChanged, berr, filepath.Join(tdir.Name(), tmp))
}
