package ahpclient

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/server"
	"github.com/changesetd/changesetd/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// daemon is the real transport over an empty session manager; it returns
// the ws:// URL of its AHP endpoint.
func daemon(t *testing.T) string {
	t.Helper()
	m := session.NewManager(session.Options{})
	srv := server.New(server.Config{Token: "t"}, m, nil)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(c); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		m.Close()
		ts.Close()
	})
	return "ws" + strings.TrimPrefix(ts.URL, "http") + "/ahp"
}

func TestDialSendsTokenAndOrigin(t *testing.T) {
	url := daemon(t)
	if _, resp, err := Dial(ctx(t), url, Options{}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %v, %v; want HTTP 401", err, resp)
	}
	if _, resp, err := Dial(ctx(t), url, Options{Token: "t", Origin: "https://elsewhere.example"}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("with a foreign Origin: %v, %v; want HTTP 403", err, resp)
	}
	c, _, err := Dial(ctx(t), url, Options{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Initialize(ctx(t), "client-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != "1.0.0" {
		t.Errorf("protocolVersion %q, want 1.0.0", res.ProtocolVersion)
	}
}

func TestCallsAreMatchedToTheirResponses(t *testing.T) {
	c, _, err := Dial(ctx(t), daemon(t)+"?token=t", Options{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx(t), "client-test", nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			var list protocol.ListSessionsResult
			errs <- c.Call(ctx(t), protocol.MethodListSessions, protocol.ListSessionsParams{BaseParams: protocol.BaseParams{Channel: protocol.RootURI}}, &list)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	err = c.Call(ctx(t), "noSuchMethod", map[string]any{"channel": protocol.RootURI}, nil)
	if _, ok := errors.AsType[*RPCError](err); !ok {
		t.Errorf("an unknown method: %v, want an *RPCError", err)
	}
	if s := c.Stray(); len(s) != 0 {
		t.Errorf("responses matched no call: %v", s)
	}
	if got := len(c.Sent()); got != 22 {
		t.Errorf("%d frames sent, want 22", got)
	}
}

func TestSubscribeAndUnsubscribe(t *testing.T) {
	c, _, err := Dial(ctx(t), daemon(t), Options{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx(t), "client-test", nil); err != nil {
		t.Fatal(err)
	}
	snap, err := c.Subscribe(ctx(t), protocol.RootURI, nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Resource != protocol.RootURI || len(snap.State) == 0 {
		t.Errorf("snapshot %+v, want the root's state", snap)
	}
	if err := c.Unsubscribe(ctx(t), protocol.RootURI); err != nil {
		t.Fatal(err)
	}
}

func TestCloseEndsCallsAndWaits(t *testing.T) {
	c, _, err := Dial(ctx(t), daemon(t), Options{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx(t), "client-test", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c.Close() // twice is fine
	select {
	case <-c.Done():
	default:
		t.Fatal("Close returned before the reader ended")
	}
	if err := c.Call(ctx(t), protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err == nil {
		t.Error("a call after Close succeeded")
	}
}

func TestShutdownEndsOnTheDaemonsClose(t *testing.T) {
	var ended error
	done := make(chan struct{})
	c, _, err := Dial(ctx(t), daemon(t), Options{Token: "t", OnClose: func(err error) { ended = err; close(done) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Shutdown(time.Minute)
	select {
	case <-done:
	case <-ctx(t).Done():
		t.Fatal("the daemon did not answer the close")
	}
	if ce, ok := errors.AsType[*CloseError](ended); !ok || ce.Code != CloseNormalClosure {
		t.Errorf("ended with %v, want the daemon's normal close", ended)
	}
}

// script is a WebSocket peer that, for each request, first writes the
// notifications notes(n) (n counts requests from 1), then the response,
// then after(n).
func script(t *testing.T, before, after func(n int) []string) string {
	t.Helper()
	var wg sync.WaitGroup
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		wg.Add(1)
		defer wg.Done()
		defer ws.Close()
		for n := 1; ; n++ {
			var req protocol.RPCMessage
			if ws.ReadJSON(&req) != nil {
				return
			}
			for _, m := range before(n) {
				ws.WriteMessage(websocket.TextMessage, []byte(m))
			}
			ws.WriteJSON(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{}})
			for _, m := range after(n) {
				ws.WriteMessage(websocket.TextMessage, []byte(m))
			}
		}
	}))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close(); wg.Wait() })
	return "ws" + strings.TrimPrefix(ts.URL, "http")
}

func note(s string) string {
	b, _ := json.Marshal(protocol.NewNotification("action", map[string]any{"channel": s}))
	return string(b)
}

func channelOf(m *Message) string {
	var p struct{ Channel string }
	_ = json.Unmarshal(m.Params, &p)
	return p.Channel
}

// TestNotificationsGoToTheirTaker pins who sees a notification: the hook
// of the call it arrived during (none: dropped), else the listener, else
// the queue, which the next call's hook or the listener takes first.
func TestNotificationsGoToTheirTaker(t *testing.T) {
	url := script(t,
		func(n int) []string { return []string{note("before-" + string(rune('0'+n)))} },
		func(n int) []string { return []string{note("after-" + string(rune('0'+n)))} })
	c, _, err := Dial(ctx(t), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	take := func(m *Message) { got = append(got, channelOf(m)) }
	if err := c.Call(ctx(t), "one", nil, nil); err != nil { // before-1 dropped
		t.Fatal(err)
	}
	if err := c.CallNotes(ctx(t), "two", nil, nil, take); err != nil { // after-1 queued
		t.Fatal(err)
	}
	if want := []string{"after-1", "before-2"}; !equal(got, want) {
		t.Fatalf("the second call's hook saw %v, want %v", got, want)
	}
	seen := make(chan string, 10)
	next := func() string {
		select {
		case ch := <-seen:
			return ch
		case <-ctx(t).Done():
			t.Fatal("the listener saw nothing")
			return ""
		}
	}
	c.Listen(func(m *Message) { seen <- channelOf(m) }) // after-2, queued or not yet come
	if got := next(); got != "after-2" {
		t.Fatalf("the listener saw %s first, want after-2", got)
	}
	if err := c.Call(ctx(t), "three", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "after-3" {
		t.Errorf("the listener saw %s, want after-3 (before-3 belongs to the call)", got)
	}
}

func equal(a, b []string) bool { return strings.Join(a, "|") == strings.Join(b, "|") }

// TestShutdownWhileClosing: a planned disconnect from one goroutine and
// the owner's Close from another, as the load program does them.
func TestShutdownWhileClosing(t *testing.T) {
	url := daemon(t)
	for range 20 {
		c, _, err := Dial(ctx(t), url, Options{Token: "t"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { c.Shutdown(time.Minute) })
		c.Close()
		wg.Wait()
		c.Close()
	}
}

func TestDialAsksProxy(t *testing.T) {
	asked := false
	c, _, err := Dial(ctx(t), daemon(t), Options{Token: "t", Proxy: func(r *http.Request) (*neturl.URL, error) {
		asked = r.URL.Path == "/ahp"
		return nil, nil // direct after all
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !asked {
		t.Error("the dialer did not consult Proxy for /ahp")
	}
}

func TestDialThroughNetDialContext(t *testing.T) {
	url := daemon(t)
	var dialled string
	c, _, err := Dial(ctx(t), url, Options{Token: "t", NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialled = addr
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx(t), "piped", nil); err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/ahp"); dialled != want {
		t.Errorf("NetDialContext dialled %q, want %q", dialled, want)
	}
}
