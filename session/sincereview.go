package session

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/view"
	"github.com/changesetd/changesetd/store"
)

// A file marked reviewed keeps the version it was reviewed at: a snapshot
// holding the file as it was when the flag arrived, and its path and blob
// id there. When the file changes, its _meta offers the patch
// from that version to the current one (view.MetaSinceReview), read as
// the file's patchUri with "&since=<reviewed blob id>", so a reviewer reads only what
// changed since, not the whole diff again. The versions are stored, and
// their trees kept from the snapshot store's garbage collection.

// PathSnapshotter is implemented by workspaces that can snapshot a few
// files as they are now without a scan of the whole tree: a snapshot of
// HEAD's tree with only those paths overlaid, enough to keep the versions
// of the files a toggle marks reviewed. It returns the blob id it put at
// each path that differs from HEAD.
type PathSnapshotter interface {
	SnapshotPaths(ctx context.Context, paths []string) (tree string, oids map[string]string, err error)
}

// ReviewedVersionStore is implemented by a Store that keeps the reviewed
// versions (the daemon's *store.DB): per changeset, file id -> version.
type ReviewedVersionStore interface {
	PutReviewedVersions(changesetURI string, v map[string]store.ReviewedVersion) error
	ReviewedVersions(changesetURI string) (map[string]store.ReviewedVersion, error)
}

func (m *Manager) reviewedStore() ReviewedVersionStore {
	rs, _ := m.opts.Store.(ReviewedVersionStore)
	return rs
}

func (m *Manager) loadReviewedVersions(uri string) map[string]store.ReviewedVersion {
	out := map[string]store.ReviewedVersion{}
	if rs := m.reviewedStore(); rs != nil {
		r, err := rs.ReviewedVersions(uri)
		if err != nil {
			m.log.Error("cannot load reviewed versions", "changeset", uri, "err", err)
		}
		maps.Copy(out, r)
	}
	return out
}

// setKept replaces the changeset's kept versions, in the store and in
// the model. s's actor.
func (cs *csChannel) setKept(s *Session, next map[string]store.ReviewedVersion) {
	if rs := s.m.reviewedStore(); rs != nil {
		if err := rs.PutReviewedVersions(cs.uri, next); err != nil {
			s.log.Error("cannot save reviewed versions", "changeset", cs.uri, "err", err)
			return
		}
	}
	cs.kept = next
	keys := make(map[string]string, len(next))
	for id, v := range next {
		keys[id] = v.Key
	}
	cs.v.Kept = keys
}

// setKeptLoaded sets the versions loaded from the store, before anything
// is published.
func (cs *csChannel) setKeptLoaded(kept map[string]store.ReviewedVersion) {
	cs.kept = kept
	for id, v := range kept {
		cs.v.Kept[id] = v.Key
	}
}

// keepReviewed records the versions of files just marked reviewed (or
// forgets them, when unmarked). Their files are snapshotted off the
// actor (PathSnapshotter, else the whole working tree), and each version
// recorded when the snapshot is done if the flag
// is still for it. A changeset whose new side is a stored tree (a turn
// that ended, a comparison of two) never changes, so nothing is kept for
// it. Runs on s's actor after the flags were stored.
func (s *Session) keepReviewed(cs *csChannel, ids []string, reviewed bool) {
	if !reviewed {
		next := maps.Clone(cs.kept)
		for _, id := range ids {
			delete(next, id)
		}
		if len(next) != len(cs.kept) {
			cs.setKept(s, next)
		}
		return
	}
	if !cs.live(s) {
		return
	}
	live := map[int][]store.ReviewedVersion{} // by workspace
	liveIDs := map[int][]string{}
	for _, id := range ids {
		f, o := cs.v.Find(id), cs.origin[id]
		if f == nil || o.to == nil || cs.v.Reviews[id] != view.ContentKey(*f) {
			continue
		}
		live[o.ws] = append(live[o.ws], store.ReviewedVersion{Key: cs.v.Reviews[id], Workspace: o.ws, Path: o.to.Path, OID: o.to.OID})
		liveIDs[o.ws] = append(liveIDs[o.ws], id)
	}
	for i, vs := range live {
		if i >= len(s.workspaces) || s.workspaces[i].ws == nil {
			continue
		}
		ws, ctx, ids := s.workspaces[i].ws, s.ctx, liveIDs[i]
		paths := make([]string, len(vs))
		for k, v := range vs {
			paths[k] = v.Path
		}
		s.m.spawn("snapshot of a reviewed version", func() {
			var tree string
			var oids map[string]string // nil: the blob ids are not known
			var err error
			if ps, ok := ws.(PathSnapshotter); ok {
				tree, oids, err = ps.SnapshotPaths(ctx, paths)
			} else {
				tree, err = ws.Snapshot(ctx, false)
			}
			s.do(func() {
				if err != nil {
					s.log.Warn("the reviewed version could not be kept; changes since the review will not be offered", "changeset", cs.uri, "err", err)
					return
				}
				if s.disposed || s.changesets[cs.uri] != cs {
					return
				}
				next := maps.Clone(cs.kept)
				for id := range next {
					if _, ok := cs.v.Reviews[id]; !ok {
						delete(next, id) // its flag was cleared with its hunks'
					}
				}
				for k, v := range vs {
					// Still reviewed at the version the snapshot was
					// taken for, and the snapshot holds that version
					// (the file may have changed since the flag came);
					// where the blob id is not known, the read checks it.
					if oid, known := oids[v.Path]; known && oid != v.OID {
						continue
					}
					if cs.v.Reviews[ids[k]] == v.Key {
						v.Tree = tree
						next[ids[k]] = v
					}
				}
				cs.setKept(s, next)
				cs.republishOffers(s, ids)
			})
		})
	}
}

// republishOffers publishes again those of ids whose offer of the change
// since their review appeared with the version just kept: files that
// changed while it was being recorded.
func (cs *csChannel) republishOffers(s *Session, ids []string) {
	for _, id := range ids {
		f := cs.v.Find(id)
		if f == nil {
			continue
		}
		nf := *f
		cs.v.Decorate(&nf)
		if !view.SameFile(*f, nf) {
			cs.commit(s, protocol.ChangesetFileSet{File: nf}, nil)
		}
	}
}

// patchVariant is a per-file patch read other than the published one: the
// file's diff with whitespace ignored, or from the version marked
// reviewed, or both (parseFilePatch).
type patchVariant struct {
	ws    Workspace
	q     Query
	to    *FileVersion // the version read, as published
	from  *FileVersion // for a whitespace-ignored diff: the old side, as published
	since string       // for a read since the review: the reviewed blob id
}

// variantOf is where the patch ref asks is computed. s's actor.
func (cs *csChannel) variantOf(s *Session, ref filePatchRef, uri string) (patchVariant, error) {
	id, o, ok := cs.byPatchVersionID(ref.v, s.m.opts.Now())
	if !ok {
		return patchVariant{}, protocol.Errorf(protocol.CodeConflict, "resourceRead %s: no file of %s has this version now: it changed or left the changeset since the URI was published; read the patchUri of its current state", uri, ref.changeset).WithReason(protocol.ReasonFileChanged)
	}
	if o.ws >= len(s.workspaces) || s.workspaces[o.ws].ws == nil {
		return patchVariant{}, fmt.Errorf("resourceRead %s: the working directory of the file cannot be read", uri)
	}
	base := cs.query(s, o.ws)
	pv := patchVariant{ws: s.workspaces[o.ws].ws, to: o.to, from: o.from}
	var paths []string
	for _, v := range []*FileVersion{o.from, o.to} {
		if v != nil {
			paths = append(paths, v.Path)
		}
	}
	if ref.since == "" {
		pv.q = base
		pv.q.Paths = paths
		pv.q.IgnoreWhitespace = ref.ignoreWS
		return pv, nil
	}
	kept, ok := cs.kept[id]
	if !ok || kept.Tree == "" || kept.Key != cs.v.Reviews[id] || o.to == nil {
		return patchVariant{}, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: the file has no version marked reviewed that the daemon kept; mark it reviewed, and this reads what changed after", uri)
	}
	if kept.OID != ref.since {
		return patchVariant{}, protocol.Errorf(protocol.CodeConflict, "resourceRead %s: the version marked reviewed is %s now, not %s; read the file's current sinceReview", uri, kept.OID, ref.since).WithReason(protocol.ReasonFileChanged)
	}
	to := ""
	if base.View == ViewTrees {
		to = base.To
	}
	pv.from = nil
	pv.since = kept.OID
	pv.q = Query{View: ViewTrees, From: kept.Tree, To: to, Paths: []string{kept.Path, o.to.Path}, IgnoreWhitespace: ref.ignoreWS}
	return pv, nil
}

// byPatchVersionID is byPatchVersion with the file's id.
func (cs *csChannel) byPatchVersionID(v string, now time.Time) (string, fileOrigin, bool) {
	for id, o := range cs.origin {
		if cs.v.Find(id) == nil {
			continue
		}
		if o.patchV == v || (o.prev != nil && o.prev.v == v && now.Before(o.prev.until)) {
			return id, o, true
		}
	}
	return "", fileOrigin{}, false
}

// read computes the variant's patch off the actor. The versions the
// workspace finds must be the ones published (and, since a review, the
// one reviewed): a file that changed meanwhile is a conflict, as for the
// published patch. A file with no change left (only whitespace changed,
// or nothing since the review) reads as an empty patch.
func (pv patchVariant) read(ctx context.Context, uri string) ([]byte, error) {
	list, err := pv.ws.Changes(ctx, pv.q)
	if err != nil {
		return nil, fmt.Errorf("resourceRead %s: %w", uri, err)
	}
	changed := func(what string) error {
		return protocol.Errorf(protocol.CodeConflict, "resourceRead %s: the file's %s changed since the URI was published; read the patchUri of its current state", uri, what).WithReason(protocol.ReasonFileChanged)
	}
	for _, fc := range list.Files {
		if !pv.matches(fc) {
			continue
		}
		if pv.to != nil && (fc.New == nil || fc.New.OID != pv.to.OID) {
			return nil, changed("content")
		}
		if pv.since != "" && (fc.Old == nil || fc.Old.OID != pv.since) {
			return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: the version kept for the review is not the one marked reviewed (the file changed while it was being kept); mark it reviewed again", uri)
		}
		if pv.since == "" && pv.from != nil && (fc.Old == nil || fc.Old.OID != pv.from.OID) {
			return nil, changed("old side")
		}
		if own, _ := fc.Meta["changesetd"].(protocol.Object); own["patchOmitted"] == true {
			return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead %s: the file has no patch (see its tooLarge or patchOmitted)", uri)
		}
		return []byte(fc.Patch), nil
	}
	if pv.since == "" {
		return nil, changed("content")
	}
	return []byte{}, nil // the file is as it was reviewed
}

// matches reports whether fc is the file the variant reads.
func (pv patchVariant) matches(fc FileChange) bool {
	if pv.to != nil {
		return fc.New != nil && fc.New.Path == pv.to.Path
	}
	return fc.New == nil && fc.Old != nil && pv.from != nil && fc.Old.Path == pv.from.Path
}
