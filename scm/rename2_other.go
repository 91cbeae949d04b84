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
