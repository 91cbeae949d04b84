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

	"github.com/changesetd/changesetd/metrics"
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
	ctx    context.Context
	cancel context.CancelFunc

	// pending counts the requests answered off the read loop (async):
	// shutdown lets them answer before closing, and run waits for them.
	pending sync.WaitGroup

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
	}
	c.setLogger(srv.log.With("conn", remote))
	c.stream = newStream(ws, &srv.cfg, func(code int, reason string) {
		if code != websocket.CloseNormalClosure && code != websocket.CloseGoingAway {
			c.logger().Warn("closing connection", "code", code, "reason", reason)
		}
	})
	return c
}

// run serves the connection until it closes, then drops its
// subscriptions. Requests are handled in the order they arrive; handlers
// that wait on a session answer from elsewhere.
func (c *conn) run() {
	c.logger().Info("connected")
	for {
		req, err := c.stream.readRequest()
		if err != nil {
			break
		}
		c.handle(req)
	}
	c.stream.closeWith(websocket.CloseNormalClosure, "")
	<-c.stream.done
	c.cancel()
	c.pending.Wait()
	c.dropAll()
	c.logger().Info("disconnected")
}

// async answers req on a goroutine of its own, which the connection owns:
// its run waits for it, and a server shutting down lets it answer first.
func (c *conn) async(req *jsonrpc2.Request, f func()) {
	c.pending.Add(1)
	go func() {
		defer c.pending.Done()
		defer c.recoverRequest(req)
		f()
	}()
}

// answered returns a channel closed once every async request has
// answered.
func (c *conn) answered() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		c.pending.Wait()
		close(done)
	}()
	return done
}

// dropAll detaches every subscription of the connection.
func (c *conn) dropAll() {
	c.mu.Lock()
	subs := c.subs
	c.subs = map[string]struct{}{}
	c.mu.Unlock()
	metrics.Subscriptions.Sub(float64(len(subs)))
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

// Send runs once per envelope and subscriber: it reads the generation
// without the lock and passes a package-level encoder, so fan-out to many
// subscribers allocates nothing per subscriber.
func (c *conn) Send(env *session.Envelope) {
	legacy := c.legacy.Load()
	encode := encodeCurrent
	if legacy {
		encode = encodeLegacy
	}
	_ = c.stream.write(env.Frame(legacy, encode))
}

func encodeCurrent(e protocol.ActionEnvelope) []byte {
	return encodeAction(protocol.AdaptEnvelope(false, e))
}

func encodeLegacy(e protocol.ActionEnvelope) []byte {
	return encodeAction(protocol.AdaptEnvelope(true, e))
}

// encodeAction encodes an "action" notification.
func encodeAction(env protocol.ActionEnvelope) []byte {
	b, err := protocol.EncodeActionNotification(env)
	if err != nil {
		// Every action type encodes; this is a programming error.
		panic(fmt.Sprintf("server: encode action envelope: %v", err))
	}
	return b
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
		_ = c.stream.WriteObject(protocol.Response{ID: rawID(req.ID), Error: c.toRPCError(req.Method, err)})
		return
	}
	_ = c.stream.write(c.encodeReply(req, result))
}

// encodeReply builds the bytes of a success response, adapted to the
// connection's version, for replies released through stream.release.
func (c *conn) encodeReply(req *jsonrpc2.Request, result any) []byte {
	// MarshalJSON directly: json.Marshal would scan its output once more.
	b, err := protocol.Response{ID: rawID(req.ID), Result: c.adapt(result)}.MarshalJSON()
	if err != nil {
		b, _ = json.Marshal(protocol.Response{ID: rawID(req.ID), Error: &protocol.Error{Code: protocol.CodeInternalError, Message: "encode result: " + err.Error()}})
	}
	return b
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
