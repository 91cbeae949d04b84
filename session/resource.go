package session

import (
	"context"
	"regexp"
	"strings"

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
		return s.ReadBlob(ctx, sm[2])
	}
	if strings.HasPrefix(uri, "file:") {
		return m.readFile(uri, limit)
	}
	if cs, ok := changesetOfPatch(uri); ok {
		return m.ChangesetPatch(ctx, cs, int(min(limit, MaxChangesetPatchBytes)))
	}
	return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: not a content URI of this server", uri)
}

// readFile reads a file:// resource through Options.ReadFile, which
// resolves it and refuses what insideSessionDirs does not accept.
func (m *Manager) readFile(uri string, limit int64) ([]byte, error) {
	path, err := confine.PathFromFileURI(uri)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	if m.opts.ReadFile == nil {
		if !m.insideSessionDirs(path) {
			return nil, protocol.Errorf(protocol.CodePermissionDenied, "resourceRead %s: outside every session's working directories", uri)
		}
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: this server reads no files (no file reader configured)", uri)
	}
	return m.opts.ReadFile(uri, path, limit, m.insideSessionDirs)
}

// insideSessionDirs reports whether real (a symlink-free absolute path)
// lies inside a working directory of some session; a path that may hold
// symbolic links is judged as it is spelt.
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
