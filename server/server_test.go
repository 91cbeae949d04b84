package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// waitLimit bounds every condition wait; it is a deadline for a hang, not
// a timing assertion.
const waitLimit = 30 * time.Second

// testServer is a Server over an empty Manager behind httptest.
type testServer struct {
	srv *Server
	m   *session.Manager
	ts  *httptest.Server
	ws  string // ws://host/ahp
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	m := session.NewManager(session.Options{})
	srv := New(Config{Token: "t"}, m, nil)
	ts := httptest.NewServer(srv)
	return &testServer{srv: srv, m: m, ts: ts, ws: "ws" + strings.TrimPrefix(ts.URL, "http") + "/ahp"}
}

// stop shuts everything down in order and fails on a Shutdown error.
func (s *testServer) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	s.m.Close()
	s.ts.Close()
}

// rpcMsg is one message received by a testClient.
type rpcMsg = protocol.RPCMessage

// testClient is a minimal JSON-RPC client over a gorilla WebSocket. Its
// read loop records every message and how the connection ended.
type testClient struct {
	ws      *websocket.Conn
	writeMu sync.Mutex

	mu      sync.Mutex
	msgs    []rpcMsg
	readErr error
	changed chan struct{} // closed and replaced on every change
	done    chan struct{}
	nextID  int
}

func dial(ctx context.Context, url string, h http.Header) (*testClient, *http.Response, error) {
	d := websocket.Dialer{HandshakeTimeout: waitLimit}
	ws, resp, err := d.DialContext(ctx, url, h)
	if err != nil {
		return nil, resp, err
	}
	c := &testClient{ws: ws, changed: make(chan struct{}), done: make(chan struct{})}
	go c.readLoop()
	return c, resp, nil
}

func (c *testClient) readLoop() {
	defer close(c.done)
	for {
		_, data, err := c.ws.ReadMessage()
		c.mu.Lock()
		if err != nil {
			c.readErr = err
		} else {
			var m rpcMsg
			if jerr := json.Unmarshal(data, &m); jerr != nil {
				c.readErr = fmt.Errorf("undecodable frame %q: %w", data, jerr)
				err = c.readErr
			} else {
				c.msgs = append(c.msgs, m)
			}
		}
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// waitFor waits until cond (called with c.mu held) holds or the deadline
// passes.
func (c *testClient) waitFor(ctx context.Context, what string, cond func() bool) error {
	for {
		c.mu.Lock()
		ok, ch, rerr := cond(), c.changed, c.readErr
		c.mu.Unlock()
		if ok {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("waiting for %s: connection ended: %w", what, rerr)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

func (c *testClient) send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.sendRaw(data)
}

func (c *testClient) sendRaw(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// call sends a request and waits for its answer.
func (c *testClient) call(ctx context.Context, method string, params any, result any) error {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	if err := c.send(protocol.NewRequest(int64(id), method, params)); err != nil {
		return fmt.Errorf("%s: send: %w", method, err)
	}
	want := fmt.Sprint(id)
	var got rpcMsg
	err := c.waitFor(ctx, method+" answer", func() bool {
		for _, m := range c.msgs {
			if m.Method == "" && string(m.ID) == want {
				got = m
				return true
			}
		}
		return false
	})
	if err != nil {
		return err
	}
	if got.Error != nil {
		return fmt.Errorf("%s: rpc error %d: %s", method, got.Error.Code, got.Error.Message)
	}
	if result != nil {
		return json.Unmarshal(got.Result, result)
	}
	return nil
}

// notifications returns the notifications with the method received so far.
func (c *testClient) notifications(method string) []rpcMsg {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []rpcMsg
	for _, m := range c.msgs {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// closeNormally sends a close frame, waits for the server's and closes the
// socket.
func (c *testClient) closeNormally(ctx context.Context) error {
	c.writeMu.Lock()
	err := c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(waitLimit))
	c.writeMu.Unlock()
	if err != nil {
		c.ws.Close()
		return err
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		c.ws.Close()
		return fmt.Errorf("no close frame from the server: %w", ctx.Err())
	}
	return c.ws.Close()
}

// ended waits for the read loop to finish and returns why it did.
func (c *testClient) ended(ctx context.Context) error {
	select {
	case <-c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

func initialize(ctx context.Context, c *testClient, clientID string) error {
	var res protocol.InitializeResult
	if err := c.call(ctx, protocol.MethodInitialize, map[string]any{
		"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": clientID,
	}, &res); err != nil {
		return err
	}
	if res.ProtocolVersion != "1.0.0" {
		return fmt.Errorf("negotiated %q", res.ProtocolVersion)
	}
	return nil
}

func subscribeRoot(ctx context.Context, c *testClient) error {
	var res struct {
		Snapshot *struct {
			Resource string          `json:"resource"`
			State    json.RawMessage `json:"state"`
		} `json:"snapshot"`
	}
	if err := c.call(ctx, protocol.MethodSubscribe, map[string]any{"channel": protocol.RootURI}, &res); err != nil {
		return err
	}
	if res.Snapshot == nil || res.Snapshot.Resource != protocol.RootURI || len(res.Snapshot.State) == 0 {
		return fmt.Errorf("subscribe root: bad snapshot %+v", res.Snapshot)
	}
	return nil
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// TestConcurrentClients: 50 clients connect at once, initialize, subscribe
// to the root channel, ping and close; then the server shuts down without
// leaking goroutines.
func TestConcurrentClients(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx := testCtx(t)
	s := startServer(t)

	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				c, _, err := dial(ctx, s.ws+"?token=t", nil)
				if err != nil {
					return fmt.Errorf("client %d: dial: %w", i, err)
				}
				if err := initialize(ctx, c, fmt.Sprintf("client-%d", i)); err != nil {
					c.ws.Close()
					return fmt.Errorf("client %d: %w", i, err)
				}
				if err := subscribeRoot(ctx, c); err != nil {
					c.ws.Close()
					return fmt.Errorf("client %d: %w", i, err)
				}
				if err := c.call(ctx, protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
					c.ws.Close()
					return fmt.Errorf("client %d: %w", i, err)
				}
				if err := c.closeNormally(ctx); err != nil {
					return fmt.Errorf("client %d: close: %w", i, err)
				}
				if err := c.ended(ctx); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
					return fmt.Errorf("client %d: connection ended with %v, want a 1000 close", i, err)
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	s.stop(t)
	goleak.VerifyNone(t, ignore)
}

// TestShutdownSendsGoingAway: a client connected when Shutdown runs gets a
// 1001 close frame; later upgrades are refused.
func TestShutdownSendsGoingAway(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx := testCtx(t)
	s := startServer(t)

	c, _, err := dial(ctx, s.ws, http.Header{"Authorization": {"Bearer t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.ws.Close()
	if err := initialize(ctx, c, "going-away"); err != nil {
		t.Fatal(err)
	}
	if err := subscribeRoot(ctx, c); err != nil {
		t.Fatal(err)
	}
	idle, _, err := dial(ctx, s.ws+"?token=t", nil) // connected, never initialized
	if err != nil {
		t.Fatal(err)
	}
	defer idle.ws.Close()
	// Both connections must be registered before Shutdown: one upgraded
	// while Shutdown runs is TestShutdownRacingUpgrade's subject.
	if err := waitConns(ctx, s.srv, 2); err != nil {
		t.Fatal(err)
	}

	sctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	for name, cl := range map[string]*testClient{"initialized": c, "idle": idle} {
		err := cl.ended(ctx)
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
			t.Errorf("%s client: connection ended with %v, want a 1001 close frame", name, err)
		} else if ce.Text == "" {
			t.Errorf("%s client: 1001 close without a reason", name)
		}
	}
	_, resp, err := dial(ctx, s.ws+"?token=t", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("upgrade after Shutdown: err %v, response %v; want 503", err, status(resp))
	}
	c.ws.Close()
	idle.ws.Close()
	s.m.Close()
	s.ts.Close()
	goleak.VerifyNone(t, ignore)
}

// waitConns waits until the server tracks n connections.
func waitConns(ctx context.Context, srv *Server, n int) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		srv.mu.Lock()
		got := len(srv.conns)
		srv.mu.Unlock()
		if got == n {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("server tracks %d connections, want %d: %w", got, n, ctx.Err())
		}
	}
}

// TestShutdownRacingUpgrade pins a bug: a connection whose upgrade
// completes while Shutdown runs is refused with a 1001 close frame from
// serveAHP's "s.closed" branch, but it is not in s.wg, so Shutdown returns
// without waiting for it, and nothing ever reads from it, so its writer
// waits the full closeGrace (2s) for a readDone that never comes before it
// closes the socket. Its writeLoop goroutine outlives Shutdown. The window
// is between the upgrader writing the 101 response and serveAHP taking
// s.mu; the test retries until it hits it (it usually does within a few
// rounds under -race).
func TestShutdownRacingUpgrade(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx := testCtx(t)
	for round := 0; round < 40; round++ {
		s := startServer(t)
		c, _, err := dial(ctx, s.ws+"?token=t", nil)
		if err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		err = s.srv.Shutdown(sctx)
		cancel()
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		// Shutdown has returned: no connection writer may still be
		// waiting. A writer that has closed its done channel may still be
		// unwinding, so look a few times before calling it a leak.
		var leaked []string
		for try := 0; try < 50; try++ {
			leaked = leaked[:0]
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			for _, g := range strings.Split(stacks, "\n\n") {
				if strings.Contains(g, "server.(*stream).writeLoop") && !strings.Contains(g, "[runnable]") {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 {
				break
			}
			runtime.Gosched()
		}
		c.ws.Close()
		<-c.done
		s.m.Close()
		s.ts.Close()
		if len(leaked) > 0 {
			t.Errorf("round %d: Shutdown returned while a connection's writer still runs:\n%s", round, leaked[0])
			break
		}
	}
	goleak.VerifyNone(t, ignore)
}

func status(resp *http.Response) any {
	if resp == nil {
		return nil
	}
	return resp.StatusCode
}

// TestUpgradeRefused: no or a wrong token is 401; a foreign Origin or Host
// is 403.
func TestUpgradeRefused(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx := testCtx(t)
	s := startServer(t)

	for _, tc := range []struct {
		name   string
		query  string
		header http.Header
		want   int
	}{
		{"no token", "", nil, http.StatusUnauthorized},
		{"wrong token", "?token=x", nil, http.StatusUnauthorized},
		{"wrong bearer", "", http.Header{"Authorization": {"Bearer tt"}}, http.StatusUnauthorized},
		{"token without Bearer", "", http.Header{"Authorization": {"t"}}, http.StatusUnauthorized},
		{"foreign origin", "?token=t", http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"null origin", "?token=t", http.Header{"Origin": {"null"}}, http.StatusForbidden},
		{"foreign host", "?token=t", http.Header{"Host": {"attacker.example"}}, http.StatusForbidden},
		{"ok query", "?token=t", nil, http.StatusSwitchingProtocols},
		{"ok bearer and loopback origin", "", http.Header{"Authorization": {"Bearer t"}, "Origin": {"http://localhost:5173"}}, http.StatusSwitchingProtocols},
	} {
		c, resp, err := dial(ctx, s.ws+tc.query, tc.header)
		if resp == nil {
			t.Errorf("%s: no response: %v", tc.name, err)
			continue
		}
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d (err %v)", tc.name, resp.StatusCode, tc.want, err)
		}
		if tc.want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
		if c != nil {
			if err := c.closeNormally(ctx); err != nil {
				t.Errorf("%s: close: %v", tc.name, err)
			}
		}
	}
	s.stop(t)
	goleak.VerifyNone(t, ignore)
}

// TestCreateAndDisposeSession: a session over a plain directory is
// announced to root subscribers when it is ready and its removal when it
// is disposed.
func TestCreateAndDisposeSession(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx := testCtx(t)
	s := startServer(t)

	root, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer root.ws.Close()
	if err := initialize(ctx, root, "root-watcher"); err != nil {
		t.Fatal(err)
	}
	if err := subscribeRoot(ctx, root); err != nil {
		t.Fatal(err)
	}
	actor, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer actor.ws.Close()
	if err := initialize(ctx, actor, "actor"); err != nil {
		t.Fatal(err)
	}

	const uri = "ahp-session:/plain-dir"
	dir := t.TempDir()
	if err := actor.call(ctx, protocol.MethodCreateSession, map[string]any{
		"channel": uri, "workingDirectories": []string{session.FileURI(dir)},
	}, nil); err != nil {
		t.Fatal(err)
	}
	var added protocol.SessionAddedParams
	if err := root.waitFor(ctx, "root/sessionAdded", func() bool {
		for _, m := range root.msgs {
			if m.Method == protocol.NotifySessionAdded && json.Unmarshal(m.Params, &added) == nil && added.Summary.Resource == uri {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if added.Channel != protocol.RootURI || added.Summary.Provider != session.Provider {
		t.Errorf("sessionAdded: %+v", added)
	}
	var listed protocol.ListSessionsResult
	if err := actor.call(ctx, protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed.Items) != 1 || listed.Items[0].Resource != uri {
		t.Errorf("listSessions: %+v", listed.Items)
	}

	if err := actor.call(ctx, protocol.MethodDisposeSession, map[string]any{"channel": uri}, nil); err != nil {
		t.Fatal(err)
	}
	if err := root.waitFor(ctx, "root/sessionRemoved", func() bool {
		for _, m := range root.msgs {
			var p protocol.SessionRemovedParams
			if m.Method == protocol.NotifySessionRemoved && json.Unmarshal(m.Params, &p) == nil && p.Session == uri {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	// Added exactly once, and before removed.
	if n := len(root.notifications(protocol.NotifySessionAdded)); n != 1 {
		t.Errorf("%d sessionAdded notifications, want 1", n)
	}
	root.mu.Lock()
	addedAt, removedAt := -1, -1
	for i, m := range root.msgs {
		switch m.Method {
		case protocol.NotifySessionAdded:
			addedAt = i
		case protocol.NotifySessionRemoved:
			removedAt = i
		}
	}
	root.mu.Unlock()
	if addedAt > removedAt {
		t.Errorf("sessionRemoved (message %d) before sessionAdded (message %d)", removedAt, addedAt)
	}
	if err := actor.call(ctx, protocol.MethodDisposeSession, map[string]any{"channel": uri}, nil); err == nil || !strings.Contains(err.Error(), fmt.Sprint(protocol.CodeSessionNotFound)) {
		t.Errorf("second dispose: %v, want %d", err, protocol.CodeSessionNotFound)
	}

	for _, c := range []*testClient{root, actor} {
		if err := c.closeNormally(ctx); err != nil {
			t.Error(err)
		}
	}
	s.stop(t)
	goleak.VerifyNone(t, ignore)
}

// TestLibraryRejectedFrameKeepsConnection is the end-to-end form of
// TestValidateAcceptsFramesTheLibraryRejects: a frame validate passes but
// the jsonrpc2 decoder rejects must not end the connection.
func TestLibraryRejectedFrameKeepsConnection(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx := testCtx(t)
	s := startServer(t)

	for _, frame := range []string{
		// Ids other than the client's own, whose answers would otherwise be
		// taken for the ping's.
		`{"jsonrpc":"2.0","id":91,"method":"ping","result":null}`,
		`{"jsonrpc":"2.0","id":-1,"result":1}`,
		"\v{\"jsonrpc\":\"2.0\",\"id\":92,\"method\":\"ping\"}",
	} {
		c, _, err := dial(ctx, s.ws+"?token=t", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.sendRaw([]byte(frame)); err != nil {
			t.Fatal(err)
		}
		// Requests are handled in order: the ping is the barrier.
		if err := c.call(ctx, protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
			t.Errorf("after %s the connection is unusable: %v", frame, err)
			c.ws.Close()
			continue
		}
		if err := c.closeNormally(ctx); err != nil {
			t.Error(err)
		}
	}
	s.stop(t)
	goleak.VerifyNone(t, ignore)
}
