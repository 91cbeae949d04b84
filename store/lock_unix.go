//go:build unix

package store

import (
	"os"
	"syscall"
)

// locked reports whether another process holds bbolt's lock on path, so
// that a file being written by a running daemon is never taken for a
// damaged one.
func locked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return err == syscall.EWOULDBLOCK
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
