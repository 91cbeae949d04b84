package scm

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// renameat2(2) flags: swap the two names atomically, or fail rather than
// replace an existing target.
const (
	renameExchange  = unix.RENAME_EXCHANGE
	renameNoReplace = unix.RENAME_NOREPLACE
)

// errNoRename2 is returned by rename2 when the file system or platform
// has no renameat2 with the flags asked for.
var errNoRename2 = errors.New("renameat2 with these flags is not supported here")

// rename2 renames src (in sroot) to dst (in droot) with renameat2(2) on
// their open parent directories; flags 0 is a plain rename.
func rename2(sroot *os.Root, src string, droot *os.Root, dst string, flags uint) error {
	sd, err := sroot.Open(filepath.Dir(src))
	if err != nil {
		return err
	}
	defer sd.Close()
	dd, err := droot.Open(filepath.Dir(dst))
	if err != nil {
		return err
	}
	defer dd.Close()
	err = unix.Renameat2(int(sd.Fd()), filepath.Base(src), int(dd.Fd()), filepath.Base(dst), flags)
	switch {
	case err == nil:
		return nil
	case flags != 0 && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)):
		return errNoRename2
	}
	return &os.LinkError{Op: "renameat2", Old: src, New: dst, Err: err}
}

// syncTemps makes the temp files named in tmpDir durable: fsync of each,
// many at a time, so that the file system commits them together rather
// than one journal commit after another (and unlike syncfs, without
// waiting for every other program's writes to the same file system).
func syncTemps(tmpDir *os.Root, names []string) error {
	const workers = 32
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	next := make(chan string)
	for range min(workers, len(names)) {
		wg.Go(func() {
			for n := range next {
				if err := syncOne(tmpDir, n); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, n := range names {
		next <- n
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

func syncOne(tmpDir *os.Root, name string) error {
	if fi, err := tmpDir.Lstat(name); err != nil || !fi.Mode().IsRegular() {
		return err
	}
	f, err := tmpDir.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// quiesce waits until no one has the file name in dir open for writing,
// and keeps it so (a read lease, fcntl F_SETLEASE) until release is
// called: a file just renamed away may still be written through a
// descriptor opened before the rename, and only once that is closed is
// its content final. ok is false when writers kept it open for the whole
// wait. Where the file system or the file's owner allows no lease, it
// returns at once with ok true: the content is then as final as can be
// told.
func quiesce(dir *os.Root, name string) (release func(), ok bool) {
	f, err := dir.OpenFile(name, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return func() {}, true
	}
	fd := int(f.Fd())
	deadline := time.Now().Add(2 * time.Second)
	for {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK)
		if err == nil {
			return func() {
				unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
				f.Close()
			}, true
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EBUSY) {
			f.Close()
			return func() {}, true
		}
		if time.Now().After(deadline) {
			f.Close()
			return func() {}, false
		}
		time.Sleep(time.Millisecond)
	}
}
