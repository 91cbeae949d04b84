package source

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/changesetd/changesetd/protocol"
)

// ReadFile reads the file at path, named uri in errors, for a session's
// resourceRead (session.Options.ReadFile). dirOf names the session
// directory path lies in, and path relative to it; nothing outside one is
// read (PermissionDenied), nor anything under a .git directory. Every
// step below the session directory is taken through os.Root, so a
// directory swapped for a symbolic link meanwhile cannot lead outside it.
// A symbolic link reads as its target, which is its content as git
// stores and diffs it; a named pipe, socket or device is refused without
// being opened, a file with other hard links is refused, and content
// larger than limit is refused.
func ReadFile(uri, path string, limit int64, dirOf func(path string) (dir, rel string, ok bool)) ([]byte, error) {
	// The directories above the file are resolved once, to find the
	// session directory it lies in; from there on every step is taken
	// inside that directory through os.Root, so a directory swapped for a
	// symbolic link meanwhile cannot lead outside it.
	parent, err := filepath.EvalSymlinks(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: file does not exist", uri).WithReason(protocol.ReasonFileNotFound)
	}
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	dir, rel, ok := dirOf(filepath.Join(parent, filepath.Base(path)))
	if !ok {
		return nil, protocol.Errorf(protocol.CodePermissionDenied, "resourceRead %s: outside every session's working directories", uri)
	}
	if underGitDir(rel) {
		return nil, protocol.Errorf(protocol.CodePermissionDenied, "resourceRead %s: files under .git are not served; only the working tree and stored objects are", uri)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	defer root.Close()
	// Lstat before opening: a symbolic link is served as its target (its
	// content as git stores it), and a named pipe, socket or device is
	// refused without being opened (opening a FIFO blocks until a writer
	// comes, pinning an OS thread per read). The open itself is
	// non-blocking and the type checked again on the descriptor, in case
	// the file was swapped between the two.
	fi, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: file does not exist", uri).WithReason(protocol.ReasonFileNotFound)
	}
	if err != nil {
		return nil, refusedOpen(uri, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := root.Readlink(rel)
		if err != nil {
			return nil, refusedOpen(uri, err)
		}
		return []byte(t), nil
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(uri, fi.Mode())
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, refusedOpen(uri, err)
	}
	defer f.Close()
	fi, err = f.Stat()
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
	if fi.Size() > limit {
		return nil, tooLarge(uri, limit)
	}
	// One buffer of the size stat gave, and one byte more to notice a
	// file that grew meanwhile; io.ReadAll would grow and copy its buffer
	// all the way up.
	data := make([]byte, fi.Size()+1)
	n, err := io.ReadFull(f, data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	if int64(n) > fi.Size() {
		rest, err := io.ReadAll(io.LimitReader(f, limit+1-int64(n)))
		if err != nil {
			return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
		}
		data = append(data[:n], rest...)
		n = len(data)
	}
	if int64(n) > limit {
		return nil, tooLarge(uri, limit)
	}
	return data[:n], nil
}

// tooLarge is the refusal of content over the limit of one read.
func tooLarge(uri string, limit int64) error {
	return protocol.Errorf(protocol.CodeInvalidParams, "resourceRead %s: content is larger than %d bytes, the most one read returns", uri, limit)
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

// underGitDir reports whether a relative path names a .git entry or
// something inside one (a repository's, a submodule's or a worktree's):
// its config, hooks and objects are not working-tree content.
func underGitDir(rel string) bool {
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if strings.EqualFold(part, ".git") {
			return true
		}
	}
	return false
}

// refusedOpen is the answer to a file os.Root would not open: one reached
// through a symbolic link that leads outside the directory is refused,
// anything else is not found.
func refusedOpen(uri string, err error) error {
	if strings.Contains(err.Error(), "escapes") || errors.Is(err, syscall.ELOOP) {
		return protocol.Errorf(protocol.CodePermissionDenied, "resourceRead %s: reached through a symbolic link that leads outside the working directory", uri)
	}
	return protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
}
