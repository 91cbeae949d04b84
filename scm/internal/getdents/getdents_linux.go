// Package getdents reads a directory's entries with getdents(2), without
// the entry and name os.File.ReadDir allocates for each: the scan and the
// watcher list every directory of a tree, most of whose entries are files
// they only name or skip.
package getdents

import (
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

var bufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Each calls fn with the name and the d_type (unix.DT_*) of every entry of
// the directory open as fd, but "." and "..". The name is valid only
// during the call. An entry whose type the file system does not report
// (DT_UNKNOWN) is lstat'ed for it, and left out if it vanished meanwhile.
// A malformed record ends the listing with EIO.
func Each(fd int, fn func(name []byte, typ uint8)) error {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: ino u64, off s64, reclen u16,
			// type u8, then the name, NUL-terminated.
			const nameAt = 19
			reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
			if reclen < nameAt || reclen > len(b) {
				return unix.EIO
			}
			typ, name := b[18], b[nameAt:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue
				}
				typ = uint8((st.Mode & unix.S_IFMT) >> 12) // S_IFxxx >> 12 is DT_xxx
			}
			fn(name, typ)
		}
	}
}

// Open opens dir for Each: read-only, a directory, and without blocking
// (a directory replaced by a FIFO meanwhile must not hang the caller).
func Open(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}
