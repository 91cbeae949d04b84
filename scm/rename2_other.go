//go:build !linux

package scm

import (
	"errors"
	"os"
	"path/filepath"
)

const (
	renameExchange  = 1 << 1
	renameNoReplace = 1 << 0
)

var errNoRename2 = errors.New("renameat2 is not supported here")

// rename2 is a plain rename; the flags of Linux's renameat2 are not
// supported.
func rename2(sroot *os.Root, src string, droot *os.Root, dst string, flags uint) error {
	if flags != 0 {
		return errNoRename2
	}
	return os.Rename(filepath.Join(sroot.Name(), src), filepath.Join(droot.Name(), dst))
}

// syncTemps makes the temp files named in tmpDir durable, one by one.
func syncTemps(tmpDir *os.Root, names []string) error {
	for _, n := range names {
		if fi, err := tmpDir.Lstat(n); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		f, err := tmpDir.OpenFile(n, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// quiesce cannot tell here whether a file is still open for writing.
func quiesce(dir *os.Root, name string) (release func(), ok bool) { return func() {}, true }
