package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

// TestStreamDeliversEveryFrameOnceInOrder drives the writer's queue from
// several goroutines at once, in bursts and trickles, so that batches are
// taken while producers append: each frame must reach the peer exactly
// once, and each producer's frames in the order it wrote them.
func TestStreamDeliversEveryFrameOnceInOrder(t *testing.T) {
	const producers, perProducer = 4, 5000
	cfg := Config{}
	cfg.setDefaults()
	cfg.SendQueue = producers * perProducer // never overflow here
	streams := make(chan *stream, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		streams <- newStream(ws, &cfg, nil)
	}))
	defer ts.Close()
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s := <-streams

	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				if err := s.write(fmt.Appendf(nil, "%d %d", p, i)); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		})
	}
	next := make([]int, producers)
	for range producers * perProducer {
		_, data, err := client.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var p, i int
		if _, err := fmt.Sscanf(string(data), "%d %d", &p, &i); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		if i != next[p] {
			t.Fatalf("producer %d: frame %d arrived, want %d", p, i, next[p])
		}
		next[p]++
	}
	wg.Wait()
	s.closeWith(websocket.CloseNormalClosure, "")
	client.Close()
	<-s.done
}

// TestLaggingBacklogIsReplacedNotClosed builds a backlog past the bound
// behind a reply's reserved place (as initialize gathering snapshots
// keeps one), which the writer cannot pass: the changeset actions in it
// are dropped, later actions of that channel are dropped until the
// catch-up is queued, the catch-up is asked for once (and only once the
// backlog has drained), and every other frame reaches the client in
// order, on a connection that stays open.
func TestLaggingBacklogIsReplacedNotClosed(t *testing.T) {
	cfg := Config{}
	cfg.setDefaults()
	cfg.SendQueue = 4 // the reply's place and a note are more than a quarter
	client, s := pipeStream(t, &cfg)
	lagged := make(chan []string, 4)
	s.onLag = func(chs []string) { lagged <- chs }

	sl := s.reserve()
	s.write([]byte("note 1"))
	for i := range 20 {
		if err := s.push(frame{data: fmt.Appendf(nil, "cs %d", i), channel: "cs"}); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	s.write([]byte("note 2"))
	select {
	case chs := <-lagged:
		t.Fatalf("a catch-up of %v was asked for before the backlog drained", chs)
	default:
	}
	s.fill(sl, []byte("reply"))
	var chs []string
	select {
	case chs = <-lagged:
	case <-time.After(waitLimit):
		t.Fatal("no catch-up was asked for once the backlog drained")
	}
	if !slices.Equal(chs, []string{"cs"}) {
		t.Fatalf("lagging channels %v, want [cs] once", chs)
	}
	cu := s.catchUpSlot("cs")
	s.push(frame{data: []byte("cs after"), channel: "cs"}) // after the catch-up's place
	s.fillSlot(cu, nil, [][]byte{[]byte("catch-up")})
	s.closeWith(websocket.CloseNormalClosure, "")

	got := readAll(t, client)
	// The first actions fit; the one past the bound dropped them all.
	want := []string{"reply", "note 1", "note 2", "catch-up", "cs after"}
	if !slices.Equal(got, want) {
		t.Errorf("frames %q, want %q", got, want)
	}
	select {
	case chs := <-lagged:
		t.Errorf("a second catch-up of %v was asked for", chs)
	default:
	}
	<-s.done
}

// TestUnwrittenCatchUpIsReplaced: a client that lags again before its
// catch-up was written gets the catch-up dropped with the rest and a new
// one asked for; the old one, filled late, is not written.
func TestUnwrittenCatchUpIsReplaced(t *testing.T) {
	cfg := Config{}
	cfg.setDefaults()
	cfg.SendQueue = 8
	client, s := pipeStream(t, &cfg)
	lagged := make(chan []string, 4)
	s.onLag = func(chs []string) { lagged <- chs }

	sl := s.reserve() // holds the writer
	old := s.catchUpSlot("cs")
	for i := range 9 {
		s.push(frame{data: fmt.Appendf(nil, "cs %d", i), channel: "cs"})
	}
	s.fillSlot(old, nil, [][]byte{[]byte("stale catch-up")})
	s.fill(sl, []byte("reply"))
	select {
	case <-lagged:
	case <-time.After(waitLimit):
		t.Fatal("no new catch-up was asked for")
	}
	cu := s.catchUpSlot("cs")
	s.fillSlot(cu, nil, [][]byte{[]byte("catch-up")})
	s.closeWith(websocket.CloseNormalClosure, "")
	if got, want := readAll(t, client), []string{"reply", "catch-up"}; !slices.Equal(got, want) {
		t.Errorf("frames %q, want %q", got, want)
	}
	<-s.done
}

// pipeStream returns a stream over a real WebSocket and the client end.
func pipeStream(t *testing.T, cfg *Config) (*websocket.Conn, *stream) {
	t.Helper()
	streams := make(chan *stream, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		streams <- newStream(ws, cfg, nil)
	}))
	t.Cleanup(ts.Close)
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := <-streams
	t.Cleanup(func() {
		// Whatever the test left, the writer ends with it.
		s.closeWith(websocket.CloseNormalClosure, "")
		client.Close()
		<-s.done
	})
	return client, s
}

// readAll reads text frames until the server's normal close.
func readAll(t *testing.T, client *websocket.Conn) []string {
	t.Helper()
	var got []string
	for {
		_, data, err := client.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				t.Fatalf("connection ended with %v", err)
			}
			return got
		}
		got = append(got, string(data))
	}
}

// TestUnreadRepliesStillClose: frames no snapshot replaces (replies,
// notifications) close the connection past four times the bound.
func TestUnreadRepliesStillClose(t *testing.T) {
	cfg := Config{}
	cfg.setDefaults()
	cfg.SendQueue = 4
	s := &stream{cfg: &cfg, wake: make(chan struct{}, 1), resyncing: map[string]lag{}}
	s.reserve()
	for i := range 4*4 - 1 {
		if err := s.write([]byte("r")); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := s.write([]byte("r")); err == nil {
		t.Fatal("a 17th frame behind the unread reply was queued")
	}
	if s.closeReq == nil || s.closeReq.code != websocket.ClosePolicyViolation || !strings.Contains(s.closeReq.reason, "send queue overflow") {
		t.Errorf("close %+v, want 1008 send queue overflow", s.closeReq)
	}
}

// TestCatchUpFramesReachTheSnapshot: whatever state a lagging client was
// left in, the catch-up actions reduce it to the snapshot's state, with
// serverSeqs after the snapshot's and increasing.
func TestCatchUpFramesReachTheSnapshot(t *testing.T) {
	file := func(id string, reviewed bool) protocol.ChangesetFile {
		return protocol.ChangesetFile{ID: id, Reviewed: &reviewed}
	}
	op := protocol.ChangesetOperation{ID: "revert", Label: "Revert", Scopes: []string{"changeset"}, Status: "idle"}
	client := protocol.ChangesetState{Status: protocol.StatusRecomputing, Files: []protocol.ChangesetFile{file("a", true), file("gone", false)}, Operations: []protocol.ChangesetOperation{op}}
	for _, snap := range []protocol.ChangesetState{
		{Status: protocol.StatusReady, Files: []protocol.ChangesetFile{file("a", false), file("b", true)}},
		{Status: protocol.StatusReady, Files: []protocol.ChangesetFile{}, Operations: []protocol.ChangesetOperation{op}},
		{Status: protocol.StatusError, Error: &protocol.ErrorInfo{Message: "scan failed"}, Files: []protocol.ChangesetFile{file("a", true)}},
	} {
		encoded, err := snap.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		c := &conn{}
		c.setLogger(discard())
		seq := int64(100)
		parts, rest := c.catchUpFrames(protocol.Snapshot{Resource: "ahp-changeset:/s/changeset/uncommitted", State: protocol.Encoded(encoded), FromSeq: seq}, func() int64 { seq++; return seq })
		frames := append([][]byte{bytes.Join(parts, nil)}, rest...)
		st, last := client.Clone(), int64(100)
		for _, f := range frames {
			var n struct {
				Params protocol.ActionEnvelope `json:"params"`
			}
			if err := json.Unmarshal(f, &n); err != nil {
				t.Fatalf("frame %s: %v", f, err)
			}
			if n.Params.ServerSeq <= last {
				t.Errorf("serverSeq %d after %d", n.Params.ServerSeq, last)
			}
			last = n.Params.ServerSeq
			st, _ = reducer.ApplyChangeset(st, n.Params.Action.Action, reducer.Env{})
		}
		got, _ := st.MarshalJSON()
		if !bytes.Equal(got, encoded) {
			t.Errorf("caught up to\n%s\nwant\n%s", got, encoded)
		}
	}
}
