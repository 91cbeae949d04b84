//go:build !unix

package source

import "io/fs"

// inode is a file's inode number, 0 when unknown.
func inode(fs.FileInfo) uint64 { return 0 }

// hardLinked reports whether the file has more than one name; unknown
// here, so no.
func hardLinked(fs.FileInfo) bool { return false }
