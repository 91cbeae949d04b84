//go:build !linux

package scm

import (
	"os"
	"path/filepath"
)

// statter lstats the entries of one directory by path.
type statter struct {
	dir string
}

func newStatter(_ *os.File, abs string) statter {
	return statter{dir: abs}
}

func (s statter) lstat(name string) (fileStat, error) {
	fi, err := os.Lstat(filepath.Join(s.dir, name))
	if err != nil {
		return fileStat{}, err
	}
	return statOf(fi), nil
}
