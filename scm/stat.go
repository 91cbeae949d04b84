package scm

import "io/fs"

// fileStat is the part of lstat(2) that git caches in the index.
type fileStat struct {
	mtime int64 // ns since the epoch
	ctime int64 // ns since the epoch; 0 where the platform has none
	size  int64
	ino   uint64
	uid   uint32
	gid   uint32
	mode  fs.FileMode
	sys   bool // ctime, ino, uid and gid are known
}

func statOf(fi fs.FileInfo) fileStat {
	st := fileStat{mtime: fi.ModTime().UnixNano(), size: fi.Size(), mode: normMode(fi.Mode())}
	fillSys(&st, fi)
	return st
}

// normMode keeps what we compare of a mode: the permission bits and
// whether it is a regular file, a symlink, a directory or something else,
// so that stats taken through os.Lstat and through fstatat compare equal.
func normMode(m fs.FileMode) fs.FileMode {
	out := m & fs.ModePerm
	switch {
	case m.IsRegular():
	case m&fs.ModeSymlink != 0:
		out |= fs.ModeSymlink
	case m.IsDir():
		out |= fs.ModeDir
	default:
		out |= fs.ModeIrregular
	}
	return out
}
