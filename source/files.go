package source

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/changesetd/changesetd/protocol"
)

// ReadFile reads the file at path, named uri in errors, for a session's
// resourceRead (session.Options.ReadFile). Only a regular file with one
// link is read, and only when inside accepts its path once symbolic links
// are resolved (PermissionDenied otherwise); a symbolic link reads as its
// target, which is its content as git stores and diffs it. A named pipe,
// socket or device is refused without being opened, and a file larger
// than limit is refused.
func ReadFile(uri, path string, limit int64, inside func(real string) bool) ([]byte, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return readLink(uri, path, inside)
	}
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: file does not exist", uri)
	}
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	if !inside(real) {
		return nil, protocol.Errorf(protocol.CodePermissionDenied, "resourceRead %s: outside every session's working directories", uri)
	}
	// Lstat before opening: a named pipe, socket or device is refused
	// without being opened (opening a FIFO blocks until a writer comes,
	// pinning an OS thread per read). The open itself is non-blocking
	// and the type checked again on the descriptor, in case the file was
	// swapped between the two.
	if fi, err := os.Lstat(real); err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	} else if !fi.Mode().IsRegular() {
		return nil, notRegular(uri, fi.Mode())
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(uri, fi.Mode())
	}
	if hardLinked(fi) {
		// A second name for a file may point outside the workspace.
		return nil, protocol.Errorf(protocol.CodePermissionDenied, "resourceRead %s: the file has other hard links; it is not served", uri)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	if int64(len(data)) > limit {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "resourceRead %s: file is larger than %d bytes", uri, limit)
	}
	return data, nil
}

// readLink returns a symbolic link's target; the link is not followed.
func readLink(uri, path string, inside func(string) bool) ([]byte, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	link := filepath.Join(dir, filepath.Base(path))
	if !inside(link) {
		return nil, protocol.Errorf(protocol.CodePermissionDenied, "resourceRead %s: outside every session's working directories", uri)
	}
	t, err := os.Readlink(link)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	return []byte(t), nil
}

// notRegular is the refusal of a file that is not a regular file.
func notRegular(uri string, m fs.FileMode) error {
	kind := "special file"
	switch {
	case m.IsDir():
		kind = "directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "named pipe"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeDevice != 0:
		kind = "device"
	}
	return protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: is a %s, not a regular file; only regular files are served", uri, kind)
}
