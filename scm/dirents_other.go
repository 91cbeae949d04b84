//go:build !linux

package scm

import (
	"io/fs"
	"os"
)

// readDirents lists the directory open as f: each entry's name and type
// (fs.ModeDir, fs.ModeSymlink, 0 for a regular file, fs.ModeIrregular
// for anything else).
func readDirents(f *os.File) ([]dirent, error) {
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]dirent, len(ents))
	for i, e := range ents {
		t := e.Type()
		switch {
		case t.IsRegular(), t.IsDir(), t&fs.ModeSymlink != 0:
			t &= fs.ModeDir | fs.ModeSymlink
		default:
			t = fs.ModeIrregular
		}
		out[i] = dirent{name: e.Name(), typ: t}
	}
	return out, nil
}
