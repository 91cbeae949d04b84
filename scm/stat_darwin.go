package scm

import (
	"io/fs"
	"syscall"
)

func fillSys(st *fileStat, fi fs.FileInfo) {
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ctime = s.Ctimespec.Sec*1e9 + s.Ctimespec.Nsec
		st.ino = s.Ino
		st.uid = s.Uid
		st.gid = s.Gid
		st.sys = true
	}
}
