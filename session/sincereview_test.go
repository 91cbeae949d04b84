package session

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/view"
	"github.com/changesetd/changesetd/store"
)

// pathFake snapshots the paths it is given, as the git workspace does
// (PathSnapshotter): HEAD with those paths as they are, and the blob id
// put at each. gate, when set, holds it once entered is sent to.
type pathFake struct {
	*fakeWorkspace
	gate, entered chan struct{}
}

func (w *pathFake) SnapshotPaths(ctx context.Context, paths []string) (string, map[string]string, error) {
	if w.entered != nil {
		w.entered <- struct{}{}
		<-w.gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	snap := maps.Clone(w.head)
	oids := map[string]string{}
	for _, p := range paths {
		c, ok := w.work[p]
		if !ok {
			delete(snap, p)
			continue
		}
		snap[p] = c
		oids[p] = changeset.BlobOID([]byte(c))
	}
	id := fmt.Sprintf("snap-%d", len(w.snaps)+1)
	w.snaps[id] = snap
	return id, oids, nil
}

// keptStore is a memStore that keeps reviewed versions and tells each
// write of them.
type keptStore struct {
	*memStore
	kmu    sync.Mutex
	kept   map[string]map[string]store.ReviewedVersion
	writes chan struct{}
}

func (s *keptStore) PutReviewedVersions(uri string, v map[string]store.ReviewedVersion) error {
	s.kmu.Lock()
	s.kept[uri] = maps.Clone(v)
	s.kmu.Unlock()
	s.writes <- struct{}{}
	return nil
}

func (s *keptStore) ReviewedVersions(uri string) (map[string]store.ReviewedVersion, error) {
	s.kmu.Lock()
	defer s.kmu.Unlock()
	return maps.Clone(s.kept[uri]), nil
}

// TestSinceReviewKeepsTheReviewedVersion: a file marked reviewed keeps
// that version, and once it changes offers the patch from it, read at
// the URI its _meta names. A file that changes between its flag and the
// snapshot of it keeps nothing: its snapshot holds another version than
// the one reviewed, which would show changes the reviewer never saw as
// reviewed.
func TestSinceReviewKeepsTheReviewedVersion(t *testing.T) {
	ws := &pathFake{fakeWorkspace: newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "one\n", "b.txt": "x\n"}, map[string]string{"a.txt": "two\n", "b.txt": "y\n"})}
	db := &keptStore{memStore: newMemStore(), kept: map[string]map[string]store.ReviewedVersion{}, writes: make(chan struct{}, 8)}
	r := newRigOn(t, Options{Store: db, OpenWorkspace: func(string) (Workspace, error) { return ws, nil }}, ws.fakeWorkspace)
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt", "b.txt")
	a, b := r.fileURI("a.txt"), r.fileURI("b.txt")
	// file is the file id as c holds it; c.mu must be held.
	file := func(id string) protocol.ChangesetFile {
		for _, f := range c.stateLocked(uri).Files {
			if f.ID == id {
				return f
			}
		}
		return protocol.ChangesetFile{}
	}
	// offer is the URI f's _meta offers the changes since its review at.
	// c.mu must be held.
	offer := func(id string) string {
		own, _ := file(id).Meta["changesetd"].(protocol.Object)
		since, _ := own[view.MetaSinceReview].(protocol.Object)
		uri, _ := since["patchUri"].(string)
		return uri
	}
	locked := func(f func()) {
		c.mu.Lock()
		defer c.mu.Unlock()
		f()
	}

	r.m.Dispatch(c, uri, 1, protocol.ChangesetFilesReviewChanged{Files: []string{a}, Reviewed: true})
	<-db.writes
	db.kmu.Lock()
	got := db.kept[uri][a]
	db.kmu.Unlock()
	if got.OID != changeset.BlobOID([]byte("two\n")) || got.Tree == "" {
		t.Fatalf("kept for a.txt: %+v, want the reviewed blob in a snapshot", got)
	}
	r.ws.edit("a.txt", "two\nthree\n", false)
	c.await(t, "a.txt changed, offering what changed since its review", func() bool { return offer(a) != "" })
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var since string
	locked(func() { since = offer(a) })
	patch, ok, err := r.m.FilePatch(ctx, since)
	if !ok || err != nil || !strings.Contains(string(patch), "@@ -1 +1,2 @@\n two\n+three\n") {
		t.Fatalf("the changes since the review at %s: %v %v\n%s", since, ok, err, patch)
	}

	// b.txt changes while its snapshot is being taken.
	ws.gate, ws.entered = make(chan struct{}), make(chan struct{})
	r.m.Dispatch(c, uri, 2, protocol.ChangesetFilesReviewChanged{Files: []string{b}, Reviewed: true})
	<-ws.entered
	r.ws.edit("b.txt", "z\n", false)
	c.await(t, "b.txt changed, its flag gone", func() bool {
		f := file(b)
		return f.Edit.After != nil && f.Edit.After.Content.Nonce == changeset.BlobOID([]byte("z\n")) && !f.IsReviewed()
	})
	close(ws.gate)
	<-db.writes
	db.kmu.Lock()
	_, keptB := db.kept[uri][b]
	_, keptA := db.kept[uri][a]
	db.kmu.Unlock()
	if keptB || !keptA {
		t.Errorf("kept after b.txt changed during its snapshot: a %v (want true), b %v (want false)", keptA, keptB)
	}
	locked(func() { since = offer(b) })
	if since != "" {
		t.Errorf("b.txt offers changes since a version that was not kept: %s", since)
	}
}
