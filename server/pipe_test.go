package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/session"
)

// A connection over net.Pipe instead of TCP: its reads, writes and
// deadlines are channels and timers of the process, so it runs inside a
// synctest bubble, where time is fake and a test can let minutes pass in
// no time. The server end goes through ServeHTTP and the upgrade like any
// other connection.

// pipeResponse is the http.ResponseWriter of one request read off the
// server end of a pipe; the upgrade hijacks it.
type pipeResponse struct {
	conn     net.Conn
	br       *bufio.Reader
	header   http.Header
	hijacked bool
}

func (p *pipeResponse) Header() http.Header         { return p.header }
func (p *pipeResponse) Write(b []byte) (int, error) { return len(b), nil }
func (p *pipeResponse) WriteHeader(int)             {}

func (p *pipeResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	p.hijacked = true
	return p.conn, bufio.NewReadWriter(p.br, bufio.NewWriter(p.conn)), nil
}

// pipeServer is a Server over an empty Manager, reached over pipes.
type pipeServer struct {
	srv *Server
	m   *session.Manager
}

// startPipeServer starts a pipeServer with cfg (Token "t" if empty).
func startPipeServer(cfg Config) *pipeServer {
	if cfg.Token == "" {
		cfg.Token = "t"
	}
	m := session.NewManager(session.Options{})
	return &pipeServer{srv: New(cfg, m, nil), m: m}
}

// stop shuts the server down and fails on a Shutdown error.
func (s *pipeServer) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	s.m.Close()
}

// conns is the number of connections the server holds.
func (s *pipeServer) conns() int {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	return len(s.srv.conns)
}

// dial opens a connection over a pipe and returns its client, whose read
// loop is running. setup, if not nil, is called on the client's socket
// before the read loop starts (to set its ping handler, say).
func (s *pipeServer) dial(t *testing.T, setup func(ws *websocket.Conn)) *testClient {
	t.Helper()
	client, server := net.Pipe()
	go func() {
		br := bufio.NewReader(server)
		req, err := http.ReadRequest(br)
		if err != nil {
			server.Close()
			return
		}
		w := &pipeResponse{conn: server, br: br, header: http.Header{}}
		s.srv.ServeHTTP(w, req)
		if !w.hijacked {
			server.Close() // refused: the client's handshake fails
		}
	}()
	d := websocket.Dialer{
		NetDialContext:   func(context.Context, string, string) (net.Conn, error) { return client, nil },
		HandshakeTimeout: 10 * time.Second,
	}
	ws, _, err := d.Dial("ws://127.0.0.1/ahp?token="+s.srv.cfg.Token, nil)
	if err != nil {
		t.Fatalf("dial over a pipe: %v", err)
	}
	if setup != nil {
		setup(ws)
	}
	c := &testClient{ws: ws, changed: make(chan struct{}), done: make(chan struct{})}
	go c.readLoop()
	return c
}
