package session

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// TestEditRightAfterReadyIsInTheSession: a client that edits a file as
// soon as the session says it is ready finds the edit in the session
// changeset. The baseline snapshot is held just as it starts; the client
// edits once it sees session/ready, then the snapshot goes on. Were the
// session ready before its baseline is taken, the baseline would hold
// the edit and the session changeset would not.
func TestEditRightAfterReadyIsInTheSession(t *testing.T) {
	ws := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "one\n"})
	ws.snapEntered = make(chan struct{})
	ws.snapGate = make(chan struct{})
	r := newRigOn(t, Options{}, ws)
	c := newClient("c1")

	select {
	case <-ws.snapEntered:
	case <-time.After(waitLimit):
		t.Fatal("the baseline snapshot never started")
	}
	// Attaching goes through the actor, after it handed the session its
	// workspaces: the session's lifecycle as the client first sees it.
	lifecycle := make(chan string, 1)
	r.m.Attach(c, r.uri, -1, func(at Attachment, err error) {
		var st protocol.SessionState
		if err == nil {
			b, _ := json.Marshal(at.Snapshot.State)
			_ = json.Unmarshal(b, &st)
		}
		lifecycle <- st.Lifecycle
	})
	var first string
	select {
	case first = <-lifecycle:
	case <-time.After(waitLimit):
		t.Fatal("attaching to the session: no answer")
	}
	readySeen := func() bool {
		for _, e := range c.envs {
			if e.Channel == r.uri && e.Action.Action.ActionType() == "session/ready" {
				return true
			}
		}
		return false
	}
	if first == protocol.LifecycleReady {
		// Ready already, while the baseline is still to be read: the
		// client edits now.
		ws.edit("late.txt", "written right after ready\n", false)
		close(ws.snapGate)
	} else {
		close(ws.snapGate)
		c.await(t, "session/ready", readySeen)
		ws.edit("late.txt", "written right after ready\n", false)
	}
	uri := r.changeset(t, protocol.KindSession, nil)
	c.subscribe(t, r.m, uri)
	c.awaitFiles(t, uri, ws.root, "late.txt")
}

// TestFirstViewIsShownOncePublished: the session tells the workspace
// when the uncommitted changeset's computed list has been published
// (ChangeList.Shown), which lets a workspace hold its baseline back until
// then, and not only once the list is computed.
func TestFirstViewIsShownOncePublished(t *testing.T) {
	ws := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	ws.shown = make(chan Query, 16)
	r := newRigOn(t, Options{}, ws)
	c := newClient("c1")
	uri := r.changeset(t, protocol.KindUncommitted, nil)
	c.subscribe(t, r.m, uri)
	c.awaitFiles(t, uri, ws.root, "a.txt")
	for {
		select {
		case q := <-ws.shown:
			if q.View == protocol.KindUncommitted && q.Paths == nil {
				return
			}
		case <-time.After(waitLimit):
			t.Fatal("the uncommitted changeset was published, and its list never said shown")
		}
	}
}
