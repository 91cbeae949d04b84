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
