package scm

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is returned when a path that should hold file content is
// a named pipe, a socket, a device or anything else that is not a regular
// file. Such files are never read: opening a FIFO for reading blocks until
// a writer appears, and a device read can block forever or never end.
var ErrNotRegular = errors.New("not a regular file")

// openRegular opens abs for reading only if it is a regular file. The
// open is non-blocking (a FIFO swapped in after a caller's Lstat opens at
// once instead of pinning a thread until a writer comes) and the type is
// checked again on the open descriptor, so nothing but a regular file is
// ever read. O_NONBLOCK has no effect on reads of regular files.
func openRegular(abs string) (*os.File, fs.FileInfo, error) {
	return regularOnly(os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK, 0))
}

// openRegularIn is openRegular through root.
func openRegularIn(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	return regularOnly(root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0))
}

// regularOnly keeps a file just opened only if it is a regular file.
func regularOnly(f *os.File, err error) (*os.File, fs.FileInfo, error) {
	if err != nil {
		return nil, nil, err
	}
	fi, err := checkRegular(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func checkRegular(f *os.File) (fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", f.Name(), ErrNotRegular, FileType(fi.Mode()))
	}
	return fi, nil
}

// readRegular is os.ReadFile for regular files only (see openRegular).
func readRegular(abs string) ([]byte, error) {
	f, fi, err := openRegular(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllSized(f, fi.Size())
}

// readAllSized reads f to its end, sized for a file of size bytes.
func readAllSized(f *os.File, size int64) ([]byte, error) {
	if size < 0 || int64(int(size)) != size {
		size = 0
	}
	b := make([]byte, 0, size+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// FileType names the kind of a non-regular file for error messages.
func FileType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	}
	return "irregular file"
}
