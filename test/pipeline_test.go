package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
)

// pipeline is a raw WebSocket client that sends requests without waiting
// for their answers, as JSON-RPC allows, and records the responses in the
// order they arrive.
type pipeline struct {
	t  *testing.T
	ws *websocket.Conn

	mu      sync.Mutex
	got     []protocol.RPCMessage // responses, in arrival order
	readErr error
	changed chan struct{} // closed and replaced on every response
	done    chan struct{}
}

// dialPipeline connects a raw client to d and initializes it.
func dialPipeline(t *testing.T, d *daemon, clientID string) *pipeline {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(d.URL, http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeline{t: t, ws: ws, changed: make(chan struct{}), done: make(chan struct{})}
	go p.read()
	t.Cleanup(func() {
		ws.Close()
		<-p.done
	})
	p.send("init", protocol.MethodInitialize, map[string]any{"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": clientID})
	if r := p.await("init")["init"]; r.Error != nil {
		t.Fatalf("initialize: %d %s", r.Error.Code, r.Error.Message)
	}
	return p
}

func (p *pipeline) read() {
	defer close(p.done)
	for {
		_, data, err := p.ws.ReadMessage()
		var m protocol.RPCMessage
		if err == nil {
			err = json.Unmarshal(data, &m)
		}
		p.mu.Lock()
		if err != nil {
			p.readErr = err
		} else if m.IsResponse() {
			p.got = append(p.got, m)
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// send writes one request with a string id and does not wait.
func (p *pipeline) send(id, method string, params any) {
	p.t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		p.t.Fatal(err)
	}
	if err := p.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		p.t.Fatal(err)
	}
}

// await waits until a response to each id has arrived and returns them by
// id (the first response of each).
func (p *pipeline) await(ids ...string) map[string]protocol.RPCMessage {
	p.t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		p.mu.Lock()
		out := map[string]protocol.RPCMessage{}
		for _, m := range p.got {
			var id string
			if json.Unmarshal(m.ID, &id) == nil {
				if _, ok := out[id]; !ok {
					out[id] = m
				}
			}
		}
		ch, rerr := p.changed, p.readErr
		p.mu.Unlock()
		missing := 0
		for _, id := range ids {
			if _, ok := out[id]; !ok {
				missing++
			}
		}
		if missing == 0 {
			return out
		}
		if rerr != nil {
			p.t.Fatalf("connection ended with %d of %d answers missing: %v", missing, len(ids), rerr)
		}
		select {
		case <-ch:
		case <-deadline:
			p.t.Fatalf("%d of %d answers missing after 2 minutes", missing, len(ids))
		}
	}
}

// order is the ids of the responses received so far, in arrival order.
func (p *pipeline) order() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.got))
	for _, m := range p.got {
		var id string
		json.Unmarshal(m.ID, &id)
		out = append(out, id)
	}
	return out
}

// rpcErr is a response's error as a Go error, nil on success.
func rpcErr(m protocol.RPCMessage) error {
	if m.Error == nil {
		return nil
	}
	return m.Error
}

// Requests of one connection take effect in the order they were sent:
// 200 turnStart/turnEnd pairs written without waiting for any answer all
// succeed, each end finding its own turn running, and are answered in
// the order sent.
func TestPipelinedTurnBoundariesTakeEffectInOrder(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	sess := onlySession(t, d.client(t, "setup")).Resource
	p := dialPipeline(t, d, "hooks")

	const pairs = 200
	var ids []string
	for i := range pairs {
		turn := fmt.Sprintf("t%d", i)
		p.send("s"+turn, protocol.MethodTurnStart, map[string]any{"channel": sess, "turnId": turn})
		p.send("e"+turn, protocol.MethodTurnEnd, map[string]any{"channel": sess, "turnId": turn})
		ids = append(ids, "s"+turn, "e"+turn)
	}
	got := p.await(ids...)
	failed := 0
	for _, id := range ids {
		if err := rpcErr(got[id]); err != nil {
			if failed < 5 {
				t.Errorf("%s: %v", id, err)
			}
			failed++
			continue
		}
		var info struct {
			TurnID string `json:"turnId"`
		}
		json.Unmarshal(got[id].Result, &info)
		if info.TurnID != id[1:] {
			t.Errorf("%s answered turn %q", id, info.TurnID)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d pipelined turn boundaries failed", failed, len(ids))
	}
	order := p.order()[1:] // after initialize's
	if strings.Join(order, ",") != strings.Join(ids, ",") {
		t.Errorf("answered out of order: %v", order[:min(len(order), 12)])
	}
}

// A file's review flag and its hunks' marks set by one connection land in
// the order sent: each unmark of a hunk, pipelined before a flag of the
// whole file, is overtaken by nothing, so the last word is the flag and
// the file ends reviewed with every hunk marked.
func TestPipelinedReviewMarksLandInOrder(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"f.txt": numberedWith(40, nil)})
	writeFile(t, repo, "f.txt", numberedWith(40, map[int]string{3: "three", 35: "thirty-five"}))
	e := startOps(t, repo)
	id := e.id("f.txt")
	st := e.m.Wait("two hunks", func(st protocol.ChangesetState) bool {
		return ready(st) && len(hunksOfFile(findFile(st, repo, "f.txt"))) == 2
	})
	first := hunksOfFile(findFile(st, repo, "f.txt"))[0].ID
	p := dialPipeline(t, e.d, "reviewer")
	p.send("sub", protocol.MethodSubscribe, map[string]any{"channel": e.uri})

	const rounds = 30
	var ids []string
	for i := range rounds {
		h, f := fmt.Sprintf("h%d", i), fmt.Sprintf("f%d", i)
		p.send(h, protocol.MethodHunksReviewChanged, map[string]any{"channel": e.uri, "file": id, "hunks": []string{first}, "reviewed": false})
		p.send(f, protocol.MethodDispatchAction, map[string]any{"channel": e.uri, "clientSeq": i + 1, "action": map[string]any{"type": "changeset/filesReviewChanged", "files": []string{id}, "reviewed": true}})
		ids = append(ids, h, f)
	}
	got := p.await(append(ids, "sub")...)
	for _, id := range ids {
		if err := rpcErr(got[id]); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	// A subscription made after every answer sees the actor's state after
	// every one of them.
	raw, _ := subscribe(t, e.d.client(t, "observer"), e.uri)
	var final protocol.ChangesetState
	if err := json.Unmarshal(raw, &final); err != nil {
		t.Fatal(err)
	}
	f := findFile(final, repo, "f.txt")
	if f == nil || !f.IsReviewed() {
		t.Fatalf("the file is not reviewed: the last flag was overtaken by an unmark sent before it (%+v)", hunksOfFile(f))
	}
	for _, h := range hunksOfFile(f) {
		if !h.Reviewed {
			t.Errorf("hunk %s unmarked after the last flag of the whole file", h.ID)
		}
	}
}

// Stage then commit, pipelined: the commit records what the stage put in
// the index, never every change, in each of several rounds. (A commit
// bound to the view last shown to its client may be refused instead, the
// stage having changed the index since: that is in order too, as long as
// nothing was committed.)
func TestPipelinedStageThenCommitLandInOrder(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	e := startOps(t, repo)
	p := dialPipeline(t, e.d, "committer")
	p.send("sub", protocol.MethodSubscribe, map[string]any{"channel": e.uri})
	p.await("sub")
	for round := range 5 {
		writeFile(t, repo, "a.txt", fmt.Sprintf("a %d\n", round))
		writeFile(t, repo, "b.txt", fmt.Sprintf("b %d\n", round))
		// The view of this round: both files as written now, so computed
		// after the previous round's commit.
		wantA, wantB := strings.TrimSpace(e.git("hash-object", "a.txt")), strings.TrimSpace(e.git("hash-object", "b.txt"))
		shows := func(f *protocol.ChangesetFile, oid string) bool {
			return f != nil && f.Edit.After != nil && f.Edit.After.Content.Nonce == oid
		}
		e.m.Wait("both files changed", func(st protocol.ChangesetState) bool {
			o := opIn(st, "commit")
			return ready(st) && shows(findFile(st, repo, "a.txt"), wantA) && shows(findFile(st, repo, "b.txt"), wantB) && o != nil && o.Status != protocol.OpRunning
		})
		head := e.git("rev-parse", "HEAD")
		s, c := fmt.Sprintf("stage%d", round), fmt.Sprintf("commit%d", round)
		p.send(s, protocol.MethodInvokeChangesetOperation, map[string]any{"channel": e.uri, "operationId": "stage", "target": resTarget(e.id("a.txt"))})
		p.send(c, protocol.MethodInvokeChangesetOperation, map[string]any{"channel": e.uri, "operationId": "commit", "_meta": map[string]any{"message": fmt.Sprintf("round %d", round)}})
		got := p.await(s, c)
		if err := rpcErr(got[s]); err != nil {
			t.Fatalf("round %d: stage: %v", round, err)
		}
		if err := rpcErr(got[c]); err != nil {
			if got[c].Error.Code != protocol.CodeConflict || e.git("rev-parse", "HEAD") != head {
				t.Fatalf("round %d: commit: %v", round, err)
			}
			if staged := strings.Fields(e.git("diff", "--cached", "--name-only")); strings.Join(staged, ",") != "a.txt" {
				t.Fatalf("round %d: the commit was refused and %v is staged, want a.txt", round, staged)
			}
			git(t, repo, "commit", "-qm", fmt.Sprintf("round %d by hand", round))
			continue
		}
		files := strings.Fields(e.git("show", "--name-only", "--format=", "HEAD"))
		if strings.Join(files, ",") != "a.txt" {
			t.Fatalf("round %d: the commit records %v, want only the staged a.txt", round, files)
		}
		if st := e.git("status", "--porcelain", "--", "b.txt"); !strings.HasPrefix(st, " M") {
			t.Fatalf("round %d: b.txt is %q after the commit, want modified and unstaged", round, st)
		}
	}
}

// A connection has a bound on the requests it has in flight: past it a
// request is refused at once as overloaded (-32000, reason overloaded),
// while the others stay in flight. A request whose id is that of one in
// flight is refused (-32600, reason duplicateRequestId) and the first
// still answers. A revert held by the daemon's test gate keeps the
// requests in flight, and holds up no request sent after it.
func TestInFlightBoundAndDuplicateIDs(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "edited\n")
	d, at := startGated(t, t.TempDir(), repo, "kept")
	e := attachOps(t, d, repo)
	e.waitHas("a.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	p := dialPipeline(t, d, "flood")
	p.send("sub", protocol.MethodSubscribe, map[string]any{"channel": e.uri})
	p.await("sub")
	revert := map[string]any{"channel": e.uri, "operationId": "revert", "target": resTarget(e.id("a.txt"))}
	p.send("r0", protocol.MethodInvokeChangesetOperation, revert)
	waitFile(t, at, nil)

	// The same id again, while the revert holds it: refused, and only
	// once answered so far.
	p.send("r0", protocol.MethodPing, map[string]any{})
	dup := p.await("r0")["r0"]
	if dup.Error == nil || dup.Error.Code != protocol.CodeInvalidRequest || protocol.ReasonOf(dup.Error) != protocol.ReasonDuplicateRequestID {
		t.Fatalf("a duplicate in-flight id: %+v, want -32600 %s", dup.Error, protocol.ReasonDuplicateRequestID)
	}

	// The held revert holds up no later request: one queued behind it
	// is answered.
	p.send("later", protocol.MethodSubscribe, map[string]any{"channel": e.sess})
	if err := rpcErr(p.await("later")["later"]); err != nil {
		t.Fatalf("a subscribe sent after the held revert: %v", err)
	}

	// Joined to the held revert, each further identical invocation stays
	// in flight; the one past the bound is refused.
	for i := 1; i < maxInFlight; i++ {
		p.send(fmt.Sprintf("r%d", i), protocol.MethodInvokeChangesetOperation, revert)
	}
	p.send("over", protocol.MethodPing, map[string]any{})
	over := p.await("over")["over"]
	if over.Error == nil || over.Error.Code != protocol.CodeOverloaded || protocol.ReasonOf(over.Error) != protocol.ReasonOverloaded {
		t.Fatalf("request past the bound: %+v, want %d %s", over.Error, protocol.CodeOverloaded, protocol.ReasonOverloaded)
	}
	for _, id := range p.order() {
		if strings.HasPrefix(id, "r") && id != "r0" {
			t.Fatalf("%s answered while the revert it joined is held", id)
		}
	}
	if n := strings.Count(strings.Join(p.order(), ","), "r0"); n != 1 {
		t.Fatalf("r0 answered %d times while held, want once (the duplicate's refusal)", n)
	}
	d.kill(t)
}

// maxInFlight is the daemon's bound on the requests one connection has in
// flight (server.DefaultMaxInFlight).
const maxInFlight = 1024
