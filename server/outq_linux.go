//go:build linux

package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// unacked returns how many bytes written to conn the peer has not yet
// acknowledged (the kernel's send queue), when conn is a TCP connection.
func unacked(conn net.Conn) (int64, bool) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return 0, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || ierr != nil {
		return 0, false
	}
	return int64(n), true
}
