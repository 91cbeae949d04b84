package server

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"
)

// Keepalive on a fake clock: the server pings every PingInterval, a pong
// (or any frame) extends its read deadline by ReadTimeout, and a peer that
// goes silent is closed once ReadTimeout has passed since it was last
// heard from. The connections run over pipes inside a synctest bubble, so
// hours pass in no time and every instant is exact.

// pinger is a client's ping handler that records when each ping came and
// answers it, until silence is set.
type pinger struct {
	ws    *websocket.Conn
	start time.Time

	mu      sync.Mutex
	pings   []time.Duration // since start
	silence bool            // stop answering
}

func (p *pinger) handle(data string) error {
	p.mu.Lock()
	p.pings = append(p.pings, time.Since(p.start))
	silent := p.silence
	p.mu.Unlock()
	if silent {
		return nil
	}
	err := p.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	if errors.Is(err, websocket.ErrCloseSent) {
		return nil
	}
	return err
}

// until sleeps until d after p started, then lets every goroutine of the
// bubble do what is due.
func (p *pinger) until(d time.Duration) {
	time.Sleep(time.Until(p.start.Add(d)))
	synctest.Wait()
}

func (p *pinger) setSilence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silence = true
}

func (p *pinger) times() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.pings...)
}

// dialPinger connects a client whose pings p records and answers.
func dialPinger(t *testing.T, s *pipeServer) (*testClient, *pinger) {
	p := &pinger{start: time.Now()}
	c := s.dial(t, func(ws *websocket.Conn) {
		p.ws = ws
		ws.SetPingHandler(p.handle)
	})
	return c, p
}

// readErr is why the client's read loop ended, or nil while it runs.
func (c *testClient) readErrNow() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// keepaliveConfig is a PingInterval and a ReadTimeout (zero: the
// default).
type keepaliveConfig struct {
	name              string
	ping, readTimeout time.Duration
}

// keepaliveConfigs are the defaults and a configuration of its own, so
// the tests show the values are the configured ones.
var keepaliveConfigs = []keepaliveConfig{
	{"defaults", 0, 0},
	{"configured", 7 * time.Second, 20 * time.Second},
}

// effective returns the values the server runs with.
func (kc keepaliveConfig) effective() (ping, readTimeout time.Duration) {
	orDefault := func(d, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return d
	}
	return orDefault(kc.ping, DefaultPingInterval), orDefault(kc.readTimeout, DefaultReadTimeout)
}

// TestKeepaliveAnsweringPeerStaysConnected: a client that sends nothing
// but answers pings stays connected across many ReadTimeout periods, and
// the pings come exactly every PingInterval.
func TestKeepaliveAnsweringPeerStaysConnected(t *testing.T) {
	for _, kc := range keepaliveConfigs {
		t.Run(kc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ping, readTimeout := kc.effective()
				s := startPipeServer(Config{PingInterval: kc.ping, ReadTimeout: kc.readTimeout})
				c, p := dialPinger(t, s)

				// Half a period past the last ping of the run, so no ping
				// falls on the instant looked at.
				const periods = 20
				end := periods*readTimeout + ping/2
				p.until(end)
				if err := c.readErrNow(); err != nil {
					t.Fatalf("connection ended after %v although every ping was answered: %v", time.Since(p.start), err)
				}
				if n := s.conns(); n != 1 {
					t.Fatalf("server holds %d connections, want 1", n)
				}
				got := p.times()
				if want := int(end / ping); len(got) != want {
					t.Errorf("%d pings in %v, want %d (one every %v)", len(got), end, want, ping)
				}
				for i, at := range got {
					if w := time.Duration(i+1) * ping; at != w {
						t.Fatalf("ping %d came at %v, want %v (pings %v)", i+1, at, w, got)
					}
				}

				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := c.closeNormally(ctx); err != nil {
					t.Error(err)
				}
				s.stop(t)
			})
		})
	}
}

// TestKeepaliveSilentPeerIsClosed: a client that keeps reading but stops
// answering pings is closed exactly ReadTimeout after its last pong: not
// a moment before, and not later.
func TestKeepaliveSilentPeerIsClosed(t *testing.T) {
	for _, kc := range keepaliveConfigs {
		t.Run(kc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ping, readTimeout := kc.effective()
				s := startPipeServer(Config{PingInterval: kc.ping, ReadTimeout: kc.readTimeout})
				c, p := dialPinger(t, s)

				// Answer five pings, then go silent: the last pong went out
				// when the fifth ping came.
				const answered = 5
				lastPong := answered * ping
				p.until(lastPong + ping/2)
				p.setSilence()
				if n := len(p.times()); n != answered {
					t.Fatalf("%d pings by %v, want %d", n, lastPong+ping/2, answered)
				}

				closeAt := lastPong + readTimeout
				p.until(closeAt - time.Millisecond)
				if err := c.readErrNow(); err != nil {
					t.Fatalf("closed %v after the last pong, before ReadTimeout %v: %v", time.Since(p.start)-lastPong, readTimeout, err)
				}
				if n := s.conns(); n != 1 {
					t.Fatalf("server holds %d connections before ReadTimeout passed, want 1", n)
				}

				p.until(closeAt)
				err := c.readErrNow()
				if err == nil {
					t.Fatalf("still connected %v after the last pong (ReadTimeout %v)", time.Since(p.start)-lastPong, readTimeout)
				}
				var ce *websocket.CloseError
				if !errors.As(err, &ce) {
					t.Errorf("connection ended with %v, want a close frame", err)
				}
				if n := s.conns(); n != 0 {
					t.Errorf("server still holds %d connections after closing the silent one", n)
				}
				// Pings kept coming while the peer was silent. (One may
				// fall on the instant of the close, and go out or not.)
				before := 0
				for _, at := range p.times() {
					if at < closeAt {
						before++
					}
				}
				if want := int((closeAt - 1) / ping); before != want {
					t.Errorf("%d pings before the close, want %d: %v", before, want, p.times())
				}
				s.stop(t)
			})
		})
	}
}
