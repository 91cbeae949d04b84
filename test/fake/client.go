// Package fake is a small AHP client for end-to-end tests: it speaks
// JSON-RPC 2.0 over a real WebSocket to a real daemon and keeps the
// notifications it receives so tests can wait for conditions instead of
// sleeping.
package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
)

// Message is one JSON-RPC message received from the server.
type Message = protocol.RPCMessage

// RPCError is a JSON-RPC error response.
type RPCError = protocol.Error

// Client is a connection to the daemon.
type Client struct {
	ws      *websocket.Conn
	writeMu sync.Mutex

	mu          sync.Mutex
	nextID      int
	pending     map[string]chan Message
	notes       []Message // notifications, in arrival order
	frames      [][]byte  // every message received, raw, in wire order
	sent        [][]byte  // every data frame written, in wire order
	stray       []Message // responses whose id matched no pending call
	changed     chan struct{}
	closed      bool
	stalled     bool
	readDelay   time.Duration
	unstall     chan struct{}
	closeCode   int
	closeReason string
	done        chan struct{}
}

// Dial connects to url (ws://host/ahp?token=...) with optional headers.
func Dial(ctx context.Context, url string, h http.Header) (*Client, *http.Response, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.DialContext(ctx, url, h)
	if err != nil {
		return nil, resp, err
	}
	c := &Client{ws: ws, pending: map[string]chan Message{}, changed: make(chan struct{}), done: make(chan struct{}), unstall: make(chan struct{})}
	ws.SetCloseHandler(func(code int, text string) error {
		c.mu.Lock()
		c.closeCode, c.closeReason = code, text
		c.mu.Unlock()
		return nil
	})
	go c.readLoop()
	return c, resp, nil
}

func (c *Client) readLoop() {
	defer close(c.done)
	for {
		c.mu.Lock()
		stalled := c.stalled
		c.mu.Unlock()
		if stalled {
			<-c.unstall
			return
		}
		_, data, err := c.ws.ReadMessage()
		c.mu.Lock()
		if d := c.readDelay; d > 0 && err == nil {
			// A throttled reader: the frame is taken in only after d.
			c.mu.Unlock()
			time.Sleep(d)
			c.mu.Lock()
		}
		if err != nil {
			c.closed = true
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				c.closeCode, c.closeReason = ce.Code, ce.Text
			}
			c.signalLocked()
			c.mu.Unlock()
			return
		}
		c.frames = append(c.frames, data)
		var m Message
		if json.Unmarshal(data, &m) != nil {
			c.signalLocked()
			c.mu.Unlock()
			continue
		}
		if m.Method != "" {
			c.notes = append(c.notes, m)
		} else if ch, ok := c.pending[string(m.ID)]; ok {
			delete(c.pending, string(m.ID))
			ch <- m
		} else {
			c.stray = append(c.stray, m)
		}
		c.signalLocked()
		c.mu.Unlock()
	}
}

func (c *Client) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// StopReading stops consuming frames, as a client that hangs would; the
// server's writes then back up.
func (c *Client) StopReading() {
	c.mu.Lock()
	c.stalled = true
	c.mu.Unlock()
}

// SetReadDelay makes the client take each frame in only d after reading
// it, as a client that reads more slowly than the server writes.
func (c *Client) SetReadDelay(d time.Duration) {
	c.mu.Lock()
	c.readDelay = d
	c.mu.Unlock()
}

// Close closes the connection.
func (c *Client) Close() error {
	c.writeMu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.writeMu.Unlock()
	err := c.ws.Close()
	c.mu.Lock()
	if c.stalled {
		c.stalled = false
		close(c.unstall)
	}
	c.mu.Unlock()
	<-c.done
	return err
}

// Closed reports whether the server closed the connection, with its close
// code and reason.
func (c *Client) Closed() (bool, int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed, c.closeCode, c.closeReason
}

// SendRaw writes one text frame as is.
func (c *Client) SendRaw(data []byte) error {
	return c.SendFrame(websocket.TextMessage, data)
}

// SendFrame writes one frame of the given websocket message type.
func (c *Client) SendFrame(typ int, data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	c.sent = append(c.sent, append([]byte(nil), data...))
	c.mu.Unlock()
	return c.ws.WriteMessage(typ, data)
}

// Call sends a request and decodes the result into out (if non-nil). A
// JSON-RPC error comes back as *RPCError.
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	c.mu.Lock()
	c.nextID++
	n := c.nextID
	id := strconv.Itoa(n) // the id as it comes back in the response
	ch := make(chan Message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	frame, err := json.Marshal(protocol.NewRequest(int64(n), method, params))
	if err != nil {
		return err
	}
	if err := c.SendRaw(frame); err != nil {
		return err
	}
	answer := func(m Message) error {
		if m.Error != nil {
			return m.Error
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	}
	select {
	case m := <-ch:
		return answer(m)
	case <-c.done:
		// A server may answer and then close (an unsupported version):
		// the answer, when it came, wins over the close.
		select {
		case m := <-ch:
			return answer(m)
		default:
		}
		return fmt.Errorf("%s: connection closed", method)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	frame, err := json.Marshal(protocol.NewNotification(method, params))
	if err != nil {
		return err
	}
	return c.SendRaw(frame)
}

// Initialize sends initialize with the given versions (1.0.0 when none).
func (c *Client) Initialize(ctx context.Context, clientID string, subs []string, versions ...string) (protocol.InitializeResult, error) {
	if len(versions) == 0 {
		versions = []string{"1.0.0"}
	}
	var res protocol.InitializeResult
	err := c.Call(ctx, protocol.MethodInitialize, map[string]any{
		"channel": protocol.RootURI, "protocolVersions": versions, "clientId": clientID, "initialSubscriptions": subs,
	}, &res)
	return res, err
}

// Notes returns the notifications received so far.
func (c *Client) Notes() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.notes...)
}

// Frames returns every message received so far exactly as it arrived,
// in wire order: responses, notifications and frames that are not JSON.
// Tests that must see the bytes themselves (Go's decoder matches keys
// case-insensitively and ignores unknown members) read these.
func (c *Client) Frames() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.frames...)
}

// Sent returns every data frame written so far, in wire order, so a test
// can tell which request a response answers.
func (c *Client) Sent() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.sent...)
}

// Stray returns responses that matched no call (answers to raw frames).
func (c *Client) Stray() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.stray...)
}

// Wait calls cond with the current state after every received message
// until it returns true, the connection closes or ctx ends.
func (c *Client) Wait(ctx context.Context, what string, cond func() bool) error {
	for {
		c.mu.Lock()
		ch, closed := c.changed, c.closed
		c.mu.Unlock()
		if cond() {
			return nil
		}
		if closed {
			return fmt.Errorf("waiting for %s: connection closed", what)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// Envelopes returns the action envelopes received on channel (all
// channels when empty), in arrival order.
func (c *Client) Envelopes(channel string) []Envelope {
	var out []Envelope
	for _, n := range c.Notes() {
		if n.Method != protocol.NotifyAction {
			continue
		}
		var e Envelope
		if json.Unmarshal(n.Params, &e) != nil {
			continue
		}
		if channel == "" || e.Channel == channel {
			out = append(out, e)
		}
	}
	return out
}

// Envelope is an action envelope with the action kept raw and typed.
type Envelope struct {
	protocol.ActionEnvelope
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw action next to the decoded envelope.
func (e *Envelope) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &e.ActionEnvelope); err != nil {
		return err
	}
	var raw struct {
		Action json.RawMessage `json:"action"`
	}
	_ = json.Unmarshal(b, &raw)
	e.Raw = raw.Action
	return nil
}
