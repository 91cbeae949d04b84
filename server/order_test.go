package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// gate is a method added to a test server's table: each call names
// itself on arrived, then waits for a value on release or for its
// connection to close.
type gate struct {
	arrived chan string
	release chan struct{}
}

const methodGate = "test/gate"

// startGateServer is startServer with cfg and the gate method.
func startGateServer(t *testing.T, cfg Config) (*testServer, *gate) {
	t.Helper()
	g := &gate{arrived: make(chan string, 16), release: make(chan struct{})}
	m := session.NewManager(session.Options{})
	cfg.Token = "t"
	srv := New(cfg, m, nil)
	srv.routes[methodGate] = route{serve: offLoop(func(c *conn, p struct{ Name string }) (any, error) {
		g.arrived <- p.Name
		select {
		case <-g.release:
			return p.Name, nil
		case <-c.ctx.Done():
			return nil, c.ctx.Err()
		}
	})}
	ts := httptest.NewServer(srv)
	return &testServer{srv: srv, m: m, ts: ts, ws: "ws" + strings.TrimPrefix(ts.URL, "http") + "/ahp"}, g
}

func (g *gate) next(ctx context.Context, t *testing.T) string {
	t.Helper()
	select {
	case n := <-g.arrived:
		return n
	case <-ctx.Done():
		t.Fatal("no gated call arrived")
		return ""
	}
}

// answers returns the responses c received so far, by id, and their ids
// in arrival order.
func (c *testClient) answers() (map[string]rpcMsg, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]rpcMsg{}
	var order []string
	for _, m := range c.msgs {
		if m.Method == "" && len(m.ID) > 0 {
			out[string(m.ID)] = m
			order = append(order, string(m.ID))
		}
	}
	return out, order
}

func (c *testClient) awaitAnswers(ctx context.Context, ids ...int) (map[string]rpcMsg, error) {
	var got map[string]rpcMsg
	err := c.waitFor(ctx, fmt.Sprintf("answers to %v", ids), func() bool {
		got = map[string]rpcMsg{}
		for _, m := range c.msgs {
			if m.Method == "" {
				got[string(m.ID)] = m
			}
		}
		for _, id := range ids {
			if _, ok := got[fmt.Sprint(id)]; !ok {
				return false
			}
		}
		return true
	})
	return got, err
}

func sendGate(t *testing.T, c *testClient, id int, name string) {
	t.Helper()
	if err := c.send(protocol.NewRequest(int64(id), methodGate, map[string]any{"channel": protocol.RootURI, "name": name})); err != nil {
		t.Fatal(err)
	}
}

// Requests of a connection start one after the other, in the order sent,
// each once the one before is done; a ping, preempted, is answered while
// they wait.
func TestQueuedRequestsStartInOrderAndPingOvertakes(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx := testCtx(t)
	s, g := startGateServer(t, Config{})
	c, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := initialize(ctx, c, "queue"); err != nil {
		t.Fatal(err)
	}
	sendGate(t, c, 10, "a")
	if n := g.next(ctx, t); n != "a" {
		t.Fatalf("first call %q", n)
	}
	sendGate(t, c, 11, "b")
	sendGate(t, c, 12, "c")
	if err := c.send(protocol.NewRequest(13, protocol.MethodPing, map[string]any{})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.awaitAnswers(ctx, 13); err != nil {
		t.Fatal(err)
	}
	// The ping was read after b and c: had they started on their own,
	// they would have arrived by now.
	select {
	case n := <-g.arrived:
		t.Fatalf("%s started while a was still running", n)
	default:
	}
	for _, want := range []string{"b", "c"} {
		g.release <- struct{}{}
		if n := g.next(ctx, t); n != want {
			t.Fatalf("started %q, want %q", n, want)
		}
	}
	g.release <- struct{}{}
	if _, err := c.awaitAnswers(ctx, 10, 11, 12); err != nil {
		t.Fatal(err)
	}
	_, order := c.answers()
	if want := []string{"1", "13", "10", "11", "12"}; !slices.Equal(order, want) {
		t.Errorf("answered %v, want %v", order, want)
	}
	if err := c.closeNormally(ctx); err != nil {
		t.Fatal(err)
	}
	s.stop(t)
	goleak.VerifyNone(t, ignore)
}

// A connection may have MaxInFlight requests in flight, queued ones
// included: the next is refused as overloaded, a duplicate id of one in
// flight is refused, and both leave the others to be answered.
func TestInFlightBoundAndDuplicateID(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx := testCtx(t)
	s, g := startGateServer(t, Config{MaxInFlight: 3})
	c, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := initialize(ctx, c, "bound"); err != nil {
		t.Fatal(err)
	}
	sendGate(t, c, 10, "a")
	g.next(ctx, t)
	sendGate(t, c, 11, "b")
	sendGate(t, c, 10, "dup")
	got, err := c.awaitAnswers(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if e := got["10"].Error; e == nil || e.Code != protocol.CodeInvalidRequest || protocol.ReasonOf(e) != protocol.ReasonDuplicateRequestID {
		t.Fatalf("duplicate id: %+v", e)
	}
	sendGate(t, c, 12, "c")
	if err := c.send(protocol.NewRequest(13, protocol.MethodPing, map[string]any{})); err != nil {
		t.Fatal(err)
	}
	got, err = c.awaitAnswers(ctx, 13)
	if err != nil {
		t.Fatal(err)
	}
	if e := got["13"].Error; e == nil || e.Code != protocol.CodeOverloaded || protocol.ReasonOf(e) != protocol.ReasonOverloaded {
		t.Fatalf("fourth request in flight: %+v", e)
	}
	for range 3 {
		g.release <- struct{}{}
	}
	for _, want := range []string{"b", "c"} {
		if n := g.next(ctx, t); n != want {
			t.Fatalf("started %q, want %q", n, want)
		}
	}
	if err := c.waitFor(ctx, "three gate answers", func() bool {
		n := 0
		for _, m := range c.msgs {
			var name string
			if json.Unmarshal(m.Result, &name) == nil && name != "" {
				n++
			}
		}
		return n == 3
	}); err != nil {
		t.Fatal(err)
	}
	// Answered, the requests are no longer in flight.
	if err := c.call(ctx, protocol.MethodPing, map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.closeNormally(ctx); err != nil {
		t.Fatal(err)
	}
	s.stop(t)
	goleak.VerifyNone(t, ignore)
}

// A connection that closes with requests queued behind a running one
// ends: the running one sees its context end, the queued ones are
// dropped, and no goroutine is left.
func TestCloseWithRequestsQueued(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx := testCtx(t)
	s, g := startGateServer(t, Config{})
	c, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := initialize(ctx, c, "closer"); err != nil {
		t.Fatal(err)
	}
	sendGate(t, c, 10, "a")
	g.next(ctx, t)
	for i := range 20 {
		sendGate(t, c, 11+i, fmt.Sprint("q", i))
	}
	if err := c.closeNormally(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitConns(ctx, s.srv, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-g.arrived:
		t.Errorf("%s started after its connection closed", n)
	default:
	}
	s.stop(t)
	goleak.VerifyNone(t, ignore)
}
