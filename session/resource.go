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
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return m.readLink(uri, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: file does not exist", uri)
	}
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	if !m.insideSessionDirs(real) {
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

// readLink returns a symbolic link's target, which is its content as git
// stores and diffs it; the link is not followed.
func (m *Manager) readLink(uri, path string) ([]byte, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	link := filepath.Join(dir, filepath.Base(path))
	if !m.insideSessionDirs(link) {
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

// insideSessionDirs reports whether real (a symlink-free absolute path)
// lies inside a working directory of some session.
func (m *Manager) insideSessionDirs(real string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		for _, d := range s.dirs {
			if confine.Contains(d, real) {
				return true
			}
		}
	}
	return false
}
