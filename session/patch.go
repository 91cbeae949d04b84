package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

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

// changesetOfPatch inverts PatchURI; a per-file patch URI's query is
// left out.
func changesetOfPatch(uri string) (string, bool) {
	uri, _, _ = strings.Cut(uri, "?")
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
	select {
	case m.wholePatch <- struct{}{}:
		defer func() { <-m.wholePatch }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var sb strings.Builder
	for _, j := range jobs {
		list, err := j.ws.Changes(ctx, j.q)
		if errors.Is(err, ErrPatchTooLarge) {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "patch of %s: larger than the limit of %d bytes", changesetURI, limit)
		}
		if err != nil {
			return nil, fmt.Errorf("patch of %s: %w", changesetURI, err)
		}
		for _, fc := range list.Files {
			own, _ := fc.Meta["changesetd"].(protocol.Object)
			if omitted, _ := own["patchOmitted"].(bool); omitted {
				return nil, protocol.Errorf(protocol.CodeInvalidParams, "patch of %s: %s is too large for a patch of at most %d bytes", changesetURI, fc.Path(), limit)
			}
			sb.WriteString(fc.Patch)
			if sb.Len() > limit {
				return nil, protocol.Errorf(protocol.CodeInvalidParams, "patch of %s: larger than the limit of %d bytes", changesetURI, limit)
			}
		}
	}
	return []byte(sb.String()), nil
}

// A file's own patch, and its ACP v2 diff block, are not in the changeset
// state: a thousand files' patches are megabytes that every subscriber
// would receive and parse before its first paint, most never looked at.
// The state names where each is read instead, as
//
//	ahp-session:/<session id>/patch/<kind>[/<var>…]?v=<version>[&format=acp]
//
// in _meta.changesetd.patchUri (present when the file has a patch) and
// _meta.changesetd.acpDiffUri. The version names the file and the bytes
// read there, so a client may cache by URI, and it is short: a thousand
// files' URIs are part of every snapshot. A read of a version no file of
// the changeset has now is refused as a conflict: the file changed, and
// its new state is on its way to the subscriber.
const (
	metaPatchURI   = "patchUri"
	metaPatchBytes = "patchBytes"
	metaACPURI     = "acpDiffUri"
)

// FilePatchURI is where the patch of a changeset's file at version v is
// read; acp asks for its ACP v2 diff block instead.
func FilePatchURI(changesetURI, v string, acp bool) string {
	if acp {
		return PatchURI(changesetURI) + "?v=" + v + acpFormat
	}
	return PatchURI(changesetURI) + "?v=" + v
}

// acpFormat ends the URI of a file's ACP block.
const acpFormat = "&format=acp"

// blobID is a git object id, SHA-1 or SHA-256.
var blobID = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// filePatchRef is a parsed per-file patch URI.
type filePatchRef struct {
	changeset, v string
	acp          bool
	// ignoreWS (ws=ignore) asks for the patch git diff -w prints; since
	// (since=<blob id>) for the patch from the version marked reviewed,
	// which that blob id names (sincereview.go).
	ignoreWS bool
	since    string
}

// variant reports whether ref asks for a patch other than the published.
func (ref filePatchRef) variant() bool { return ref.ignoreWS || ref.since != "" }

// parseFilePatch parses a per-file patch URI; ok is false for any other
// URI, including a whole-changeset patch's.
func parseFilePatch(uri string) (ref filePatchRef, ok bool, err error) {
	base, query, found := strings.Cut(uri, "?")
	if !found {
		return ref, false, nil
	}
	cs, isPatch := changesetOfPatch(base)
	if !isPatch {
		return ref, false, nil
	}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return ref, true, fmt.Errorf("the query %q: %v", query, err)
	}
	ref = filePatchRef{changeset: cs, v: vals.Get("v")}
	switch f := vals.Get("format"); f {
	case "":
	case "acp":
		ref.acp = true
	default:
		return ref, true, fmt.Errorf("format %q: the formats are the git patch (no format) and acp", f)
	}
	switch w := vals.Get("ws"); w {
	case "":
	case "ignore":
		ref.ignoreWS = true
	default:
		return ref, true, fmt.Errorf("ws %q: the only value is ignore (whitespace ignored, as git diff -w)", w)
	}
	if r := vals.Get("since"); r != "" {
		if !blobID.MatchString(r) {
			return ref, true, fmt.Errorf("since %q: name the blob id of the version marked reviewed, as the file's sinceReview gives it", r)
		}
		ref.since = r
	}
	if ref.acp && ref.variant() {
		return ref, true, fmt.Errorf("format=acp is the published change only; ws and since are for the git patch")
	}
	if ref.v == "" {
		return ref, true, fmt.Errorf("a file's patch URI names the file's version (v=…), as the changeset state gives it")
	}
	return ref, true, nil
}

// patchVersion identifies a file and the bytes of its patch and ACP
// block: its id, its patch, and both sides' content, modes and paths.
func patchVersion(fc FileChange, fileID string) string {
	h := sha256.New()
	h.Write([]byte(fc.Patch))
	for _, v := range []*FileVersion{fc.Old, fc.New} {
		h.Write([]byte{0})
		if v != nil { // "%s %o %s", without fmt
			var buf [16]byte
			h.Write([]byte(v.OID))
			h.Write([]byte{' '})
			h.Write(strconv.AppendUint(buf[:0], uint64(v.Mode), 8))
			h.Write([]byte{' '})
			h.Write([]byte(v.Path))
		}
	}
	h.Write([]byte{0})
	h.Write([]byte(fileID))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// setPatchURIs sets the file's patch and ACP URIs in own, its
// _meta.changesetd, which must not be published yet.
// The patch's URI is the ACP block's without its last parameter, and kept
// as a part of it: one string for the two, for every file of every view.
func setPatchURIs(own protocol.Object, changesetURI, v string, fc FileChange) {
	acp := FilePatchURI(changesetURI, v, true)
	if fc.Patch != "" {
		own[metaPatchURI] = acp[:len(acp)-len(acpFormat)]
		own[metaPatchBytes] = len(fc.Patch)
	}
	if fc.ACP != nil {
		own[metaACPURI] = acp
	}
}

// FilePatch reads one file's patch, or its ACP v2 diff block as JSON, from
// the changeset it was published in. The changeset must be subscribed by
// someone (the reader itself, usually): that is where the patch is kept.
func (m *Manager) FilePatch(ctx context.Context, uri string) ([]byte, bool, error) {
	ref, ok, err := parseFilePatch(uri)
	if !ok {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, protocol.Errorf(protocol.CodeInvalidParams, "resourceRead %s: %v", uri, err)
	}
	cref, err := uritemplate.ParseChangesetURI(ref.changeset)
	if err != nil {
		return nil, true, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: %v", uri, err)
	}
	s, ok := m.Session(protocol.SessionScheme + "/" + cref.SessionID)
	if !ok {
		return nil, true, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: session %s does not exist", uri, cref.SessionID)
	}
	notSubscribed := func() error {
		return protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: nobody is subscribed to %s, which keeps its files' patches; subscribe to it, or read its whole patch at %s", uri, ref.changeset, PatchURI(ref.changeset))
	}
	if ref.variant() {
		if err := s.awaitStarted(ctx, "resourceRead "+uri); err != nil {
			return nil, true, err
		}
		pv, err := query(ctx, s, func() (patchVariant, error) {
			cs := s.changesets[ref.changeset]
			if cs == nil || s.disposed {
				return patchVariant{}, notSubscribed()
			}
			return cs.variantOf(s, ref, uri)
		})
		if err != nil {
			return nil, true, err
		}
		b, err := pv.read(ctx, uri)
		return b, true, err
	}
	b, err := query(ctx, s, func() ([]byte, error) {
		cs := s.changesets[ref.changeset]
		if cs == nil || s.disposed {
			return nil, notSubscribed()
		}
		o, ok := cs.byPatchVersion(ref.v, s.m.opts.Now())
		if !ok {
			return nil, protocol.Errorf(protocol.CodeConflict, "resourceRead %s: no file of %s has this version now: it changed or left the changeset since the URI was published; read the patchUri of its current state", uri, ref.changeset).WithReason(protocol.ReasonFileChanged)
		}
		if ref.acp {
			if !o.acp.has() {
				return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: the file has no ACP diff block", uri)
			}
			return acpOf(o.patch, o.acp)
		}
		if o.patch == "" {
			return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: the file has no patch (see its tooLarge or patchOmitted)", uri)
		}
		return []byte(o.patch), nil
	})
	return b, true, err
}

// byPatchVersion finds the published file whose patch version is v, or
// whose previous version is v and still readable at now. A read of one
// file's patch is a reader's action, not a refresh's: a scan of the files
// is cheaper than an index kept up to date on every change.
func (cs *csChannel) byPatchVersion(v string, now time.Time) (fileOrigin, bool) {
	for id, o := range cs.origin {
		if cs.v.Find(id) == nil {
			continue
		}
		if o.patchV == v {
			return o, true
		}
		if p := o.prev; p != nil && p.v == v && now.Before(p.until) {
			return fileOrigin{ws: o.ws, patch: p.patch, acp: p.acp, patchV: p.v}, true
		}
	}
	return fileOrigin{}, false
}
