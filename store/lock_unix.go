//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockState takes the state lock at path (creating the file), waiting
// up to lockWait for a daemon that is still shutting down: ErrLocked when
// another Open holds it longer. release drops it.
func lockState(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, ErrLocked
			}
			return nil, err
		}
		// flock has no timeout; bbolt polls its own lock the same way.
		time.Sleep(lockPoll)
	}
}

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
