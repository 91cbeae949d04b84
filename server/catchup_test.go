package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/uritemplate"
)

// TestCatchUpDelaysNoOtherSession holds a slow reader's catch-up while
// its frames are being made, and meanwhile a save in another session
// (here a title change, which publishes like one) reaches that session's
// subscriber: only the catch-up's registration runs in the sequence that
// every publish waits for, not the making of its frames. Gated, not
// timed: the catch-up is released only once the other session's action
// has arrived.
func TestCatchUpDelaysNoOtherSession(t *testing.T) {
	ctx := testCtx(t)
	m := session.NewManager(session.Options{OpenWorkspace: func(dir string) (session.Workspace, error) { return listWorkspace{dir, 2000}, nil }})
	srv := New(Config{Token: "t"}, m, nil)
	ts := httptest.NewServer(srv)
	s := &testServer{srv: srv, m: m, ts: ts, ws: "ws" + strings.TrimPrefix(ts.URL, "http") + "/ahp"}
	defer s.stop(t)
	slow, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.ws.Close()
	saver, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.ws.Close()
	for c, id := range map[*testClient]string{slow: "slow", saver: "saver"} {
		if err := initialize(ctx, c, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b"} {
		if err := slow.call(ctx, protocol.MethodCreateSession, map[string]any{
			"channel": protocol.SessionScheme + "/" + id, "workingDirectories": []string{session.FileURI(t.TempDir())},
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	csA, err := uritemplate.SessionChangesetTemplates("a")[protocol.KindUncommitted].Expand(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := slow.call(ctx, protocol.MethodSubscribe, map[string]any{"channel": csA}, nil); err != nil {
		t.Fatal(err)
	}
	sessionB := protocol.SessionScheme + "/b"
	if err := saver.call(ctx, protocol.MethodSubscribe, map[string]any{"channel": sessionB}, nil); err != nil {
		t.Fatal(err)
	}

	building, release := make(chan struct{}), make(chan struct{})
	catchUpBuilding = func() { close(building); <-release }
	released := false
	free := func() {
		if !released {
			released = true
			close(release)
		}
	}
	defer func() { free(); catchUpBuilding = nil }()

	// The slow reader's connection lags on A's changeset.
	var c *conn
	s.srv.mu.Lock()
	for cc := range s.srv.conns {
		if cc.ClientID() == "slow" {
			c = cc
		}
	}
	s.srv.mu.Unlock()
	c.stream.mu.Lock()
	c.stream.resyncing[csA] = lagRequested
	c.stream.mu.Unlock()
	c.lagging([]string{csA})
	select {
	case <-building:
	case <-ctx.Done():
		t.Fatal("the catch-up never started")
	}

	// A save in session B while A's catch-up is being made.
	if err := saver.call(ctx, protocol.MethodDispatchAction, map[string]any{
		"channel": sessionB, "clientSeq": 1, "action": map[string]any{"type": "session/titleChanged", "title": "saved"},
	}, nil); err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second) // only bounds a failure; nothing is timed
	defer cancel()
	err = saver.waitFor(bctx, "session B's action", func() bool {
		for _, m := range saver.msgs {
			var e protocol.ActionEnvelope
			if m.Method == protocol.NotifyAction && json.Unmarshal(m.Params, &e) == nil && e.Channel == sessionB {
				return true
			}
		}
		return false
	})
	free()
	if err != nil {
		t.Fatalf("a publish in session B waited for session A's catch-up: %v", err)
	}
	// The catch-up, released, reaches the slow reader.
	if err := slow.waitFor(ctx, "the catch-up", func() bool {
		for _, m := range slow.msgs {
			var e protocol.ActionEnvelope
			if m.Method == protocol.NotifyAction && json.Unmarshal(m.Params, &e) == nil && e.Channel == csA && e.Action.Action.ActionType() == "changeset/contentChanged" {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
}

// listWorkspace is a working tree whose uncommitted changeset is n added
// files, and which never changes.
type listWorkspace struct {
	root string
	n    int
}

func (w listWorkspace) Root() string { return w.root }

func (w listWorkspace) Changes(context.Context, session.Query) (*session.ChangeList, error) {
	var l session.ChangeList
	for i := range w.n {
		l.Files = append(l.Files, session.FileChange{New: &session.FileVersion{Path: fmt.Sprintf("f%05d.txt", i), OID: fmt.Sprintf("%040x", i), Mode: 0o100644, Live: true}})
	}
	return &l, nil
}

func (listWorkspace) ReadBlob(string) ([]byte, error) { return nil, errors.New("no objects") }

func (listWorkspace) Watch(func([]string, bool)) (session.Watch, error) { return idleWatch{}, nil }

func (listWorkspace) Snapshot(context.Context, bool) (string, error) { return "snap", nil }

func (listWorkspace) Close() error { return nil }

type idleWatch struct{}

func (idleWatch) Mode() (string, string) { return "none", "" }
func (idleWatch) Stop()                  {}
