package scm

import (
	"errors"
	"io/fs"
	"os"
)

// lockfile is git's lockfile protocol (lockfile.c), the one way this
// package replaces a file inside .git: create <path>.lock with O_EXCL
// (failing when another git holds it), write the whole new content into
// it, fsync, and rename it over path. Until Commit, Rollback (safe to
// defer) closes and removes the lock, which is ours because O_EXCL
// created it; a lock we did not create is never removed.
type lockfile struct {
	path string
	lock string
	f    *os.File
	done bool
}

// errLocked wraps fs.ErrExist: another process holds the lock.
var errLocked = fs.ErrExist

// acquireLock creates path's lock. An error wrapping fs.ErrExist means
// another process holds it.
func acquireLock(path string) (*lockfile, error) {
	l := &lockfile{path: path, lock: path + ".lock"}
	f, err := os.OpenFile(l.lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, err
	}
	l.f = f
	return l, nil
}

// Write writes to the lock file.
func (l *lockfile) Write(b []byte) (int, error) { return l.f.Write(b) }

// Commit syncs the lock file and renames it over the target.
func (l *lockfile) Commit() error {
	if err := l.f.Sync(); err != nil {
		return err
	}
	if err := l.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(l.lock, l.path); err != nil {
		os.Remove(l.lock)
		l.done = true
		return err
	}
	l.done = true
	return nil
}

// Rollback releases the lock without touching the target; after Commit it
// does nothing.
func (l *lockfile) Rollback() {
	if l.done {
		return
	}
	l.done = true
	l.f.Close()
	os.Remove(l.lock)
}

// isLocked reports whether err from acquireLock means the lock is held.
func isLocked(err error) bool { return errors.Is(err, errLocked) }
