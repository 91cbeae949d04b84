package session

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/protocol"
)

var blobURIPattern = regexp.MustCompile(`^ahp-session:/([A-Za-z0-9._~-]+)/blob/([0-9a-f]{40}|[0-9a-f]{64})$`)

// ReadResource reads the content a ContentRef points at: a stored object
// of a session, a file inside one of a session's working directories,
// the whole patch of a changeset (PatchURI), or one file's patch or ACP
// diff block (FilePatchURI).
// Anything else is NotFound; a file outside every session's directories,
// including through a symbolic link, is PermissionDenied.
func (m *Manager) ReadResource(ctx context.Context, uri string, limit int64) ([]byte, error) {
	if sm := blobURIPattern.FindStringSubmatch(uri); sm != nil {
		s, ok := m.Session(protocol.SessionScheme + "/" + sm[1])
		if !ok {
			return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: session %s does not exist", uri, sm[1])
		}
		b, err := s.readBlob(ctx, sm[2], limit)
		if err == nil && int64(len(b)) > limit {
			return nil, tooLarge(uri, limit)
		}
		return b, err
	}
	if strings.HasPrefix(uri, "file:") {
		return m.readFile(uri, limit)
	}
	if b, ok, err := m.FilePatch(ctx, uri); ok {
		if err == nil && int64(len(b)) > limit {
			return nil, tooLarge(uri, limit)
		}
		return b, err
	}
	if cs, ok := changesetOfPatch(uri); ok {
		return m.ChangesetPatch(ctx, cs, int(min(limit, MaxChangesetPatchBytes)))
	}
	return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: not a content URI of this server", uri)
}

// readFile reads a file:// resource through Options.ReadFile, which
// reads it inside the session directory sessionDirOf names for it.
func (m *Manager) readFile(uri string, limit int64) ([]byte, error) {
	path, err := confine.PathFromFileURI(uri)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	if strings.ContainsRune(path, 0) {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "resourceRead %s: the path contains a NUL byte", uri)
	}
	if m.opts.ReadFile == nil {
		if _, _, ok := m.sessionDirOf(path); !ok {
			return nil, protocol.Errorf(protocol.CodePermissionDenied, "resourceRead %s: outside every session's working directories", uri)
		}
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: this server reads no files (no file reader configured)", uri)
	}
	return m.opts.ReadFile(uri, path, limit, m.sessionDirOf)
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

// tooLarge is the refusal of content over the limit of one read.
func tooLarge(uri string, limit int64) error {
	return protocol.Errorf(protocol.CodeInvalidParams, "resourceRead %s: content is larger than %d bytes, the most one read returns", uri, limit)
}
