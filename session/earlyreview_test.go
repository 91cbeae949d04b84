package session

import (
	"context"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestReviewBeforeBaselineIsKept: a review flag set on uncommitted while
// the new session's baseline is still being taken is stored and stays
// stored once the baseline is recorded; clearing an earlier session's
// records of the same id happens before anything is served.
func TestReviewBeforeBaselineIsKept(t *testing.T) {
	db := newMemStore()
	ws := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	ws.snapGate = make(chan struct{})
	r := newRigOn(t, Options{Store: db}, ws)
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt")
	id := r.fileURI("a.txt")
	r.m.Dispatch(c, uri, 1, protocol.ChangesetFilesReviewChanged{Files: []string{id}, Reviewed: true})
	c.await(t, "a.txt reviewed", func() bool {
		return len(c.stateLocked(uri).Files) == 1 && c.stateLocked(uri).Files[0].IsReviewed()
	})
	close(ws.snapGate)
	// A turn boundary waits for the baseline, which is recorded first.
	if _, err := r.m.TurnStart(context.Background(), r.uri, "t1", ""); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	if _, ok := db.sessions[r.id]; !ok {
		t.Fatal("the session was not recorded")
	}
	_, kept := db.reviews[uri][id]
	db.mu.Unlock()
	if !kept {
		t.Error("the review flag set before the baseline was deleted when the session was recorded")
	}
}

// A comparison from the baseline subscribed while the session is still
// starting (a restart: its baseline not yet known) waits for the start
// instead of being refused as a turn "still running".
func TestCompareFromBaselineBeforeStartWaits(t *testing.T) {
	ws := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	ws.snapGate = make(chan struct{})
	r := newRigOn(t, Options{}, ws)
	c := newClient("c1")
	uri := r.changeset(t, protocol.KindCompareTurns, map[string]string{"originalTurnId": BaselineTurnID, "modifiedTurnId": BaselineTurnID})
	c.subscribe(t, r.m, uri) // fails the test if refused
	close(ws.snapGate)
	c.await(t, "the comparison ready once started", func() bool {
		return c.stateLocked(uri).Status == protocol.StatusReady
	})
}
