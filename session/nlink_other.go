//go:build !unix

package session

import "io/fs"

func hardLinked(fs.FileInfo) bool { return false }
