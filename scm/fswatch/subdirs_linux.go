package fswatch

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// subdirs returns the names of dir's subdirectories (not following
// symbolic links), read with getdents(2) and taken from each record's
// type: unlike os.ReadDir, nothing is allocated or sorted for the files,
// which are most of a tree's entries. An entry of unknown type (a file
// system that does not report it) is lstat'ed.
func subdirs(dir string) ([]string, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	var out []string
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: ino u64, off s64, reclen u16,
			// type u8, then the name, NUL-terminated.
			const nameAt = 19
			reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
			if reclen < nameAt || reclen > len(b) {
				return out, nil // malformed: what was read so far
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
			switch typ {
			case unix.DT_DIR:
				out = append(out, string(name))
			case unix.DT_UNKNOWN:
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					out = append(out, string(name))
				}
			}
		}
	}
}
