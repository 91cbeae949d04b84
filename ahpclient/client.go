package ahpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
)

// Message is one JSON-RPC message received from the daemon.
type Message = protocol.RPCMessage

// RPCError is a JSON-RPC error response.
type RPCError = protocol.Error

// CloseError is how a connection ended when the daemon sent a close frame.
type CloseError = websocket.CloseError

// The WebSocket frame types SendFrame writes.
const (
	TextMessage   = websocket.TextMessage
	BinaryMessage = websocket.BinaryMessage
)

// The close codes the daemon uses.
const (
	CloseNormalClosure   = websocket.CloseNormalClosure
	CloseGoingAway       = websocket.CloseGoingAway
	ClosePolicyViolation = websocket.ClosePolicyViolation
	CloseMessageTooBig   = websocket.CloseMessageTooBig
	CloseTryAgainLater   = websocket.CloseTryAgainLater
)

// Options say how to dial. The zero value dials with no credentials.
type Options struct {
	// Header is sent with the upgrade request as is.
	Header http.Header
	// Token, when set, is sent as "Authorization: Bearer <token>" (the
	// daemon also takes it as the URL's token= parameter).
	Token string
	// Origin, when set, is sent as the Origin header, as a browser would.
	Origin string
	// HandshakeTimeout bounds the upgrade (10s when zero).
	HandshakeTimeout time.Duration
	// Proxy picks the HTTP proxy to dial through (as http.Transport's
	// does); nil dials the daemon directly.
	Proxy func(*http.Request) (*url.URL, error)
	// NetDialContext, when set, makes the connection the upgrade runs
	// over, instead of a TCP connection to the URL's host: an in-memory
	// pipe, say, which runs where a socket cannot (a synctest bubble).
	NetDialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Record keeps every frame received and sent, the notifications and
	// the responses no call waited for, for Frames, Sent, Notes and Stray.
	// It is meant for tests: a long-lived client would grow without end.
	Record bool
	// OnClose, when set, is called once on the reading goroutine when the
	// connection has ended, with the error that ended it.
	OnClose func(error)
}

// Client is one connection to the daemon.
type Client struct {
	ws      *websocket.Conn
	record  bool
	onClose func(error)
	done    chan struct{} // closed when the reader has ended
	wg      sync.WaitGroup

	writeMu sync.Mutex

	// deliverMu orders the handing out of notifications: the reader takes
	// it for each one, Listen and a call's start for the queue.
	deliverMu sync.Mutex

	mu          sync.Mutex
	nextID      int64
	pending     map[string]*call
	listener    func(*Message)
	queue       []*Message  // notifications nobody took yet
	notes       []Message   // with record: notifications, in arrival order
	notesAt     []time.Time // with record: when each of notes was read off the socket
	frames      [][]byte    // with record: every frame received, raw
	sent        [][]byte    // with record: every data frame written
	stray       []Message   // with record: responses that matched no call
	changed     chan struct{}
	closed      bool
	err         error
	stalled     bool
	readDelay   time.Duration
	unstall     chan struct{}
	closeCode   int
	closeReason string
	closing     bool // a close frame was sent
	waiting     bool // Close is waiting for the goroutines
}

// call is one request waiting for its response.
type call struct {
	answer chan arrival
	onNote func(*Message)
}

// arrival is a message with the time its frame's last byte was read.
type arrival struct {
	Message
	at time.Time
}

// Dial connects to url (ws://host:port/ahp, possibly with ?token=). A
// refused upgrade returns the daemon's response, whose body holds (up to
// 1 KiB of) its reason.
func Dial(ctx context.Context, url string, opts Options) (*Client, *http.Response, error) {
	h := opts.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if opts.Token != "" {
		h.Set("Authorization", "Bearer "+opts.Token)
	}
	if opts.Origin != "" {
		h.Set("Origin", opts.Origin)
	}
	d := websocket.Dialer{HandshakeTimeout: opts.HandshakeTimeout, Proxy: opts.Proxy, NetDialContext: opts.NetDialContext}
	if d.HandshakeTimeout == 0 {
		d.HandshakeTimeout = 10 * time.Second
	}
	ws, resp, err := d.DialContext(ctx, url, h)
	if err != nil {
		return nil, resp, err
	}
	c := &Client{
		ws: ws, record: opts.Record, onClose: opts.OnClose,
		pending: map[string]*call{}, changed: make(chan struct{}), done: make(chan struct{}), unstall: make(chan struct{}),
	}
	ws.SetCloseHandler(func(code int, text string) error {
		c.mu.Lock()
		c.closeCode, c.closeReason = code, text
		c.mu.Unlock()
		return nil
	})
	c.wg.Add(1)
	go c.readLoop()
	return c, resp, nil
}

func (c *Client) readLoop() {
	defer c.wg.Done()
	defer close(c.done)
	for {
		c.mu.Lock()
		stalled := c.stalled
		c.mu.Unlock()
		if stalled {
			<-c.unstall // Close: the connection never ended on its own
			return
		}
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			c.end(err)
			return
		}
		at := time.Now()
		c.mu.Lock()
		if d := c.readDelay; d > 0 {
			// A throttled reader: the frame is taken in only after d.
			c.mu.Unlock()
			time.Sleep(d)
			c.mu.Lock()
		}
		if c.record {
			c.frames = append(c.frames, data)
		}
		c.mu.Unlock()
		var m Message
		if json.Unmarshal(data, &m) != nil {
			c.signal()
			continue
		}
		if m.Method != "" {
			c.deliver(&m, at)
		} else {
			c.answer(arrival{m, at})
		}
		c.signal()
	}
}

// end records how the connection ended and fails the calls waiting.
func (c *Client) end(err error) {
	c.mu.Lock()
	c.closed = true
	c.err = err
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		c.closeCode, c.closeReason = ce.Code, ce.Text
	}
	c.signalLocked()
	c.mu.Unlock()
	if c.onClose != nil {
		c.onClose(err)
	}
}

// deliver hands a notification to the hooks of the calls waiting, else to
// the listener, else queues it for whichever comes first.
func (c *Client) deliver(m *Message, at time.Time) {
	c.deliverMu.Lock()
	defer c.deliverMu.Unlock()
	c.mu.Lock()
	if c.record {
		c.notes = append(c.notes, *m)
		c.notesAt = append(c.notesAt, at)
	}
	var hooks []func(*Message)
	switch {
	case len(c.pending) > 0:
		for _, p := range c.pending {
			if p.onNote != nil {
				hooks = append(hooks, p.onNote)
			}
		}
	case c.listener != nil:
		hooks = append(hooks, c.listener)
	case !c.record:
		c.queue = append(c.queue, m)
	}
	c.mu.Unlock()
	for _, h := range hooks {
		h(m)
	}
}

// answer passes a response to the call waiting for it.
func (c *Client) answer(a arrival) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pending[string(a.ID)]; ok {
		delete(c.pending, string(a.ID))
		p.answer <- a
	} else if c.record {
		c.stray = append(c.stray, a.Message)
	}
}

func (c *Client) signal() {
	c.mu.Lock()
	c.signalLocked()
	c.mu.Unlock()
}

func (c *Client) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Listen passes every notification no call takes to fn, on the reading
// goroutine and in arrival order, starting with those queued since the
// last call. fn must not block or make calls on c.
func (c *Client) Listen(fn func(*Message)) {
	c.deliverMu.Lock()
	defer c.deliverMu.Unlock()
	c.mu.Lock()
	q := c.queue
	c.queue = nil
	c.listener = fn
	c.mu.Unlock()
	for _, m := range q {
		fn(m)
	}
}

// Call sends a request and decodes the result into out (if non-nil). A
// JSON-RPC error comes back as *RPCError.
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	return c.CallNotes(ctx, method, params, out, nil)
}

// CallNotes is Call that passes the notifications received until the
// response, and those queued since the last call, to onNote (nil drops
// them). onNote runs on the reading goroutine while CallNotes waits, so it
// may touch what the caller owns; it must not block or make calls on c.
func (c *Client) CallNotes(ctx context.Context, method string, params, out any, onNote func(*Message)) error {
	_, err := c.callAt(ctx, method, params, out, onNote)
	return err
}

// callAt is CallNotes that also returns when the response's last byte
// was read off the socket, before it was decoded.
func (c *Client) callAt(ctx context.Context, method string, params, out any, onNote func(*Message)) (time.Time, error) {
	c.deliverMu.Lock()
	c.mu.Lock()
	c.nextID++
	n := c.nextID
	id := strconv.FormatInt(n, 10) // the id as it comes back in the response
	p := &call{answer: make(chan arrival, 1), onNote: onNote}
	c.pending[id] = p
	q := c.queue
	c.queue = nil
	c.mu.Unlock()
	if onNote != nil {
		for _, m := range q {
			onNote(m)
		}
	}
	c.deliverMu.Unlock()
	frame, err := json.Marshal(protocol.NewRequest(n, method, params))
	if err == nil {
		err = c.SendRaw(frame)
	}
	if err != nil {
		c.forget(id)
		return time.Time{}, fmt.Errorf("%s: %w", method, err)
	}
	answer := func(a arrival) (time.Time, error) {
		if a.Error != nil {
			return a.at, a.Error
		}
		if out != nil {
			return a.at, json.Unmarshal(a.Result, out)
		}
		return a.at, nil
	}
	select {
	case a := <-p.answer:
		return answer(a)
	case <-c.done:
		// A server may answer and then close (an unsupported version):
		// the answer, when it came, wins over the close.
		select {
		case a := <-p.answer:
			return answer(a)
		default:
		}
		c.forget(id)
		if err := c.Err(); err != nil {
			return time.Time{}, fmt.Errorf("%s: connection closed: %w", method, err)
		}
		return time.Time{}, fmt.Errorf("%s: connection closed", method)
	case <-ctx.Done():
		c.forget(id)
		return time.Time{}, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *Client) forget(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	return c.Send(protocol.NewNotification(method, params))
}

// Send writes v as one JSON text frame.
func (c *Client) Send(v any) error {
	frame, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.SendRaw(frame)
}

// SendRaw writes one text frame as is.
func (c *Client) SendRaw(data []byte) error {
	return c.SendFrame(TextMessage, data)
}

// SendFrame writes one frame of the given WebSocket message type.
func (c *Client) SendFrame(typ int, data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.record {
		c.mu.Lock()
		c.sent = append(c.sent, append([]byte(nil), data...))
		c.mu.Unlock()
	}
	return c.ws.WriteMessage(typ, data)
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

// Snapshot is a subscription's starting state, kept raw.
type Snapshot struct {
	Resource string          `json:"resource"`
	State    json.RawMessage `json:"state"`
	FromSeq  int64           `json:"fromSeq"`
	// At is when the response's last byte was read off the socket,
	// before any of it was decoded.
	At time.Time `json:"-"`
}

// Subscribe subscribes to uri and returns its snapshot; the actions after
// it come as notifications. onNote is as for CallNotes.
func (c *Client) Subscribe(ctx context.Context, uri string, onNote func(*Message)) (Snapshot, error) {
	var res struct {
		Snapshot Snapshot `json:"snapshot"`
	}
	at, err := c.callAt(ctx, protocol.MethodSubscribe, protocol.SubscribeParams{BaseParams: protocol.BaseParams{Channel: uri}}, &res, onNote)
	res.Snapshot.At = at
	return res.Snapshot, err
}

// Unsubscribe ends the subscription to uri.
func (c *Client) Unsubscribe(ctx context.Context, uri string) error {
	return c.Call(ctx, protocol.MethodUnsubscribe, protocol.UnsubscribeParams{Channel: uri}, nil)
}

// StopReading stops consuming frames, as a client that hangs would; the
// daemon's writes then back up. Close ends it.
func (c *Client) StopReading() {
	c.mu.Lock()
	c.stalled = true
	c.mu.Unlock()
}

// SetReadDelay makes the client take each frame in only d after reading
// it, as a client that reads more slowly than the daemon writes.
func (c *Client) SetReadDelay(d time.Duration) {
	c.mu.Lock()
	c.readDelay = d
	c.mu.Unlock()
}

// Shutdown sends a close frame and returns at once; the connection is
// dropped when the daemon's close comes back, or after grace at the
// latest. Close still waits for the reader.
func (c *Client) Shutdown(grace time.Duration) {
	c.writeClose()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting {
		return // Close is under way and drops the connection itself
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
		}
		c.ws.Close()
	}()
}

func (c *Client) writeClose() {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	again := c.closing
	c.closing = true
	c.mu.Unlock()
	if !again {
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	}
}

// Close sends a close frame, closes the connection and waits for the
// client's goroutines. It may be called more than once.
func (c *Client) Close() error {
	c.writeClose()
	err := c.ws.Close()
	c.mu.Lock()
	c.waiting = true // no Shutdown adds to wg from here on
	if c.stalled {
		c.stalled = false
		close(c.unstall)
	}
	c.mu.Unlock()
	c.wg.Wait()
	return err
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is the error that ended the connection (a *CloseError when the
// daemon sent a close frame), nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Closed reports whether the connection has ended, with the daemon's
// close code and reason.
func (c *Client) Closed() (bool, int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed, c.closeCode, c.closeReason
}

// Notes returns the notifications received so far (with Options.Record).
func (c *Client) Notes() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.notes...)
}

// NotesAt returns when each of Notes' notifications was read off the
// socket, its last byte in and nothing of it decoded yet (with
// Options.Record).
func (c *Client) NotesAt() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.notesAt...)
}

// Frames returns every message received so far exactly as it arrived,
// in wire order: responses, notifications and frames that are not JSON
// (with Options.Record). Tests that must see the bytes themselves (Go's
// decoder matches keys case-insensitively and ignores unknown members)
// read these.
func (c *Client) Frames() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.frames...)
}

// Sent returns every data frame written so far, in wire order, so a test
// can tell which request a response answers (with Options.Record).
func (c *Client) Sent() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.sent...)
}

// Stray returns responses that matched no call, answers to raw frames
// (with Options.Record).
func (c *Client) Stray() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.stray...)
}

// Wait calls cond after every received message until it returns true, the
// connection ends or ctx ends.
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
// channels when empty), in arrival order (with Options.Record).
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
