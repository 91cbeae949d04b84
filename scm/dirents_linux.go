package scm

import (
	"io/fs"
	"os"

	"github.com/changesetd/changesetd/scm/internal/getdents"
	"golang.org/x/sys/unix"
)

// readDirents lists the directory open as f, without "." and "..": each
// entry's name and type (fs.ModeDir, fs.ModeSymlink, 0 for a regular
// file, fs.ModeIrregular for anything else). Where os.File.ReadDir
// allocates an entry and a name per file, the names here share one
// string, so a directory costs a few allocations however many files it
// has; a scan of a million files lists them all.
func readDirents(f *os.File) ([]dirent, error) {
	var names []byte
	type raw struct {
		at, end int
		typ     uint8
	}
	var raws []raw
	err := getdents.Each(int(f.Fd()), func(name []byte, typ uint8) {
		raws = append(raws, raw{len(names), len(names) + len(name), typ})
		names = append(names, name...)
	})
	if err != nil {
		return nil, &os.PathError{Op: "getdents", Path: f.Name(), Err: err}
	}
	all := string(names)
	out := make([]dirent, len(raws))
	for i, r := range raws {
		name := all[r.at:r.end]
		var t fs.FileMode
		switch r.typ {
		case unix.DT_REG:
		case unix.DT_DIR:
			t = fs.ModeDir
		case unix.DT_LNK:
			t = fs.ModeSymlink
		default:
			t = fs.ModeIrregular
		}
		out[i] = dirent{name: name, typ: t}
	}
	return out, nil
}
