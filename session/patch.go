package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/uritemplate"
)

// MaxChangesetPatchBytes bounds the whole-changeset patch: past it a read
// fails and names the limit, rather than handing a commit-message
// generator or a review bot a patch that is silently cut. It stays well
// under the server's resourceRead ceiling so that the patch always fits
// one response.
const MaxChangesetPatchBytes = 32 << 20

// The whole-changeset patch of a changeset is the resource
//
//	ahp-session:/<session id>/patch/<kind>[/<var>…]
//
// mirroring the changeset URI ahp-changeset:/<session id>/changeset/<kind>[/<var>…].
const patchSegment = "/patch/"

// PatchURI is the URI of the whole-changeset patch of a changeset URI.
func PatchURI(changesetURI string) string {
	rest, ok := strings.CutPrefix(changesetURI, protocol.ChangesetScheme+"/")
	if !ok {
		return ""
	}
	id, kind, ok := strings.Cut(rest, "/changeset/")
	if !ok {
		return ""
	}
	return protocol.SessionScheme + "/" + id + patchSegment + kind
}

// changesetOfPatch inverts PatchURI.
func changesetOfPatch(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, protocol.SessionScheme+"/")
	if !ok {
		return "", false
	}
	id, kind, ok := strings.Cut(rest, patchSegment)
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return protocol.ChangesetScheme + "/" + id + "/changeset/" + kind, true
}

// patchMeta is the changeset state's _meta: where its whole patch is read
// and how large it may be.
func patchMeta(changesetURI string) protocol.Object {
	return protocol.Object{"changesetd": protocol.Object{
		"patchResource": protocol.Object{"uri": PatchURI(changesetURI), "maxBytes": MaxChangesetPatchBytes},
	}}
}

// ChangesetPatch returns a changeset as one patch that "git apply" takes
// on the changeset's before tree: every file's git patch, binary files as
// "GIT binary patch", renames, mode changes and deletions included, in
// path order. Paths are relative to each working directory's repository.
// An empty changeset gives an empty patch. A patch over limit bytes, or a
// file whose patch cannot be written within it, is an error that says so.
func (m *Manager) ChangesetPatch(ctx context.Context, changesetURI string, limit int) ([]byte, error) {
	ref, err := uritemplate.ParseChangesetURI(changesetURI)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "patch of %s: %v", changesetURI, err)
	}
	s, ok := m.Session(protocol.SessionScheme + "/" + ref.SessionID)
	if !ok {
		return nil, protocol.Errorf(protocol.CodeNotFound, "patch of %s: session %s does not exist", changesetURI, ref.SessionID)
	}
	type job struct {
		ws Workspace
		q  Query
	}
	if err := s.awaitStarted(ctx, "patch of "+changesetURI); err != nil {
		return nil, err
	}
	jobs, err := query(ctx, s, func() ([]job, error) {
		if s.disposed {
			return nil, protocol.Errorf(protocol.CodeNotFound, "patch of %s: session was disposed", changesetURI)
		}
		cs := &csChannel{ref: ref}
		if err := s.checkRef(ref); err != nil {
			return nil, protocol.Errorf(protocol.CodeNotFound, "patch of %s: %v", changesetURI, err)
		}
		var out []job
		for i, e := range s.workspaces {
			if e.ws == nil {
				return nil, fmt.Errorf("patch of %s: %s: %v", changesetURI, e.dir, e.err)
			}
			q := cs.query(s, i)
			q.MaxPatchBytes = limit
			out = append(out, job{e.ws, q})
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	for _, j := range jobs {
		list, err := j.ws.Changes(ctx, j.q)
		if err != nil {
			return nil, fmt.Errorf("patch of %s: %w", changesetURI, err)
		}
		for _, fc := range list.Files {
			own, _ := fc.Meta["changesetd"].(protocol.Object)
			if omitted, _ := own["patchOmitted"].(bool); omitted {
				return nil, protocol.Errorf(protocol.CodeInvalidParams, "patch of %s: %s is too large for a patch of at most %d bytes", changesetURI, fc.Path(), limit)
			}
			p, _ := own["patch"].(string)
			sb.WriteString(p)
			if sb.Len() > limit {
				return nil, protocol.Errorf(protocol.CodeInvalidParams, "patch of %s: larger than the limit of %d bytes", changesetURI, limit)
			}
		}
	}
	return []byte(sb.String()), nil
}
