package scm

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// writeTarget validates p for a working-tree write and returns it clean
// and slash-separated. The root itself is refused.
func writeTarget(op, p string) (string, error) {
	rel, err := cleanRel(p)
	if err != nil {
		return "", fmt.Errorf("scm: %s %s: %w", op, p, err)
	}
	if rel == "" {
		return "", fmt.Errorf("scm: %s %s: %w: is the worktree root", op, p, ErrOutsideWorktree)
	}
	return rel, nil
}

// checkParents walks the parent directories of rel below the root,
// refusing any symlink (even one pointing inside the worktree: git never
// writes through a symlinked directory) and anything that is not a
// directory. With create, missing directories are made. Every operation
// goes through root, so a directory swapped for a symlink between our
// check and the write still cannot lead outside the worktree.
func checkParents(root *os.Root, op, rel string, create bool) error {
	parts := strings.Split(rel, "/")
	cur := ""
	for _, c := range parts[:len(parts)-1] {
		if cur == "" {
			cur = c
		} else {
			cur += "/" + c
		}
		name := filepath.FromSlash(cur)
		fi, err := root.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err := root.Mkdir(name, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("scm: %s %s: %w", op, rel, err)
			}
			fi, err = root.Lstat(name)
		}
		if err != nil {
			return fmt.Errorf("scm: %s %s: %w", op, rel, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("scm: %s %s: %w: %s is a symlink", op, rel, ErrOutsideWorktree, cur)
		}
		if !fi.IsDir() {
			return fmt.Errorf("scm: %s %s: %s is not a directory", op, rel, cur)
		}
	}
	return nil
}

// tempName is a fresh name next to name for an atomic replace, used only
// when the temp dir under .git is on another file system.
func tempName(name string) string {
	dir, base := filepath.Split(name)
	return dir + "." + base + ".scm-" + strconv.FormatUint(rand.Uint64(), 36) + ".tmp"
}

// forgetLocked drops what the stat cache knows about rel and everything
// below it. r.mu must be held.
func (r *Repo) forgetLocked(rel string) {
	delete(r.cache, rel)
	prefix := rel + "/"
	for p := range r.cache {
		if strings.HasPrefix(p, prefix) {
			delete(r.cache, p)
		}
	}
}

// WriteWorktree atomically replaces (or creates) the working-tree file at
// path: mode 0o100644 or 0o100755 writes a regular file, creating missing
// parent directories; 0o120000 writes a symlink whose target is content
// (a plain file holding the target under core.symlinks=false, as git
// does). An existing file or symlink is replaced; an empty directory is
// replaced, a non-empty one refused. A regular file that is replaced keeps
// its permission bits apart from the executable bits, which follow mode;
// new files get 0666 or 0777 less the umask.
//
// Paths that are absolute, contain "..", point into .git or lead through a
// symlinked directory are refused with an error wrapping
// ErrOutsideWorktree; nothing outside the worktree is touched.
func (r *Repo) WriteWorktree(p string, content []byte, mode uint32) error {
	rel, err := writeTarget("write", p)
	if err != nil {
		return err
	}
	fm := filemode.FileMode(mode)
	switch fm {
	case filemode.Regular, filemode.Executable:
	case filemode.Symlink:
		if len(content) == 0 || strings.IndexByte(string(content), 0) >= 0 {
			return fmt.Errorf("scm: write %s: invalid symlink target %q", rel, content)
		}
	default:
		return fmt.Errorf("scm: write %s: unsupported mode %o", rel, mode)
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
		return fmt.Errorf("scm: write %s: %w", rel, err)
	}
	defer root.Close()
	if err := checkParents(root, "write", rel, true); err != nil {
		return err
	}
	name := filepath.FromSlash(rel)
	old, err := root.Lstat(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("scm: write %s: %w", rel, err)
	}
	replaceDir := false
	if err == nil && old.IsDir() {
		empty, err := dirEmpty(root, name)
		if err != nil {
			return fmt.Errorf("scm: write %s: %w", rel, err)
		}
		if !empty {
			return fmt.Errorf("scm: write %s: is a non-empty directory", rel)
		}
		replaceDir = true
	}
	// The new content is prepared under .git (see TempDirName), then
	// renamed into place. Only when .git is on another file system (a
	// gitdir file pointing elsewhere) is it prepared next to the target.
	tmpDir, err := r.openTempDir()
	if err != nil {
		return fmt.Errorf("scm: write %s: temp dir: %w", rel, err)
	}
	defer tmpDir.Close()
	tmp := newTempName()
	if err := makeTemp(tmpDir, tmp, content, fm, old); err != nil {
		return fmt.Errorf("scm: write %s: %w", rel, err)
	}
	if replaceDir {
		if err := root.Remove(name); err != nil {
			tmpDir.Remove(tmp)
			return fmt.Errorf("scm: write %s: %w", rel, err)
		}
	}
	err = renameInto(tmpDir, tmp, root, name)
	if err != nil {
		tmpDir.Remove(tmp)
	}
	if isCrossDevice(err) {
		tmp = tempName(name)
		if err = makeTemp(root, tmp, content, fm, old); err == nil {
			if err = root.Rename(tmp, name); err != nil {
				root.Remove(tmp)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("scm: write %s: %w", rel, err)
	}
	r.forgetLocked(rel)
	return nil
}

// makeTemp creates tmp in dir: a symlink to content, or a file (see
// writeTemp).
func makeTemp(dir *os.Root, tmp string, content []byte, fm filemode.FileMode, old fs.FileInfo) error {
	if fm == filemode.Symlink {
		return dir.Symlink(string(content), tmp)
	}
	return writeTemp(dir, tmp, content, fm, old)
}

// makeTempUnsynced is makeTemp without the sync of the file, for writes
// synced together (PrepareWrites).
func makeTempUnsynced(dir *os.Root, tmp string, content []byte, fm filemode.FileMode, old fs.FileInfo) error {
	if fm == filemode.Symlink {
		return dir.Symlink(string(content), tmp)
	}
	return writeTempSync(dir, tmp, content, fm, old, false)
}

// writeTemp creates tmp with content, synced, with the permission bits
// for fm (see WriteWorktree); old is the file being replaced, if any.
func writeTemp(root *os.Root, tmp string, content []byte, fm filemode.FileMode, old fs.FileInfo) (err error) {
	return writeTempSync(root, tmp, content, fm, old, true)
}

func writeTempSync(root *os.Root, tmp string, content []byte, fm filemode.FileMode, old fs.FileInfo, sync bool) (err error) {
	perm := fs.FileMode(0o666)
	if fm == filemode.Executable {
		perm = 0o777
	}
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			root.Remove(tmp)
		}
	}()
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if old != nil && old.Mode().IsRegular() {
		// Keep the replaced file's permissions; only the executable bits
		// follow the requested mode (x wherever r is set, as chmod +x
		// would under the usual umasks).
		p := old.Mode().Perm()
		if fm == filemode.Executable {
			p |= (p & 0o444) >> 2
		} else {
			p &^= 0o111
		}
		return root.Chmod(tmp, p)
	}
	return nil
}

func dirEmpty(root *os.Root, name string) (bool, error) {
	f, err := root.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.ReadDir(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}

// RemoveWorktree removes the file or symlink at path (never a directory;
// see RemoveWorktreeDir), then every parent directory the removal left
// empty, up to but not including the root. The path rules are those of
// WriteWorktree. A missing file is an error wrapping fs.ErrNotExist.
func (r *Repo) RemoveWorktree(p string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	root, rel, fi, err := r.removalLocked("remove", p)
	if err != nil {
		return err
	}
	defer root.Close()
	name := filepath.FromSlash(rel)
	if fi.IsDir() {
		return fmt.Errorf("scm: remove %s: is a directory", rel)
	}
	if err := root.Remove(name); err != nil {
		return fmt.Errorf("scm: remove %s: %w", rel, err)
	}
	r.forgetLocked(rel)
	for d := parentDir(rel); d != ""; d = parentDir(d) {
		// Remove refuses a non-empty directory: that ends the climb.
		if root.Remove(filepath.FromSlash(d)) != nil {
			break
		}
	}
	return nil
}

// RemoveWorktreeDir removes the untracked directory tree at path. It is
// refused when the index has entries at or below path (tracked files or a
// submodule) or when the tree contains a .git (a nested repository), and
// for symlinks (use RemoveWorktree). Symlinks inside the tree are removed,
// never followed.
func (r *Repo) RemoveWorktreeDir(p string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	root, rel, fi, err := r.removalLocked("remove directory", p)
	if err != nil {
		return err
	}
	defer root.Close()
	name := filepath.FromSlash(rel)
	if !fi.IsDir() {
		return fmt.Errorf("scm: remove directory %s: not a directory", rel)
	}
	idx, err := r.indexLocked()
	if err != nil {
		return err
	}
	if tracked := under(idx.names, rel); len(tracked) > 0 {
		return fmt.Errorf("scm: remove directory %s: contains tracked files (%s)", rel, tracked[0])
	}
	sub, err := root.OpenRoot(name)
	if err != nil {
		return fmt.Errorf("scm: remove directory %s: %w", rel, err)
	}
	err = fs.WalkDir(sub.FS(), ".", func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.EqualFold(d.Name(), ".git") {
			return fmt.Errorf("contains a repository at %s", q)
		}
		return nil
	})
	sub.Close()
	if err != nil {
		return fmt.Errorf("scm: remove directory %s: %w", rel, err)
	}
	if err := root.RemoveAll(name); err != nil {
		return fmt.Errorf("scm: remove directory %s: %w", rel, err)
	}
	r.forgetLocked(rel)
	return nil
}

// removalLocked checks a path to remove and opens the root for it: the
// path rules of WriteWorktree, no symlinked parent, and the entry's Lstat.
// The caller closes root. r.mu must be held.
func (r *Repo) removalLocked(op, p string) (root *os.Root, rel string, fi fs.FileInfo, err error) {
	if rel, err = writeTarget(op, p); err != nil {
		return nil, "", nil, err
	}
	if root, err = os.OpenRoot(r.root); err != nil {
		return nil, "", nil, fmt.Errorf("scm: %s %s: %w", op, rel, err)
	}
	if err = checkParents(root, op, rel, false); err == nil {
		if fi, err = root.Lstat(filepath.FromSlash(rel)); err != nil {
			err = fmt.Errorf("scm: %s %s: %w", op, rel, err)
		}
	}
	if err != nil {
		root.Close()
		return nil, "", nil, err
	}
	return root, rel, fi, nil
}

// Chmod sets or clears the executable bits of the regular file at path:
// mode is 0o100755 or 0o100644. Other permission bits are kept.
func (r *Repo) Chmod(p string, mode uint32) error {
	rel, err := writeTarget("chmod", p)
	if err != nil {
		return err
	}
	fm := filemode.FileMode(mode)
	if fm != filemode.Regular && fm != filemode.Executable {
		return fmt.Errorf("scm: chmod %s: mode %o is not 100644 or 100755", rel, mode)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	root, err := os.OpenRoot(r.root)
	if err != nil {
		return fmt.Errorf("scm: chmod %s: %w", rel, err)
	}
	defer root.Close()
	if err := checkParents(root, "chmod", rel, false); err != nil {
		return err
	}
	name := filepath.FromSlash(rel)
	fi, err := root.Lstat(name)
	if err != nil {
		return fmt.Errorf("scm: chmod %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("scm: chmod %s: not a regular file", rel)
	}
	perm := fi.Mode().Perm()
	if fm == filemode.Executable {
		perm |= (perm & 0o444) >> 2
	} else {
		perm &^= 0o111
	}
	if perm != fi.Mode().Perm() {
		if err := root.Chmod(name, perm); err != nil {
			return fmt.Errorf("scm: chmod %s: %w", rel, err)
		}
	}
	r.forgetLocked(rel)
	return nil
}
