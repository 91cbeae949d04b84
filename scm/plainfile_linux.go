package scm

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2(2) is found missing (a kernel before
// 5.6) or refused (a seccomp filter): every read then takes the
// component-by-component path.
var noOpenat2 atomic.Bool

// readPlainFile reads root/rel when every component of the path is a
// real directory and the file itself is regular: one openat2(2) that
// refuses any symbolic link on the way (RESOLVE_NO_SYMLINKS), then fstat
// and read. The careful path (lstat of each parent, then an open through
// os.Root) costs a dozen system calls a file, a fifth of a first view's
// reading of its changed files. Anything else, a symbolic link anywhere
// (the root's own path included), a directory, a FIFO or an error,
// returns ok false for the careful path to decide and to word the error.
func readPlainFile(root, rel string) (b []byte, fi fs.FileInfo, ok bool) {
	if noOpenat2.Load() {
		return nil, nil, false
	}
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	abs := filepath.Join(root, filepath.FromSlash(rel))
	var fd int
	var err error
	for {
		fd, err = unix.Openat2(unix.AT_FDCWD, abs, &how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		if err == unix.ENOSYS || err == unix.EPERM {
			noOpenat2.Store(true)
		}
		return nil, nil, false
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	fi, err = f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil, false
	}
	b, err = readAllSized(f, fi.Size())
	if err != nil {
		return nil, nil, false
	}
	return b, fi, true
}
