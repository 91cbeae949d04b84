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
	st := fileStat{mtime: fi.ModTime().UnixNano(), size: fi.Size(), mode: fi.Mode()}
	fillSys(&st, fi)
	return st
}
