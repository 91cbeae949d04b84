//go:build !linux

package scm

import "io/fs"

// readPlainFile has no single-call form here: every read takes the
// careful path (see the Linux version).
func readPlainFile(root, rel string) ([]byte, fs.FileInfo, bool) { return nil, nil, false }
