package session

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/protocol"
)

// ResolveResource describes the resource uri (resourceResolve): a file or
// directory of a session's working directories through
// Options.ResolveFile, under the confinement of ReadResource; any other
// content URI ReadResource serves (a stored object, a patch) is a file
// of the size of its content, read up to limit.
func (m *Manager) ResolveResource(ctx context.Context, uri string, follow bool, limit int64) (protocol.ResourceResolveResult, error) {
	if strings.HasPrefix(uri, "file:") {
		path, err := m.filePath("resourceResolve", uri)
		if err != nil {
			return protocol.ResourceResolveResult{}, err
		}
		if m.opts.ResolveFile == nil {
			return protocol.ResourceResolveResult{}, protocol.Errorf(protocol.CodeNotFound, "resourceResolve %s: this server describes no files (no resolver configured)", uri)
		}
		return m.opts.ResolveFile(uri, path, follow, m.sessionDirHolding)
	}
	b, err := m.ReadResource(ctx, uri, limit)
	if err != nil {
		return protocol.ResourceResolveResult{}, err
	}
	return protocol.ResourceResolveResult{URI: uri, Type: protocol.ResourceTypeFile, Size: protocol.Ptr(int64(len(b)))}, nil
}

// ListResource lists a directory of a session's working directories
// (resourceList) through Options.ListDir, under the same confinement.
// Nothing else is a directory here.
func (m *Manager) ListResource(uri string) ([]protocol.DirectoryEntry, error) {
	if !strings.HasPrefix(uri, "file:") {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceList %s: not a directory of this server; only the sessions' working directories are listed", uri)
	}
	path, err := m.filePath("resourceList", uri)
	if err != nil {
		return nil, err
	}
	if m.opts.ListDir == nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "resourceList %s: this server lists no directories (no lister configured)", uri)
	}
	return m.opts.ListDir(uri, path, m.sessionDirHolding)
}

// filePath is the path of a file: URI, refused as ReadResource refuses it.
func (m *Manager) filePath(method, uri string) (string, error) {
	path, err := confine.PathFromFileURI(uri)
	if err != nil {
		return "", protocol.Errorf(protocol.CodeNotFound, "%s %s: %v", method, uri, err)
	}
	if strings.ContainsRune(path, 0) {
		return "", protocol.Errorf(protocol.CodeInvalidParams, "%s %s: the path contains a NUL byte", method, uri)
	}
	return path, nil
}

// sessionDirHolding is sessionDirOf that also names a session directory
// itself, with rel ".".
func (m *Manager) sessionDirHolding(path string) (dir, rel string, ok bool) {
	m.mu.Lock()
	for _, s := range m.sessions {
		for _, d := range s.dirs {
			if filepath.Clean(path) == filepath.Clean(d) {
				m.mu.Unlock()
				return d, ".", true
			}
		}
	}
	m.mu.Unlock()
	return m.sessionDirOf(path)
}
