//go:build unix

package source

import (
	"io/fs"
	"syscall"
)

// inode is a file's inode number, 0 when unknown.
func inode(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// hardLinked reports whether the file has more than one name.
func hardLinked(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}
