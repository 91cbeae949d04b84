package main

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/changesetd/changesetd/ahpclient"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/server"
	"github.com/changesetd/changesetd/session"
)

// pipeResponse is the http.ResponseWriter of a request read off the
// server end of a net.Pipe; the WebSocket upgrade hijacks it. A pipe's
// reads, writes and deadlines run inside a synctest bubble, a TCP
// socket's do not.
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

// dialPipe connects to h over a pipe, as a client of /ahp with token.
func dialPipe(t *testing.T, h http.Handler, token string) *ahpclient.Client {
	t.Helper()
	client, srv := net.Pipe()
	go func() {
		br := bufio.NewReader(srv)
		req, err := http.ReadRequest(br)
		if err != nil {
			srv.Close()
			return
		}
		w := &pipeResponse{conn: srv, br: br, header: http.Header{}}
		h.ServeHTTP(w, req)
		if !w.hijacked {
			srv.Close()
		}
	}()
	c, _, err := ahpclient.Dial(context.Background(), "ws://127.0.0.1/ahp", ahpclient.Options{
		Token:          token,
		Record:         true,
		NetDialContext: func(context.Context, string, string) (net.Conn, error) { return client, nil },
	})
	if err != nil {
		t.Fatalf("dial over a pipe: %v", err)
	}
	return c
}

// TestShutdownStepsHaveBudgetsOfTheirOwn runs the daemon's graceful stop
// on a fake clock, with a resourceRead in flight: stopping to accept and
// draining each take almost their whole budget, and the read answers
// only after both. The last step, closing the connections, still gets a
// full budget, so the read's reply reaches the client before the close
// frame. With one budget shared by the steps, the connections would be
// closed when it ran out, the reply dropped.
func TestShutdownStepsHaveBudgetsOfTheirOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget = shutdownStepBudget
		arrived, release := make(chan struct{}, 1), make(chan struct{})
		m := session.NewManager(session.Options{
			ReadFile: func(uri, path string, limit int64, _ func(string) (string, string, bool)) ([]byte, error) {
				arrived <- struct{}{}
				<-release
				return []byte("answered while stopping"), nil
			},
		})
		defer m.Close()
		srv := server.New(server.Config{Token: "t"}, m, nil)

		c := dialPipe(t, srv, "t")
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := c.Initialize(ctx, "reader", nil); err != nil {
			t.Fatal(err)
		}
		// The read is sent, not called: its reply, if it comes, is a
		// response no call waits for (Stray).
		if err := c.Send(protocol.NewRequest(2, protocol.MethodResourceRead, map[string]any{"channel": protocol.RootURI, "uri": "file:///tmp/x"})); err != nil {
			t.Fatal(err)
		}
		<-arrived

		// Each step records the budget it was given.
		var budgets []time.Duration
		given := func(ctx context.Context) {
			d, _ := ctx.Deadline()
			budgets = append(budgets, time.Until(d))
		}
		slow := func(ctx context.Context) error {
			given(ctx)
			select {
			case <-time.After(budget - time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		start := time.Now()
		released := make(chan struct{})
		go func() {
			defer close(released)
			time.Sleep(2*budget + budget/2) // the read answers in the last step
			close(release)
		}()
		defer func() { <-released }() // a failed run ends with the read answered too
		stopGracefully(log, budget,
			slow,
			func(ctx context.Context) error {
				if err := slow(ctx); err != nil {
					return err
				}
				return m.Drain(ctx)
			},
			func(ctx context.Context) error {
				given(ctx)
				return srv.Shutdown(ctx)
			})
		took := time.Since(start)

		if len(budgets) != 3 {
			t.Errorf("%d steps ran, want 3", len(budgets))
		}
		for i, b := range budgets {
			if b != budget {
				t.Errorf("step %d was given %v, want a budget of its own, %v", i+1, b, budget)
			}
		}
		if strings.Contains(logs.String(), "level=WARN") {
			t.Errorf("a step ran out of time:\n%s", logs.String())
		}
		synctest.Wait() // the client's read loop sees the close
		ended, code, _ := c.Closed()
		if !ended {
			t.Errorf("the connection is still open after stopping (%v)", took)
		}
		var reply *ahpclient.Message
		for _, msg := range c.Stray() {
			if string(msg.ID) == "2" {
				reply = &msg
			}
		}
		if reply == nil || reply.Error != nil || !strings.Contains(string(reply.Result), "answered while stopping") {
			t.Errorf("the read in flight was not answered before the close: %+v (stopping took %v)", reply, took)
		}
		if code != ahpclient.CloseGoingAway {
			t.Errorf("connection ended with code %d (%v), want 1001", code, c.Err())
		}
		if want := 2*budget + budget/2; took < want || took >= 3*budget {
			t.Errorf("stopping took %v, want from %v (when the read answered) to under three budgets", took, want)
		}
	})
}
