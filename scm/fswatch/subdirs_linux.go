package fswatch

import (
	"os"

	"github.com/changesetd/changesetd/scm/internal/getdents"
	"golang.org/x/sys/unix"
)

// subdirs returns the names of dir's subdirectories (not following
// symbolic links), taken from each entry's type as getdents(2) gives it:
// unlike os.ReadDir, nothing is allocated or sorted for the files, which
// are most of a tree's entries.
func subdirs(dir string) ([]string, error) {
	fd, err := getdents.Open(dir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []string
	err = getdents.Each(fd, func(name []byte, typ uint8) {
		if typ == unix.DT_DIR {
			out = append(out, string(name))
		}
	})
	if err == unix.EIO {
		return out, nil // malformed: what was read so far
	}
	if err != nil {
		return nil, &os.PathError{Op: "getdents", Path: dir, Err: err}
	}
	return out, nil
}
