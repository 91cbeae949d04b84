package scm

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// statter lstats the entries of one open directory with fstatat(2), which
// spares the kernel a path walk from the root for every file.
type statter struct {
	fd int
}

func newStatter(dir *os.File, _ string) statter {
	return statter{fd: int(dir.Fd())}
}

func (s statter) lstat(name string) (fileStat, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(s.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fileStat{}, &fs.PathError{Op: "fstatat", Path: name, Err: err}
		}
		break
	}
	fst := fileStat{
		mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
		size:  st.Size,
		ino:   st.Ino,
		uid:   st.Uid,
		gid:   st.Gid,
		sys:   true,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		fst.mode |= fs.ModeSymlink
	case unix.S_IFDIR:
		fst.mode |= fs.ModeDir
	default:
		fst.mode |= fs.ModeIrregular
	}
	fst.mode |= fs.FileMode(st.Mode & 0o777)
	return fst, nil
}
