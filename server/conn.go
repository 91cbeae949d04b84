package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

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
	log    *slog.Logger
	stream *stream
	rpc    *jsonrpc2.Conn
	ctx    context.Context
	cancel context.CancelFunc

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
		log:    srv.log.With("conn", remote),
		ctx:    ctx,
		cancel: cancel,
		subs:   map[string]struct{}{},
	}
	c.stream = newStream(ws, &srv.cfg, func(code int, reason string) {
		if code != websocket.CloseNormalClosure && code != websocket.CloseGoingAway {
			c.log.Warn("closing connection", "code", code, "reason", reason)
		}
	})
	return c
}

// run serves the connection until it closes, then drops its
// subscriptions.
func (c *conn) run() {
	c.log.Info("connected")
	c.rpc = jsonrpc2.NewConn(c.ctx, c.stream, c, jsonrpc2.SetLogger(discardLogger{}))
	<-c.rpc.DisconnectNotify()
	c.stream.closeWith(websocket.CloseNormalClosure, "")
	<-c.stream.done
	c.cancel()
	c.dropAll()
	c.log.Info("disconnected")
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

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

func (c *conn) Send(env *session.Envelope) {
	_ = c.stream.write(env.Frame(encodeAction))
}

// encodeAction encodes an "action" notification.
func encodeAction(env protocol.ActionEnvelope) []byte {
	b, err := json.Marshal(notification{JSONRPC: "2.0", Method: protocol.NotifyAction, Params: env})
	if err != nil {
		// Every action type encodes; this is a programming error.
		panic(fmt.Sprintf("server: encode action envelope: %v", err))
	}
	return b
}

func (c *conn) Notify(method string, params any) {
	_ = c.stream.WriteObject(notification{JSONRPC: "2.0", Method: method, Params: params})
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      jsonrpc2.ID     `json:"id"`
	Result  any             `json:"result"`
	Error   *jsonrpc2.Error `json:"error,omitempty"`
}

// reply answers a request; err, if set, becomes a JSON-RPC error that
// keeps the protocol code of the first *protocol.Error in its chain.
func (c *conn) reply(req *jsonrpc2.Request, result any, err error) {
	if req.Notif {
		if err != nil {
			c.log.Debug("notification failed", "method", req.Method, "err", err)
		}
		return
	}
	if err != nil {
		_ = c.stream.WriteObject(response{JSONRPC: "2.0", ID: req.ID, Error: c.toRPCError(req.Method, err)})
		return
	}
	_ = c.stream.WriteObject(resultResponse{JSONRPC: "2.0", ID: req.ID, Result: result})
}

type resultResponse struct {
	JSONRPC string      `json:"jsonrpc"`
	ID      jsonrpc2.ID `json:"id"`
	Result  any         `json:"result"`
}

// encodeReply builds the bytes of a success response, for replies
// released through stream.release.
func encodeReply(req *jsonrpc2.Request, result any) []byte {
	b, err := json.Marshal(resultResponse{JSONRPC: "2.0", ID: req.ID, Result: result})
	if err != nil {
		b, _ = json.Marshal(response{JSONRPC: "2.0", ID: req.ID, Error: &jsonrpc2.Error{Code: protocol.CodeInternalError, Message: "encode result: " + err.Error()}})
	}
	return b
}

func (c *conn) toRPCError(method string, err error) *jsonrpc2.Error {
	code := protocol.CodeOf(err)
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		c.log.Error("internal error", "method", method, "err", err)
	}
	e := &jsonrpc2.Error{Code: code, Message: err.Error()}
	if data := protocol.DataOf(err); data != nil {
		e.SetError(data)
	}
	return e
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
			return protocol.Errorf(protocol.CodeInvalidParams, "%s: params.%s must be %s, not %s", req.Method, te.Field, te.Type, te.Value)
		}
		return protocol.Errorf(protocol.CodeInvalidParams, "%s: %v", req.Method, err)
	}
	return nil
}

// recoverRequest turns a panic in a handler into an internal error reply.
func (c *conn) recoverRequest(req *jsonrpc2.Request) {
	if r := recover(); r != nil {
		c.log.Error("panic in handler", "method", req.Method, "panic", r, "stack", string(debug.Stack()))
		c.reply(req, nil, fmt.Errorf("internal error in %s", req.Method))
	}
}
