package fswatch

import (
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func sysStat(fi fs.FileInfo) (ino uint64, ctime int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ino, st.Ctim.Nano()
}

// Magic numbers from statfs(2) of file systems whose changes can come from
// another kernel (a server, a host, a FUSE daemon), which inotify never sees.
// virtiofs and sshfs report the FUSE magic.
var remoteFS = map[uint32]string{
	0x6969:     "nfs",
	0x517b:     "smb",
	0xff534d42: "cifs",
	0xfe534d42: "smb2",
	0x01021997: "9p",
	0x65735546: "fuse",
	0x5346414f: "afs",
	0x73757245: "coda",
}

// remoteFSName names Root's file system if it is one of remoteFS.
func remoteFSName(path string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return ""
	}
	return remoteFS[uint32(st.Type)] // Type is int32 on some architectures
}

// defaultWatchBudget is a quarter of fs.inotify.max_user_watches, or no
// budget if it cannot be read.
func defaultWatchBudget() int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return -1
	}
	return max(n/4, 1)
}
