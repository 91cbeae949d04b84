//go:build unix

package gitobj

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the first size bytes of f read-only. Pack files are never
// modified in place (git writes a new one and renames it), so the mapping
// stays valid until unmapFile; a file truncated by something else makes
// a read fault, which Reader turns into an error (see catchFault).
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, os.ErrInvalid
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func unmapFile(b []byte) error { return unix.Munmap(b) }
