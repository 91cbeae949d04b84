package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/uritemplate"
)

// TestSnapshotWorkDelaysNoSaveElsewhere holds the making of a large
// snapshot's frames in session A — a slow reader's catch-up, or the
// reply to a subscribe — and meanwhile saves a file in session B: the
// save's fileSet reaches B's subscriber. Only the registration of the
// snapshot runs in the sequence every publish waits for. Gated, not
// timed: the held work is released only once B's fileSet has arrived
// (or the wait for it has failed).
func TestSnapshotWorkDelaysNoSaveElsewhere(t *testing.T) {
	for _, held := range []string{"catch-up", "subscribe"} {
		t.Run(held, func(t *testing.T) { testSnapshotWorkDelaysNoSave(t, held) })
	}
}

func testSnapshotWorkDelaysNoSave(t *testing.T, held string) {
	ctx := testCtx(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	saving := &savingWorkspace{root: dirB, n: 3}
	m := session.NewManager(session.Options{OpenWorkspace: func(dir string) (session.Workspace, error) {
		if dir == dirB {
			return saving, nil
		}
		return listWorkspace{dir, 2000}, nil
	}})
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
	for id, dir := range map[string]string{"a": dirA, "b": dirB} {
		if err := slow.call(ctx, protocol.MethodCreateSession, map[string]any{
			"channel": protocol.SessionScheme + "/" + id, "workingDirectories": []string{session.FileURI(dir)},
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	csA, err := uritemplate.SessionChangesetTemplates("a")[protocol.KindUncommitted].Expand(nil)
	if err != nil {
		t.Fatal(err)
	}
	csB, err := uritemplate.SessionChangesetTemplates("b")[protocol.KindUncommitted].Expand(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := saver.call(ctx, protocol.MethodSubscribe, map[string]any{"channel": csB}, nil); err != nil {
		t.Fatal(err)
	}
	for !saving.settled() { // a condition waited for, not a delay
		select {
		case <-ctx.Done():
			t.Fatal("session B was never watched and computed")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if held == "catch-up" {
		if err := slow.call(ctx, protocol.MethodSubscribe, map[string]any{"channel": csA}, nil); err != nil {
			t.Fatal(err)
		}
	}

	building, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func() { once.Do(func() { close(building); <-release }) }
	released := false
	free := func() {
		if !released {
			released = true
			close(release)
		}
	}
	defer func() { free(); catchUpBuilding, replyEncoding = nil, nil }()

	var subscribed chan error
	switch held {
	case "catch-up":
		catchUpBuilding = hold
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
	case "subscribe":
		replyEncoding = func(method string) {
			if method == protocol.MethodSubscribe {
				hold()
			}
		}
		subscribed = make(chan error, 1)
		go func() { subscribed <- slow.call(ctx, protocol.MethodSubscribe, map[string]any{"channel": csA}, nil) }()
	}
	select {
	case <-building:
	case <-ctx.Done():
		t.Fatalf("the %s never started", held)
	}

	// A save in session B while A's snapshot is being made.
	saving.save()
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second) // only bounds a failure; nothing is timed
	defer cancel()
	err = saver.waitFor(bctx, "session B's fileSet", func() bool {
		for _, m := range saver.msgs {
			var e protocol.ActionEnvelope
			if m.Method == protocol.NotifyAction && json.Unmarshal(m.Params, &e) == nil && e.Channel == csB && e.Action.Action.ActionType() == "changeset/fileSet" {
				return true
			}
		}
		return false
	})
	free()
	if err != nil {
		t.Fatalf("a save in session B waited for session A's %s: %v", held, err)
	}
	if subscribed != nil {
		if err := <-subscribed; err != nil {
			t.Fatal(err)
		}
		return
	}
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

// savingWorkspace is a working tree of n added files whose save adds one
// more and reports it to the watcher.
type savingWorkspace struct {
	root     string
	mu       sync.Mutex
	n        int
	cb       func([]string, bool)
	computed int // Changes calls returned
}

// settled reports whether the workspace is watched and its changes were
// computed once: a save then reaches its subscriber as a fileSet, not as
// part of the first list or not at all.
func (w *savingWorkspace) settled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cb != nil && w.computed > 0
}

func (w *savingWorkspace) Root() string { return w.root }

func (w *savingWorkspace) Changes(context.Context, session.Query) (*session.ChangeList, error) {
	w.mu.Lock()
	n := w.n
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.computed++
		w.mu.Unlock()
	}()
	return listWorkspace{w.root, n}.Changes(context.Background(), session.Query{})
}

func (w *savingWorkspace) ReadBlob(oid string) ([]byte, error) {
	return listWorkspace{}.ReadBlob(oid)
}

func (w *savingWorkspace) Watch(cb func([]string, bool)) (session.Watch, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cb = cb
	return idleWatch{}, nil
}

func (w *savingWorkspace) save() {
	w.mu.Lock()
	w.n++
	path, cb := fmt.Sprintf("f%05d.txt", w.n-1), w.cb
	w.mu.Unlock()
	if cb != nil {
		cb([]string{path}, false)
	}
}

func (w *savingWorkspace) Snapshot(context.Context, bool) (string, error) { return "snap", nil }

func (w *savingWorkspace) Close() error { return nil }
