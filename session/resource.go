package session

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/protocol"
)

var blobURIPattern = regexp.MustCompile(`^ahp-session:/([A-Za-z0-9._~-]+)/blob/([0-9a-f]{40}|[0-9a-f]{64})$`)

// ReadResource reads the content a ContentRef points at: a stored object
// of a session, a file inside one of a session's working directories, or
// the whole patch of a changeset (PatchURI).
// Anything else is NotFound; a file outside every session's directories,
// including through a symbolic link, is PermissionDenied.
func (m *Manager) ReadResource(ctx context.Context, uri string, limit int64) ([]byte, error) {
	if sm := blobURIPattern.FindStringSubmatch(uri); sm != nil {
		s, ok := m.Session(protocol.SessionScheme + "/" + sm[1])
		if !ok {
			return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: session %s does not exist", uri, sm[1])
		}
		b, err := s.ReadBlob(ctx, sm[2])
		if err == nil && int64(len(b)) > limit {
			return nil, tooLarge(uri, limit)
		}
		return b, err
	}
	if strings.HasPrefix(uri, "file:") {
		return m.readFile(uri, limit)
	}
	if cs, ok := changesetOfPatch(uri); ok {
		return m.ChangesetPatch(ctx, cs, int(min(limit, MaxChangesetPatchBytes)))
	}
	return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: not a content URI of this server", uri)
}

func (m *Manager) readFile(uri string, limit int64) ([]byte, error) {
	path, err := confine.PathFromFileURI(uri)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	if strings.ContainsRune(path, 0) {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "resourceRead %s: the path contains a NUL byte", uri)
	}
	// The directories above the file are resolved once, to find the
	// session directory it lies in; from there on every step is taken
	// inside that directory through os.Root, so a directory swapped for a
	// symbolic link meanwhile cannot lead outside it.
	parent, err := filepath.EvalSymlinks(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: file does not exist", uri)
	}
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	dir, rel, ok := m.sessionDirOf(filepath.Join(parent, filepath.Base(path)))
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
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: file does not exist", uri)
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

// sessionDirOf returns the working directory of some session that path
// (absolute, its directories free of symbolic links) lies strictly
// inside, and path relative to it.
func (m *Manager) sessionDirOf(path string) (dir, rel string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		for _, d := range s.dirs {
			if !confine.Contains(d, path) {
				continue
			}
			if r, err := filepath.Rel(d, path); err == nil && r != "." && !strings.HasPrefix(r, "..") {
				return d, r, true
			}
		}
	}
	return "", "", false
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

// anchorOutside returns why an annotation cannot be anchored at path,
// which lies lexically inside dir: a NUL byte, or an existing directory
// on the way that is a symbolic link leading outside dir. "" if neither.
func anchorOutside(dir, path string) string {
	if strings.ContainsRune(path, 0) {
		return "the path contains a NUL byte"
	}
	// The longest part of the path that exists decides where it leads.
	for p := path; confine.Contains(dir, p) && p != dir; p = filepath.Dir(p) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if realDir, err := filepath.EvalSymlinks(dir); err == nil {
			dir = realDir
		}
		if !confine.Contains(dir, real) {
			return "the path leads outside the working directory through a symbolic link"
		}
		return ""
	}
	return ""
}
