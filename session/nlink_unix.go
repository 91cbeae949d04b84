//go:build unix

package session

import (
	"io/fs"
	"syscall"
)

func hardLinked(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}
