package scm

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
	note string // the note that names the lock as ours (noteLock), or ""
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

// acquireNotedLock is acquireLock that also notes, in dir (the temp dir),
// that the lock is this process's: a crash between the lock's creation
// and its commit leaves it behind, and git then refuses to touch the ref
// or the index until someone removes it by hand. removeStaleLocks, run
// when the repository is next opened, removes such a lock when it is
// still the very file the note names and older than the process that
// opens it. A note that cannot be written leaves the lock as git's own
// would be left.
func acquireNotedLock(path, dir string) (*lockfile, error) {
	l, err := acquireLock(path)
	if err != nil {
		return nil, err
	}
	fi, err := l.f.Stat()
	if st := statOf(fi); err == nil && st.sys && os.MkdirAll(dir, 0o700) == nil {
		note := filepath.Join(dir, tempPrefix()+"lock-"+strconv.FormatUint(rand.Uint64(), 36)+".note")
		if os.WriteFile(note, []byte(fmt.Sprintf("%d\n%s\n", st.ino, l.lock)), 0o600) == nil {
			l.note = note
		}
	}
	return l, nil
}

// removeStaleLocks removes the locks that the notes in dir of processes
// other than this one name, when each is still the file noted (same
// inode) and older than this process: locks a crashed daemon left.
func removeStaleLocks(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, tempPrefix()) || !strings.Contains(name, "-lock-") || !strings.HasSuffix(name, ".note") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		inoText, lock, _ := strings.Cut(strings.TrimSuffix(string(b), "\n"), "\n")
		ino, err := strconv.ParseUint(inoText, 10, 64)
		if err != nil || !strings.HasSuffix(lock, ".lock") {
			continue
		}
		fi, err := os.Lstat(lock)
		if err != nil {
			continue
		}
		if st := statOf(fi); st.sys && st.ino == ino && fi.ModTime().Before(processStart) {
			os.Remove(lock)
		}
	}
}

// processStart is when this process started, about: a lock older than it
// cannot be one of its own.
var processStart = time.Now()

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
		l.dropNote()
		return err
	}
	l.done = true
	l.dropNote()
	return nil
}

// dropNote removes the lock's note, once the lock is gone.
func (l *lockfile) dropNote() {
	if l.note != "" {
		os.Remove(l.note)
		l.note = ""
	}
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
	l.dropNote()
}

// isLocked reports whether err from acquireLock means the lock is held.
func isLocked(err error) bool { return errors.Is(err, errLocked) }
