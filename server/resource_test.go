package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
)

// TestResourceReplyIsWhatEncodingJSONWrites: the reply assembled by hand
// is byte for byte the Response encoding/json would have produced.
func TestResourceReplyIsWhatEncodingJSONWrites(t *testing.T) {
	inputs := []string{"", "plain text\n", "quote \" backslash \\ <a href='x'>&</a>", "\x00\x01\b\f\n\r\t\x1f\x7f", "é ü 日本 \u2028 \u2029 😀"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		data := []byte(in)
		for _, text := range []bool{false, true} {
			res := protocol.ResourceReadResult{Encoding: "base64"}
			if text {
				if !utf8.ValidString(in) {
					continue // only valid UTF-8 is sent as text
				}
				res.Encoding, res.Data = "utf-8", in
			} else {
				res.Data = base64.StdEncoding.EncodeToString(data)
			}
			want, err := protocol.Response{ID: json.RawMessage("7"), Result: res}.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if got := encodeResourceReply(json.RawMessage("7"), data, text); !bytes.Equal(got, want) {
				t.Errorf("%q (text %v):\n got %s\nwant %s", in, text, got, want)
			}
		}
	}
}

// gatedReads stands in for the manager's reads: each waits for release,
// and the most in flight at once is recorded.
type gatedReads struct {
	mu       sync.Mutex
	inFlight int
	max      int
	arrived  chan struct{}
	release  chan struct{}
}

func newGatedReads() *gatedReads {
	return &gatedReads{arrived: make(chan struct{}, 1000), release: make(chan struct{})}
}

func (g *gatedReads) read(ctx context.Context, uri string, limit int64) ([]byte, error) {
	g.mu.Lock()
	g.inFlight++
	g.max = max(g.max, g.inFlight)
	g.mu.Unlock()
	g.arrived <- struct{}{}
	<-g.release
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return []byte("x"), nil
}

// awaitRead waits for one more read to start, failing the test when
// none does before ctx ends (reads served one after the other, say).
func (g *gatedReads) awaitRead(ctx context.Context, t *testing.T) {
	t.Helper()
	select {
	case <-g.arrived:
	case <-ctx.Done():
		g.mu.Lock()
		n := g.inFlight
		g.mu.Unlock()
		close(g.release) // let the reads in flight end, and the server stop
		t.Fatalf("no further read started (%d in flight): %v", n, ctx.Err())
	}
}

// pipelineReads sends n resourceReads without waiting and returns a
// function that waits for every answer.
func pipelineReads(t *testing.T, c *testClient, n int) func(ctx context.Context) error {
	t.Helper()
	for i := range n {
		if err := c.send(protocol.NewRequest(int64(1000+i), protocol.MethodResourceRead, map[string]any{"channel": protocol.RootURI, "uri": "file:///x"})); err != nil {
			t.Fatal(err)
		}
	}
	return func(ctx context.Context) error {
		return c.waitFor(ctx, "every read answered", func() bool {
			got := 0
			for _, m := range c.msgs {
				if m.Method == "" && len(m.ID) == 4 && m.ID[0] == '1' && m.Error == nil {
					got++
				}
			}
			return got == n
		})
	}
}

// TestResourceReadsInFlightAreBounded pipelines reads on one connection
// and then on many: no more than DefaultReadsPerConn run at once for one
// connection, and no more than DefaultReadsTotal for the server.
func TestResourceReadsInFlightAreBounded(t *testing.T) {
	s := startServer(t)
	defer s.stop(t)
	g := newGatedReads()
	s.srv.readResource = g.read
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	c, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := initialize(ctx, c, "reader"); err != nil {
		t.Fatal(err)
	}
	wait := pipelineReads(t, c, 12)
	for range DefaultReadsPerConn {
		g.awaitRead(ctx, t)
	}
	// Any read past the bound would now arrive too; a ping answered after
	// the reads were sent shows they were all taken in.
	if err := c.call(ctx, protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	if g.inFlight != DefaultReadsPerConn {
		t.Errorf("%d reads in flight on one connection, want %d", g.inFlight, DefaultReadsPerConn)
	}
	g.mu.Unlock()
	close(g.release)
	if err := wait(ctx); err != nil {
		t.Fatal(err)
	}
	if g.max != DefaultReadsPerConn {
		t.Errorf("at most %d reads in flight on one connection, want %d", g.max, DefaultReadsPerConn)
	}
	c.closeNormally(ctx)

	g = newGatedReads()
	s.srv.readResource = g.read
	var waits []func(context.Context) error
	var clients []*testClient
	for i := range 2 * DefaultReadsTotal / DefaultReadsPerConn {
		c, _, err := dial(ctx, s.ws+"?token=t", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := initialize(ctx, c, fmt.Sprintf("reader-%d", i)); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		waits = append(waits, pipelineReads(t, c, 3))
	}
	for range DefaultReadsTotal {
		g.awaitRead(ctx, t)
	}
	for _, c := range clients {
		if err := c.call(ctx, protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	if g.inFlight != DefaultReadsTotal {
		t.Errorf("%d reads in flight on the server, want %d", g.inFlight, DefaultReadsTotal)
	}
	g.mu.Unlock()
	close(g.release)
	for _, w := range waits {
		if err := w(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if g.max != DefaultReadsTotal {
		t.Errorf("at most %d reads in flight, want %d", g.max, DefaultReadsTotal)
	}
	for _, c := range clients {
		c.closeNormally(ctx)
	}
}

// TestResourceReadOverTheLimitIsRefused: content past the documented
// 64 MiB is refused with an error naming the limit, whatever returned it.
func TestResourceReadOverTheLimitIsRefused(t *testing.T) {
	s := startServer(t)
	defer s.stop(t)
	s.srv.readResource = func(ctx context.Context, uri string, limit int64) ([]byte, error) {
		return make([]byte, maxResourceBytes+1), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.closeNormally(ctx)
	if err := initialize(ctx, c, "reader"); err != nil {
		t.Fatal(err)
	}
	err = c.call(ctx, protocol.MethodResourceRead, map[string]any{"channel": protocol.RootURI, "uri": "ahp-session:/s/blob/" + strings.Repeat("a", 40)}, nil)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(maxResourceBytes)) || !strings.Contains(err.Error(), "-32602") {
		t.Errorf("reading %d bytes: %v, want invalid params naming the limit", maxResourceBytes+1, err)
	}
}

// TestClientIDsAreBoundedAndForgotten: an oversized clientId is refused
// naming the limit, and a client gone for longer than the grace period is
// no longer kept. It runs on a fake clock, which the server's own clock
// (time.Now) follows.
func TestClientIDsAreBoundedAndForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startPipeServer(Config{})
		defer s.stop(t)
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()

		c := s.dial(t, nil)
		for _, method := range []string{protocol.MethodInitialize, protocol.MethodReconnect} {
			err := c.call(ctx, method, map[string]any{"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": strings.Repeat("x", 1<<20), "lastSeenServerSeq": 0, "subscriptions": []string{}}, nil)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprint(MaxClientIDBytes)) {
				t.Errorf("%s with a 1 MiB clientId: %v, want a refusal naming %d", method, err, MaxClientIDBytes)
			}
		}
		if err := initialize(ctx, c, "gone"); err != nil {
			t.Fatal(err)
		}
		if err := c.closeNormally(ctx); err != nil {
			t.Fatal(err)
		}
		kept := func(id string) bool {
			s.srv.mu.Lock()
			defer s.srv.mu.Unlock()
			_, ok := s.srv.versions[id]
			return ok
		}
		// The entry is dropped when the connection's goroutine ends.
		synctest.Wait()
		if n := s.conns(); n != 0 {
			t.Fatalf("%d connections after the client closed", n)
		}
		if !kept("gone") {
			t.Fatal("a client that just left is not kept for its reconnect")
		}
		time.Sleep(clientGrace + 2*time.Minute)
		ctx, cancel = context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		c2 := s.dial(t, nil)
		defer c2.closeNormally(ctx)
		if err := initialize(ctx, c2, "later"); err != nil {
			t.Fatal(err)
		}
		if kept("gone") {
			t.Error("a client gone for longer than the grace period is still kept")
		}
	})
}

// TestShutdownFlushesRepliesInFlight: a read still running when Shutdown
// begins is answered, and its reply reaches the client before the close
// frame; a request that arrives while Shutdown waits is answered too.
func TestShutdownFlushesRepliesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startPipeServer(Config{})
		defer s.m.Close()
		g := newGatedReads()
		s.srv.readResource = g.read
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		c := s.dial(t, nil)
		if err := initialize(ctx, c, "reader"); err != nil {
			t.Fatal(err)
		}
		wait := pipelineReads(t, c, 1)
		<-g.arrived
		shut := make(chan error, 1)
		go func() { shut <- s.srv.Shutdown(ctx) }()
		synctest.Wait() // Shutdown has begun and waits for what it can
		s.srv.mu.Lock()
		closed := s.srv.closed
		s.srv.mu.Unlock()
		if !closed {
			t.Error("Shutdown has not begun")
		}
		select {
		case err := <-shut:
			t.Errorf("Shutdown returned with a read in flight: %v", err)
		default:
		}
		close(g.release)
		if err := wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-shut; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if err := c.ended(ctx); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("connection ended with %v, want 1001 after the reply", err)
		}
	})
}

// TestTrackerStartsRaceWithNothing: work may start while idle is being
// waited for, idle closes once it all ended, and stop refuses more.
func TestTrackerStartsRaceWithNothing(t *testing.T) {
	var tr tracker
	gate := make(chan struct{})
	idle := tr.idle() // nothing running yet
	<-idle
	started := make(chan struct{})
	for range 10 {
		go func() {
			tr.goFunc(func() { <-gate })
			started <- struct{}{}
		}()
	}
	waits := make(chan (<-chan struct{}), 1)
	go func() { waits <- tr.idle() }()
	for range 10 {
		<-started
	}
	w := tr.idle()
	select {
	case <-w:
		t.Fatal("idle with work running")
	default:
	}
	close(gate)
	<-w
	<-<-waits
	tr.stop()
	if tr.goFunc(func() {}) {
		t.Error("goFunc started work after stop")
	}
}

// TestResourceReplyInPiecesIsTheWhole: a reply encoded a piece at a time
// as it is written is the reply encoded at once, whatever the pieces'
// size, multi-byte characters and escapes across their edges included.
func TestResourceReplyInPiecesIsTheWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	texts := []string{strings.Repeat("é日😀\n\"<&", 300), strings.Repeat("x", 5000)}
	for range 20 {
		b := make([]byte, r.IntN(3000))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		texts = append(texts, string(b))
	}
	for _, in := range texts {
		data := []byte(in)
		for _, text := range []bool{false, true} {
			if text && !utf8.Valid(data) {
				continue
			}
			whole := encodeResourceReply(json.RawMessage("7"), data, text)
			for _, chunk := range []int{8, 13, 64, 1000} {
				var b bytes.Buffer
				if err := newResourceReply(json.RawMessage("7"), data, text).writeTo(&b, chunk, func() {}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b.Bytes(), whole) {
					t.Fatalf("in pieces of %d (text %v): %.200s…, want %.200s…", chunk, text, b.Bytes(), whole)
				}
			}
		}
	}
}
