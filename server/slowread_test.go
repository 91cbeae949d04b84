package server

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"
)

// A client that takes its frames in slowly but steadily (a tunnelled
// remote editor at 300 KB/s) is never closed as one that reads nothing,
// however large a frame: the time a frame may take grows with its size.
// Only a client that reads nothing for WriteTimeout is closed, with 1008.
// Fake time: the pipe's reads and the writer's deadlines run in a
// synctest bubble.

// throttled reads at most chunk bytes per read, then waits as long as
// reading them at rate bytes per second takes.
type throttled struct {
	net.Conn
	chunk int
	rate  int // bytes per second
}

func (c *throttled) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p[:min(len(p), c.chunk)])
	time.Sleep(time.Duration(n) * time.Second / time.Duration(c.rate))
	return n, err
}

// streamOverPipe returns a stream whose peer is the client end of a pipe,
// wrapped by wrap.
func streamOverPipe(t *testing.T, cfg *Config, wrap func(net.Conn) net.Conn, closed func(int, string)) (*websocket.Conn, *stream) {
	t.Helper()
	client, server := net.Pipe()
	streams := make(chan *stream, 1)
	go func() {
		br := bufio.NewReader(server)
		req, err := http.ReadRequest(br)
		if err != nil {
			server.Close()
			return
		}
		w := &pipeResponse{conn: server, br: br, header: http.Header{}}
		ws, err := (&websocket.Upgrader{}).Upgrade(w, req, nil)
		if err != nil {
			server.Close()
			return
		}
		streams <- newStream(ws, cfg, closed)
	}()
	d := websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) { return wrap(client), nil }}
	ws, _, err := d.Dial("ws://127.0.0.1/ahp", nil)
	if err != nil {
		t.Fatalf("dial over a pipe: %v", err)
	}
	return ws, <-streams
}

func TestSlowSteadyReaderGetsALargeFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{}
		cfg.setDefaults()
		var code int
		var reason string
		client, s := streamOverPipe(t, &cfg, func(c net.Conn) net.Conn {
			return &throttled{Conn: c, chunk: 16 << 10, rate: 300_000}
		}, func(c int, r string) { code, reason = c, r })
		client.SetReadLimit(-1)
		// 6 MB: at 300 KB/s twenty seconds, twice the write timeout.
		big := []byte(`"` + strings.Repeat("x", 6<<20) + `"`)
		start := time.Now()
		if err := s.write(big); err != nil {
			t.Fatal(err)
		}
		s.write([]byte("after"))
		_, got, err := client.ReadMessage()
		if err != nil {
			t.Fatalf("the slow reader's connection ended after %v: %v (closed %d %q)", time.Since(start), err, code, reason)
		}
		if !bytes.Equal(got, big) {
			t.Fatalf("got %d bytes, want %d", len(got), len(big))
		}
		if took := time.Since(start); took < cfg.WriteTimeout {
			t.Fatalf("the frame took %v at 300 KB/s; the test means it to take longer than the write timeout %v", took, cfg.WriteTimeout)
		}
		if _, got, err = client.ReadMessage(); err != nil || string(got) != "after" {
			t.Fatalf("next frame %q, %v", got, err)
		}
		s.closeWith(websocket.CloseNormalClosure, "")
		client.ReadMessage()
		client.Close()
		<-s.done
	})
}

func TestReaderOfNothingIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{}
		cfg.setDefaults()
		closed := make(chan [2]any, 1)
		client, s := streamOverPipe(t, &cfg, func(c net.Conn) net.Conn { return c }, func(c int, r string) { closed <- [2]any{c, r} })
		start := time.Now()
		s.write([]byte(`"` + strings.Repeat("x", 1<<20) + `"`))
		got := <-closed // nothing is read: the write makes no progress
		if got[0] != websocket.ClosePolicyViolation || !strings.Contains(got[1].(string), "read nothing") {
			t.Errorf("closed with %v %q, want 1008 read nothing", got[0], got[1])
		}
		if took := time.Since(start); took < cfg.WriteTimeout {
			t.Errorf("closed after %v, before the write timeout %v", took, cfg.WriteTimeout)
		}
		client.Close()
		<-s.done
	})
}

// A client that is still taking in what it was sent long after the
// read timeout (a burst it is minutes behind on) is not closed as
// silent: taking our frames is a sign of life as good as a pong, which
// it only reaches once it has read what came before.
func TestSlowSteadyReaderOutlivesTheReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{}
		cfg.setDefaults()
		client, s := streamOverPipe(t, &cfg, func(c net.Conn) net.Conn {
			return &throttled{Conn: c, chunk: 16 << 10, rate: 300_000}
		}, nil)
		client.SetReadLimit(-1)
		readErr := make(chan error, 1)
		go func() {
			_, err := s.readRequest()
			readErr <- err
		}()
		// 36 MB: at 300 KB/s two minutes, past the 90 s read timeout.
		big := []byte(`"` + strings.Repeat("x", 36<<20) + `"`)
		start := time.Now()
		s.write(big)
		_, got, err := client.ReadMessage()
		if err != nil {
			t.Fatalf("the slow reader's connection ended after %v: %v", time.Since(start), err)
		}
		if len(got) != len(big) {
			t.Fatalf("got %d bytes, want %d", len(got), len(big))
		}
		if took := time.Since(start); took < cfg.ReadTimeout {
			t.Fatalf("the frame took %v; the test means it to take longer than the read timeout %v", took, cfg.ReadTimeout)
		}
		select {
		case err := <-readErr:
			t.Errorf("the server stopped reading the client while it was taking a frame in: %v", err)
			readErr <- err
		default:
		}
		s.closeWith(websocket.CloseNormalClosure, "")
		go func() {
			for {
				if _, _, err := client.ReadMessage(); err != nil {
					client.Close()
					return
				}
			}
		}()
		<-readErr
		<-s.done
	})
}
