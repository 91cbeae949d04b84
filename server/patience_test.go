package server

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"
)

// counted counts the bytes its reads return.
type counted struct {
	net.Conn
	n *atomic.Int64
}

func (c counted) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A client that takes its frames far more slowly than one write's piece
// per write timeout — as a steady reader does whenever the kernel wakes
// the daemon's blocked write only once megabytes of the socket's buffers
// have drained — is not closed as one that reads nothing: each time the
// deadline passes the peer has acknowledged more, and the write goes on.
// A connection whose peer acknowledges nothing is still closed at the
// deadline (TestReaderOfNothingIsClosedOverACorkedConn). Fake time.
func TestReaderSlowerThanAPiecePerTimeoutIsNotClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{}
		cfg.setDefaults()
		var code int
		var reason string
		var read atomic.Int64
		client, s := corkedStreamOverPipe(t, &cfg, &read, func(c net.Conn) net.Conn {
			// 2 KB/s: one 64 KiB piece takes half a minute, three write timeouts.
			return counted{&throttled{Conn: c, chunk: 1 << 10, rate: 2000}, &read}
		}, func(c int, r string) { code, reason = c, r })
		client.SetReadLimit(-1)
		big := []byte(`"` + strings.Repeat("x", 150<<10) + `"`)
		start := time.Now()
		if err := s.write(big); err != nil {
			t.Fatal(err)
		}
		_, got, err := client.ReadMessage()
		if err != nil {
			t.Fatalf("the slow reader's connection ended after %v: %v (closed %d %q)", time.Since(start), err, code, reason)
		}
		if !bytes.Equal(got, big) {
			t.Fatalf("got %d bytes, want %d", len(got), len(big))
		}
		s.closeWith(websocket.CloseNormalClosure, "")
		client.ReadMessage()
		client.Close()
		<-s.done
	})
}

func TestReaderOfNothingIsClosedOverACorkedConn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{}
		cfg.setDefaults()
		closed := make(chan [2]any, 1)
		var read atomic.Int64
		client, s := corkedStreamOverPipe(t, &cfg, &read, func(c net.Conn) net.Conn { return counted{c, &read} }, func(c int, r string) { closed <- [2]any{c, r} })
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

// corkedStreamOverPipe is streamOverPipe with the server's end a
// corkConn, which learns what the peer took (its acknowledgements, on a
// TCP connection) from read: the bytes the client end has read.
func corkedStreamOverPipe(t *testing.T, cfg *Config, read *atomic.Int64, wrap func(net.Conn) net.Conn, closed func(int, string)) (*websocket.Conn, *stream) {
	t.Helper()
	client, server := net.Pipe()
	cc := &corkConn{Conn: server}
	cc.outq = func() (int64, bool) { return cc.written.Load() - read.Load(), true }
	streams := make(chan *stream, 1)
	go func() {
		br := bufio.NewReader(server)
		req, err := http.ReadRequest(br)
		if err != nil {
			server.Close()
			return
		}
		w := &pipeResponse{conn: cc, br: br, header: http.Header{}}
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
