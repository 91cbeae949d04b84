package scm

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// TempDirName is the directory inside the git dir where working-tree
// writes are prepared before their atomic rename into place. Being under
// .git, a temp file left by a crash (kill -9 in the middle of a large
// write) is never seen as a working-tree file, so no status shows it and
// no commit stages it; being in the repository it is, in every ordinary
// layout, on the working tree's file system, so the rename is atomic.
const TempDirName = "changesetd-tmp"

// tempPrefix starts every temp name with this process's id, so that
// RemoveStaleTemps, run when any Repo is opened, keeps the writes in
// flight of this process's other Repos on the same repository. Another
// daemon writing to the same repository at that moment would see its
// write fail (and retry nothing); its working tree stays untouched.
func tempPrefix() string { return strconv.Itoa(os.Getpid()) + "-" }

func (r *Repo) tempDir() string { return filepath.Join(r.gitDir, TempDirName) }

// openTempDir creates the temp dir if needed and opens it.
func (r *Repo) openTempDir() (*os.Root, error) {
	d := r.tempDir()
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return os.OpenRoot(d)
}

// newTempName is a fresh name inside the temp dir.
func newTempName() string {
	return tempPrefix() + strconv.FormatUint(rand.Uint64(), 36) + ".tmp"
}

// RemoveStaleTemps removes what earlier processes left in the temp dir
// (a write interrupted by a crash) and returns how many entries it
// removed. Entries of this process are kept.
func (r *Repo) RemoveStaleTemps() (int, error) {
	d := r.tempDir()
	ents, err := os.ReadDir(d)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	removeStaleLocks(d)
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(d, e.Name())); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// isCrossDevice reports whether err is a rename across file systems.
func isCrossDevice(err error) bool { return errors.Is(err, syscall.EXDEV) }
