package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gorilla/websocket"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// conn is one accepted WebSocket connection: its handshake state and its
// subscriptions. It is the session.Subscriber for everything it
// subscribes to.
type conn struct {
	srv    *Server
	logp   atomic.Pointer[slog.Logger] // set again once the client names itself
	legacy atomic.Bool                 // the negotiated version is 0.6/0.7; set with version
	stream *stream
	reads  chan struct{} // resourceReads in flight; capacity DefaultReadsPerConn
	ctx    context.Context
	cancel context.CancelFunc

	// work counts the goroutines the connection owns: the one serving
	// its queue of requests while it has any (drain), requests answered
	// off it (async) and catch-ups of lagging channels. Shutdown lets
	// them finish before closing, and run waits for them.
	work tracker
	// in is the queue of requests and what is in flight (order.go).
	in inbox

	mu          sync.Mutex
	initialized bool
	clientID    string
	version     string
	subs        map[string]struct{}
}

func newConn(srv *Server, ws *websocket.Conn, remote string) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		srv:    srv,
		ctx:    ctx,
		cancel: cancel,
		subs:   map[string]struct{}{},
		reads:  make(chan struct{}, DefaultReadsPerConn),
	}
	c.setLogger(srv.log.With("conn", remote))
	c.stream = newStream(ws, &srv.cfg, func(code int, reason string) {
		if code != websocket.CloseNormalClosure && code != websocket.CloseGoingAway {
			c.logger().Warn("closing connection", "code", code, "reason", reason)
		}
	})
	c.stream.onLag = c.lagging
	return c
}

// run serves the connection until it closes, then drops its
// subscriptions. Requests take effect in the order they arrive (admit);
// the read loop itself never waits on a session.
func (c *conn) run() {
	c.logger().Info("connected")
	for {
		req, err := c.stream.readRequest()
		if err != nil {
			break
		}
		c.admit(req)
	}
	c.stream.closeWith(websocket.CloseNormalClosure, "")
	<-c.stream.done
	c.cancel()
	c.work.stop()
	c.dropAll()
	if id := c.ClientID(); id != "" {
		c.srv.forget(id)
	}
	c.logger().Info("disconnected")
}

// async answers req on a goroutine of its own, which the connection owns:
// its run waits for it, and a server shutting down lets it answer first.
// The request stays in flight, and the next one waits, until f returns.
func (c *conn) async(req *jsonrpc2.Request, f func()) {
	j := c.hold(req)
	if !c.work.goFunc(func() {
		defer c.release(j)
		defer c.recoverRequest(req)
		f()
	}) {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInternalError, "%s: the connection is closing", req.Method))
		c.release(j)
	}
}

// answered returns a channel closed once every goroutine of the
// connection has finished.
func (c *conn) answered() <-chan struct{} { return c.work.idle() }

// dropAll detaches every subscription of the connection.
func (c *conn) dropAll() {
	c.mu.Lock()
	subs := c.subs
	c.subs = map[string]struct{}{}
	c.mu.Unlock()
	c.srv.cfg.Metrics.Subscriptions(-len(subs))
	for uri := range subs {
		c.srv.m.Detach(c, uri)
	}
}

func (c *conn) logger() *slog.Logger     { return c.logp.Load() }
func (c *conn) setLogger(l *slog.Logger) { c.logp.Store(l) }

// session.Subscriber.

func (c *conn) ClientID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientID
}

func (c *conn) Version() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Every frame bound for the client passes through one of Send, Notify and
// reply, and each hands its payload to protocol.Adapt for the version the
// connection negotiated: stored state stays in the newest shape.

// Send runs once per envelope and subscriber, under the hub's lock: it
// reads the generation without the connection's lock and queues the
// envelope itself, whose bytes every subscriber shares (the 0.6/0.7 shape
// is made by the first writer that needs it, off the lock).
func (c *conn) Send(env *session.Envelope) {
	channel := ""
	if c.droppable(env) {
		channel = env.Channel
	}
	_ = c.stream.writeEnvelope(env, c.legacy.Load(), channel)
}

// droppable reports whether a snapshot of its channel can stand in for
// env when the client lags: an action of a changeset channel, unless it
// is a rejection or the echo of this client's own dispatch, which the
// client waits for to settle what it sent.
func (c *conn) droppable(env *session.Envelope) bool {
	if env.RejectionReason != "" || protocol.ChannelOf(env.Channel) != protocol.ChannelChangeset {
		return false
	}
	return env.Origin == nil || env.Origin.ClientID != c.ClientID()
}

// lagging starts a catch-up for each channel whose backlog the stream
// dropped.
func (c *conn) lagging(channels []string) {
	for _, uri := range channels {
		if !c.work.goFunc(func() { c.catchUp(uri) }) {
			return // the connection is ending
		}
	}
}

// catchUpSeqs is how many serverSeqs a catch-up reserves: the most
// actions catchUpFrames makes.
const catchUpSeqs = 3

// catchUp attaches to uri again and queues, in place of the dropped
// backlog, the actions that turn what the client has into the channel's
// state at the registration point. Only the registration runs in the
// channel's sequence (Attach calls done under the hub's lock): it
// reserves serverSeqs and the frames' place in the stream. The frames
// are made here, after, so a large snapshot delays no other publish.
func (c *conn) catchUp(uri string) {
	if !c.subscribed(uri) {
		c.stream.resynced(uri)
		return
	}
	c.logger().Info("slow reader: its backlog on a channel is replaced by a snapshot", "channel", uri)
	c.srv.cfg.Metrics.SlowClientCaughtUp()
	var (
		snap protocol.Snapshot
		seqs []int64
		sl   *slot
	)
	registered := make(chan struct{})
	c.srv.m.Attach(c, uri, -1, func(at session.Attachment, err error) {
		defer close(registered)
		if err != nil || !c.subscribed(uri) {
			c.stream.resynced(uri)
			return
		}
		snap = at.Snapshot
		for range catchUpSeqs {
			seqs = append(seqs, at.NextSeq())
		}
		sl = c.stream.catchUpSlot(uri)
	})
	<-registered
	if !c.subscribed(uri) {
		// Unsubscribed meanwhile: undo the registration Attach made.
		c.srv.m.Detach(c, uri)
	}
	if sl != nil {
		next := func() int64 { n := seqs[0]; seqs = seqs[1:]; return n }
		parts, frames := c.catchUpFrames(snap, next)
		c.stream.fillSlot(sl, parts, frames)
	}
}

// catchUpBuilding, when set (by tests only), is called as a catch-up's
// frames start being made: a test holds it there to show what waits.
var catchUpBuilding func()

// catchUpFrames encodes a changeset snapshot as the actions that reach it
// from any earlier state of the channel (protocol.EncodeCatchUp):
// contentChanged with every file, operationsChanged when the state has
// none, and the status. They carry serverSeqs of their own (nextSeq),
// after the snapshot's and before any later action, and no origin. The
// first, contentChanged, comes in pieces (parts) whose file list is the
// encoded snapshot's own bytes: a snapshot already encoded (the usual
// case) is neither decoded nor encoded again, nor copied.
func (c *conn) catchUpFrames(snap protocol.Snapshot, nextSeq func() int64) (parts, frames [][]byte) {
	if catchUpBuilding != nil {
		catchUpBuilding()
	}
	var (
		enc protocol.Encoded
		err error
	)
	switch v := snap.State.(type) {
	case protocol.Encoded:
		enc = v
	case protocol.ChangesetState:
		enc, err = v.MarshalJSON()
	default:
		enc, err = json.Marshal(v)
	}
	if err == nil {
		parts, frames, err = protocol.EncodeCatchUp(snap.Resource, enc, c.legacy.Load(), nextSeq)
	}
	if err != nil {
		c.logger().Error("catch-up: changeset snapshot does not encode", "channel", snap.Resource, "err", err)
		return nil, nil
	}
	return parts, frames
}

func (c *conn) subscribed(uri string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.subs[uri]
	return ok
}

func (c *conn) Notify(method string, params any) {
	_ = c.stream.WriteObject(protocol.NewNotification(method, c.adapt(params)))
}

// adapt converts a payload to the shape of the connection's version.
func (c *conn) adapt(v any) any { return protocol.Adapt(c.Version(), v) }

// reply answers a request; err, if set, becomes a JSON-RPC error that
// keeps the protocol code of the first *protocol.Error in its chain.
func (c *conn) reply(req *jsonrpc2.Request, result any, err error) {
	if req.Notif {
		if err != nil {
			c.logger().Debug("notification failed", "method", req.Method, "err", err)
		}
		return
	}
	if err != nil {
		c.answeredID(req)
		_ = c.stream.WriteObject(protocol.Response{ID: rawID(req.ID), Error: c.toRPCError(req.Method, err)})
		return
	}
	_ = c.stream.write(c.encodeReply(req, result))
}

// replyEncoding, when set (by tests only), is called as a success
// reply starts being encoded: a test holds it there to show what waits.
var replyEncoding func(method string)

// encodeReply builds the bytes of a success response, adapted to the
// connection's version, for replies released through stream.release.
func (c *conn) encodeReply(req *jsonrpc2.Request, result any) []byte {
	if replyEncoding != nil {
		replyEncoding(req.Method)
	}
	c.answeredID(req)
	// MarshalJSON directly: json.Marshal would scan its output once more.
	b, err := protocol.Response{ID: rawID(req.ID), Result: c.adapt(result)}.MarshalJSON()
	if err != nil {
		b, _ = json.Marshal(protocol.Response{ID: rawID(req.ID), Error: &protocol.Error{Code: protocol.CodeInternalError, Message: "encode result: " + err.Error()}})
	}
	return b
}

// encodeReplyParts is encodeReply as pieces of one message
// (protocol.Response.EncodeParts): a snapshot's encoded state is written
// from the bytes the channel keeps for every subscriber, not copied into
// each reply.
func (c *conn) encodeReplyParts(req *jsonrpc2.Request, result any) [][]byte {
	if replyEncoding != nil {
		replyEncoding(req.Method)
	}
	c.answeredID(req)
	parts, err := protocol.Response{ID: rawID(req.ID), Result: c.adapt(result)}.EncodeParts()
	if err != nil {
		b, _ := json.Marshal(protocol.Response{ID: rawID(req.ID), Error: &protocol.Error{Code: protocol.CodeInternalError, Message: "encode result: " + err.Error()}})
		return [][]byte{b}
	}
	return parts
}

// rawID encodes a request id for its response.
func rawID(id jsonrpc2.ID) json.RawMessage {
	b, _ := id.MarshalJSON()
	return b
}

// toRPCError keeps the code and data of the first *protocol.Error in
// err's chain and the outermost message.
func (c *conn) toRPCError(method string, err error) *protocol.Error {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		c.logger().Error("internal error", "method", method, "err", err)
		return &protocol.Error{Code: protocol.CodeInternalError, Message: err.Error()}
	}
	return &protocol.Error{Code: pe.Code, Message: err.Error(), Data: pe.Data}
}

// decode unmarshals params into v, or reports InvalidParams saying what
// was wrong.
func decode(req *jsonrpc2.Request, v any) error {
	if req.Params == nil || len(*req.Params) == 0 || string(*req.Params) == "null" {
		return protocol.Errorf(protocol.CodeInvalidParams, "%s: params are required", req.Method)
	}
	if err := json.Unmarshal(*req.Params, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// The path as the client wrote it: without the Go name of the
			// embedded BaseParams ("params.channel", not
			// "params.BaseParams.channel").
			field := strings.ReplaceAll(te.Field, "BaseParams.", "")
			return protocol.Errorf(protocol.CodeInvalidParams, "%s: params.%s must be %s, not %s", req.Method, field, te.Type, te.Value)
		}
		return protocol.Errorf(protocol.CodeInvalidParams, "%s: %v", req.Method, err)
	}
	return nil
}

// recoverRequest turns a panic in a handler into an internal error reply.
func (c *conn) recoverRequest(req *jsonrpc2.Request) {
	if r := recover(); r != nil {
		c.logger().Error("panic in handler", "method", req.Method, "panic", r, "stack", string(debug.Stack()))
		c.reply(req, nil, fmt.Errorf("internal error in %s", req.Method))
	}
}

// tracker counts goroutines so that their owner can wait for them. Unlike
// a bare WaitGroup, starting one races with nothing: once stop has begun,
// goFunc refuses, and idle may be asked for while work still starts.
type tracker struct {
	mu      sync.Mutex
	n       int
	stopped bool
	waiters []chan struct{} // closed when n drops to 0
}

// goFunc runs f on a goroutine of its own, or reports false once stop has
// been called.
func (t *tracker) goFunc(f func()) bool {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return false
	}
	t.n++
	t.mu.Unlock()
	go func() {
		defer t.done()
		f()
	}()
	return true
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		for _, w := range t.waiters {
			close(w)
		}
		t.waiters = nil
	}
}

// idle returns a channel closed once no goroutine is running.
func (t *tracker) idle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := make(chan struct{})
	if t.n == 0 {
		close(ch)
	} else {
		t.waiters = append(t.waiters, ch)
	}
	return ch
}

// stop refuses new goroutines and waits for the running ones.
func (t *tracker) stop() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
	<-t.idle()
}
