//go:build !unix

package source

import "io/fs"

// inode is a file's inode number, 0 when unknown.
func inode(fs.FileInfo) uint64 { return 0 }
