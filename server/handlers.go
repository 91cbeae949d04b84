package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// handle routes a request by the method table, on the goroutine serving
// the connection's queue (or on the read loop for a preempted method);
// anything that waits on a session runs elsewhere (order.go).
func (c *conn) handle(req *jsonrpc2.Request) {
	defer c.recoverRequest(req)
	r, ok := c.srv.routes[req.Method]
	if !(ok && r.beforeInit) && !c.isInitialized() {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidRequest, "%s before initialize: send initialize (or reconnect) first", req.Method))
		return
	}
	if !ok {
		c.reply(req, nil, protocol.Errorf(protocol.CodeMethodNotFound, "method %q is not supported by this server", req.Method))
		return
	}
	r.serve(c, req)
}

func (c *conn) isInitialized() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.initialized
}

// route is one row of the method table.
type route struct {
	beforeInit bool // answered before initialize too
	serve      func(c *conn, req *jsonrpc2.Request)
}

// routes is the method table: each row decodes its params into their
// type and hands them to the method, which replies inline (onLoop), runs
// off the connection's queue and returns its result (offLoop), or does
// so having let the queue go on once it took its place (lateReply).
// Each Server serves a copy (Server.routes).
var routes map[string]route

func init() {
	routes = map[string]route{
		protocol.MethodPing:                     {beforeInit: true, serve: func(c *conn, req *jsonrpc2.Request) { c.reply(req, nil, nil) }},
		protocol.MethodInitialize:               {beforeInit: true, serve: onLoop((*conn).initialize)},
		protocol.MethodReconnect:                {beforeInit: true, serve: onLoop((*conn).reconnect)},
		protocol.MethodSubscribe:                {serve: onLoop((*conn).subscribe)},
		protocol.MethodUnsubscribe:              {serve: onLoop((*conn).unsubscribe)},
		protocol.MethodDispatchAction:           {serve: onLoop((*conn).dispatchAction)},
		protocol.MethodListSessions:             {serve: optionalParams(onLoop((*conn).listSessions))},
		protocol.MethodCreateSession:            {serve: onLoop((*conn).createSession)},
		protocol.MethodDisposeSession:           {serve: offLoop((*conn).disposeSession)},
		protocol.MethodResourceRead:             {serve: onLoop((*conn).resourceRead)},
		protocol.MethodResourceResolve:          {serve: onLoop((*conn).resourceResolve)},
		protocol.MethodResourceList:             {serve: onLoop((*conn).resourceList)},
		protocol.MethodInvokeChangesetOperation: {serve: lateReply((*conn).invokeOperation)},
		protocol.MethodFetchTurns:               {serve: offLoop((*conn).fetchTurns)},
		protocol.MethodSetBranchBase:            {serve: offLoop((*conn).setBranchBase)},
		protocol.MethodDraft:                    {serve: offLoop((*conn).draft)},
		protocol.MethodTurnStart:                {serve: offLoop((*conn).turnStart)},
		protocol.MethodTurnEnd:                  {serve: offLoop((*conn).turnEnd)},
		protocol.MethodEditEvents:               {serve: offLoop((*conn).editEvents)},
		protocol.MethodAnnotationsDelivered:     {serve: offLoop((*conn).annotationsDelivered)},
		protocol.MethodHunksReviewChanged:       {serve: offLoop((*conn).hunksReviewChanged)},
	}
}

// onLoop decodes P and runs h where the request is handled (the
// connection's queue); h replies, now or from wherever it hands the work
// to.
func onLoop[P any](h func(c *conn, req *jsonrpc2.Request, p P)) func(*conn, *jsonrpc2.Request) {
	return func(c *conn, req *jsonrpc2.Request) {
		var p P
		if err := decode(req, &p); err != nil {
			c.reply(req, nil, err)
			return
		}
		h(c, req, p)
	}
}

// offLoop decodes P and runs h on a goroutine of the connection, replying
// with what h returns; the connection's next request starts once h has
// returned.
func offLoop[P, R any](h func(c *conn, p P) (R, error)) func(*conn, *jsonrpc2.Request) {
	return onLoop(func(c *conn, req *jsonrpc2.Request, p P) {
		c.async(req, func() {
			res, err := h(c, p)
			c.reply(req, res, err)
		})
	})
}

// optionalParams lets a method be called without params, as if with {}.
func optionalParams(serve func(*conn, *jsonrpc2.Request)) func(*conn, *jsonrpc2.Request) {
	return func(c *conn, req *jsonrpc2.Request) {
		if req.Params == nil {
			empty := json.RawMessage("{}")
			req.Params = &empty
		}
		serve(c, req)
	}
}

func (c *conn) initialize(req *jsonrpc2.Request, p protocol.InitializeParams) {
	c.mu.Lock()
	already := c.initialized
	c.mu.Unlock()
	if already {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidRequest, "initialize: this connection is already initialized"))
		return
	}
	if err := checkClientID("initialize", p.ClientID); err != nil {
		c.reply(req, nil, err)
		return
	}
	version, err := protocol.Negotiate(p.ProtocolVersions)
	if err != nil {
		// The socket stays open after an UnsupportedProtocolVersion: the
		// client closes it. VS Code shows the host as incompatible only
		// while its transport is still up, and retries a closed one.
		c.reply(req, nil, err)
		return
	}
	c.mu.Lock()
	c.initialized, c.clientID, c.version = true, p.ClientID, version
	c.legacy.Store(protocol.IsLegacy(version))
	c.mu.Unlock()
	c.srv.rememberVersion(p.ClientID, version)
	c.setLogger(c.logger().With("client", p.ClientID))
	c.logger().Info("initialized", "version", version)

	sl := c.stream.reserve()
	c.async(req, func() {
		snaps, _ := c.attachAll(p.InitialSubscriptions, -1)
		res := protocol.InitializeResult{
			ProtocolVersion: version,
			ServerSeq:       c.srv.m.Seq(),
			Snapshots:       []protocol.Snapshot{},
			ServerInfo:      &protocol.ServerInfo{Name: "changesetd", Version: c.srv.cfg.Version},
			Meta:            protocol.Object{protocol.MetaSessionURIs: true},
		}
		for _, a := range snaps {
			if a.err == nil {
				res.Snapshots = append(res.Snapshots, a.at.Snapshot)
			}
		}
		c.stream.fill(sl, c.encodeReply(req, res))
	})
}

type attachResult struct {
	uri string
	at  session.Attachment
	err error
}

// attachAll attaches the connection to each uri, waits for every owner to
// answer and records the successful subscriptions. The caller reserved
// its reply's place in the stream, so nothing delivered meanwhile
// overtakes the reply.
func (c *conn) attachAll(uris []string, lastSeen int64) ([]attachResult, error) {
	out := make([]attachResult, len(uris))
	var wg sync.WaitGroup
	for i, uri := range uris {
		out[i].uri = uri
		if err := c.reserveSub(uri); err != nil {
			out[i].err = err
			continue
		}
		wg.Add(1)
		c.srv.m.Attach(c, uri, lastSeen, func(at session.Attachment, err error) {
			out[i].at, out[i].err = at, err
			wg.Done()
		})
	}
	wg.Wait()
	for _, r := range out {
		if r.err != nil {
			c.releaseSub(r.uri)
		}
	}
	return out, nil
}

// reserveSub records a subscription before it is made, enforcing the
// per-connection cap.
func (c *conn) reserveSub(uri string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.subs[uri]
	if !ok && len(c.subs) >= c.srv.cfg.MaxSubs {
		return protocol.Errorf(protocol.CodeInvalidRequest, "subscribe %s: this connection already has %d subscriptions (the limit)", uri, c.srv.cfg.MaxSubs)
	}
	if !ok {
		c.srv.cfg.Metrics.Subscriptions(+1)
	}
	c.subs[uri] = struct{}{}
	return nil
}

func (c *conn) releaseSub(uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.subs[uri]; ok {
		c.srv.cfg.Metrics.Subscriptions(-1)
	}
	delete(c.subs, uri)
}

func (c *conn) subscribe(req *jsonrpc2.Request, p protocol.SubscribeParams) {
	if p.Channel == "" {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "subscribe: channel is required"))
		return
	}
	if err := checkDelivery(p.Delivery); err != nil {
		c.reply(req, nil, err)
		return
	}
	if err := c.reserveSub(p.Channel); err != nil {
		c.reply(req, nil, err)
		return
	}
	// The owner calls back with the registration in effect, under the
	// sequencing lock: there the reply only takes its place in the
	// stream, ahead of any action committed next. The snapshot, which
	// may be thousands of files, is encoded after, off the lock, so no
	// other channel's publish waits for it.
	c.async(req, func() {
		var (
			snap protocol.Snapshot
			sl   *slot
			aerr error
		)
		registered := make(chan struct{})
		c.srv.m.Attach(c, p.Channel, -1, func(at session.Attachment, err error) {
			defer close(registered)
			if aerr = err; err == nil {
				snap, sl = at.Snapshot, c.stream.reserve()
			}
		})
		<-registered
		if aerr != nil {
			c.releaseSub(p.Channel)
			c.reply(req, nil, aerr)
			return
		}
		c.stream.fillParts(sl, c.encodeReplyParts(req, protocol.SubscribeResult{Snapshot: &snap}))
	})
}

func (c *conn) unsubscribe(req *jsonrpc2.Request, p protocol.UnsubscribeParams) {
	c.releaseSub(p.Channel)
	c.srv.m.Detach(c, p.Channel)
	c.reply(req, nil, nil)
}

func (c *conn) dispatchAction(req *jsonrpc2.Request, p protocol.DispatchActionParams) {
	if p.Action.Action == nil {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "dispatchAction: action is required"))
		return
	}
	c.srv.m.Dispatch(c, p.Channel, p.ClientSeq, p.Action.Action)
	c.reply(req, nil, nil)
}

func (c *conn) reconnect(req *jsonrpc2.Request, p protocol.ReconnectParams) {
	if err := checkClientID("reconnect", p.ClientID); err != nil {
		c.reply(req, nil, err)
		return
	}
	if p.LastSeenServerSeq < 0 {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "reconnect: lastSeenServerSeq must not be negative"))
		return
	}
	c.mu.Lock()
	if !c.initialized {
		version, ok := c.srv.versionOf(p.ClientID)
		if !ok || version == "" {
			// Not a client of this run (the daemon restarted, or the
			// client was gone too long): its version is unknown, so it
			// must initialize again rather than be served a guessed one.
			c.mu.Unlock()
			c.reply(req, nil, protocol.Errorf(protocol.CodeNotFound, "reconnect: client %q is not known to this server (it restarted, or the client was gone longer than %s); send initialize", p.ClientID, clientGrace))
			return
		}
		c.initialized, c.clientID, c.version = true, p.ClientID, version
		c.legacy.Store(protocol.IsLegacy(version))
		c.setLogger(c.logger().With("client", p.ClientID))
		c.srv.rememberVersion(p.ClientID, "")
	} else if c.clientID != p.ClientID {
		c.mu.Unlock()
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "reconnect: clientId %q differs from this connection's %q", p.ClientID, c.clientID))
		return
	}
	c.mu.Unlock()

	sl := c.stream.reserve()
	c.async(req, func() {
		results, _ := c.attachAll(p.Subscriptions, p.LastSeenServerSeq)
		res := protocol.ReconnectResult{Type: protocol.ReconnectReplay, Missing: []string{}, Actions: []protocol.ActionEnvelope{}}
		replayable := true
		for _, r := range results {
			if r.err != nil {
				res.Missing = append(res.Missing, r.uri)
				continue
			}
			if !r.at.CanReplay {
				replayable = false
			}
		}
		if replayable {
			for _, r := range results {
				if r.err == nil {
					res.Actions = append(res.Actions, r.at.Replay...)
				}
			}
			slices.SortFunc(res.Actions, func(a, b protocol.ActionEnvelope) int { return cmp.Compare(a.ServerSeq, b.ServerSeq) })
		} else {
			res.Type, res.Actions, res.Snapshots = protocol.ReconnectSnapshot, nil, []protocol.Snapshot{}
			for _, r := range results {
				if r.err == nil {
					res.Snapshots = append(res.Snapshots, r.at.Snapshot)
				}
			}
		}
		c.logger().Info("reconnected", "type", res.Type, "channels", len(results), "missing", len(res.Missing))
		c.stream.fill(sl, c.encodeReply(req, res))
	})
}

func (c *conn) listSessions(req *jsonrpc2.Request, p protocol.ListSessionsParams) {
	offset := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(p.Cursor, "o:"))
		if !strings.HasPrefix(p.Cursor, "o:") || err != nil || n < 0 {
			c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "listSessions: cursor %q was not issued by this server", p.Cursor))
			return
		}
		offset = n
	}
	if p.Limit != nil && *p.Limit <= 0 {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "listSessions: limit must be positive"))
		return
	}
	c.async(req, func() {
		items, err := c.srv.m.List(c.ctx)
		if err != nil {
			c.reply(req, nil, err)
			return
		}
		res := protocol.ListSessionsResult{Items: []protocol.SessionSummary{}}
		if offset < len(items) {
			items = items[offset:]
			if p.Limit != nil && *p.Limit < len(items) {
				items = items[:*p.Limit]
				res.NextCursor = fmt.Sprintf("o:%d", offset+*p.Limit)
			}
			res.Items = items
		}
		c.reply(req, res, nil)
	})
}

func (c *conn) createSession(req *jsonrpc2.Request, p protocol.CreateSessionParams) {
	_, err := c.srv.m.Create(session.CreateParams{URI: p.Channel, Provider: p.Provider, WorkingDirectories: p.WorkingDirectories})
	c.reply(req, nil, err)
}

func (c *conn) disposeSession(p protocol.DisposeSessionParams) (any, error) {
	return nil, c.srv.m.Dispose(p.Channel)
}

// maxResourceBytes bounds one resourceRead: content larger than this is
// not something a review panel renders inline.
const maxResourceBytes = 64 << 20

// Reads in flight, per connection and for the whole server. A read holds
// its content (at most maxResourceBytes), encoded only as it is written,
// until the reply has been written to the socket, not merely queued: a
// client that pipelines reads and does not read the replies holds at
// most DefaultReadsPerConn contents in the daemon, and all clients
// together DefaultReadsTotal, 256 MiB at the most; with the collector's
// headroom the daemon stays within 512 MiB. Further reads wait their
// turn, in order of arrival per connection.
const (
	DefaultReadsPerConn = 2
	DefaultReadsTotal   = 4
)

func (c *conn) resourceRead(req *jsonrpc2.Request, p protocol.ResourceReadParams) {
	if p.Encoding != "" && p.Encoding != "base64" && p.Encoding != "utf-8" {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "resourceRead: encoding must be \"base64\" or \"utf-8\", not %q", p.Encoding))
		return
	}
	c.async(req, func() {
		release, err := c.acquireRead()
		if err != nil {
			c.reply(req, nil, err)
			return
		}
		defer release()
		data, err := c.srv.readResource(c.ctx, p.URI, maxResourceBytes)
		if err != nil {
			c.reply(req, nil, err)
			return
		}
		if int64(len(data)) > maxResourceBytes {
			c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "resourceRead %s: content is larger than %d bytes, the most one read returns", p.URI, maxResourceBytes))
			return
		}
		// The reply is encoded as it is written, a piece at a time: a read
		// holds its content until then, not the content and its encoding.
		body := newResourceReply(rawID(req.ID), data, p.Encoding != "base64" && utf8.Valid(data))
		data = nil
		c.answeredID(req)
		written, err := c.stream.writeBody(body)
		body = nil
		if err != nil {
			return
		}
		// The place is given back once the reply has left: a dropped
		// reply (the connection closing) ends the connection's context.
		select {
		case <-written:
		case <-c.ctx.Done():
		}
	})
}

// readWaiting, when set (by tests only), is called with +1 as a read
// starts waiting for a place among its connection's reads, and -1 once
// it has one.
var readWaiting func(delta int)

// acquireRead waits for a place among the reads in flight of the
// connection and then of the server.
func (c *conn) acquireRead() (release func(), err error) {
	select {
	case c.reads <- struct{}{}:
	default:
		if readWaiting != nil {
			readWaiting(+1)
			defer readWaiting(-1)
		}
		select {
		case c.reads <- struct{}{}:
		case <-c.ctx.Done():
			return nil, protocol.Errorf(protocol.CodeInternalError, "resourceRead: the connection is closing")
		}
	}
	select {
	case c.srv.reads <- struct{}{}:
	case <-c.ctx.Done():
		<-c.reads
		return nil, protocol.Errorf(protocol.CodeInternalError, "resourceRead: the connection is closing")
	}
	return func() { <-c.srv.reads; <-c.reads }, nil
}

// resourceReply is the success response of a resourceRead, as
// encoding/json would write it, kept as the content until it is written:
// the content is encoded a piece at a time into the socket (writeTo)
// instead of into a string, a result struct, an encoder's buffer and a
// frame in turn.
type resourceReply struct {
	head, tail []byte
	data       []byte
	text       bool // data is valid UTF-8, sent as a JSON string; else base64
}

func newResourceReply(id json.RawMessage, data []byte, text bool) *resourceReply {
	enc := "base64"
	if text {
		enc = "utf-8"
	}
	head := append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":{"data":"`...)
	return &resourceReply{head: head, tail: []byte(`","encoding":"` + enc + `"}}`), data: data, text: text}
}

// size is about what the reply takes on the wire.
func (r *resourceReply) size() int64 {
	n := base64.StdEncoding.EncodedLen(len(r.data))
	if r.text {
		n = len(r.data) + len(r.data)/8
	}
	return int64(len(r.head) + n + len(r.tail))
}

// writeTo writes the reply to w in pieces of about chunk bytes, calling
// before ahead of each (writeChunks).
func (r *resourceReply) writeTo(w io.Writer, chunk int, before func()) error {
	if err := writeChunks(w, chunk, before, r.head); err != nil {
		return err
	}
	buf := make([]byte, 0, chunk+chunk/8+8)
	for p := r.data; len(p) > 0; {
		var n int
		if r.text {
			// A piece ends at the start of a character, so each is
			// escaped as the whole would be.
			n = min(len(p), chunk*7/8)
			for n < len(p) && !utf8.RuneStart(p[n]) {
				n++
			}
			buf = appendJSONStringBody(buf[:0], p[:n])
		} else {
			n = min(len(p), chunk/4*3) // whole groups of three bytes
			buf = base64.StdEncoding.AppendEncode(buf[:0], p[:n])
		}
		before()
		if _, err := w.Write(buf); err != nil {
			return err
		}
		p = p[n:]
	}
	return writeChunks(w, chunk, before, r.tail)
}

// writeChunks writes each of parts to w in pieces of at most chunk bytes,
// calling before ahead of each.
func writeChunks(w io.Writer, chunk int, before func(), parts ...[]byte) error {
	for _, p := range parts {
		for len(p) > 0 {
			n := min(len(p), chunk)
			before()
			if _, err := w.Write(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
	}
	return nil
}

// encodeResourceReply returns the whole reply in one buffer.
func encodeResourceReply(id json.RawMessage, data []byte, text bool) []byte {
	var b bytes.Buffer
	_ = newResourceReply(id, data, text).writeTo(&b, writeChunk, func() {})
	return b.Bytes()
}

// appendJSONStringBody appends valid UTF-8 text escaped as encoding/json
// escapes a string (HTML characters and U+2028/U+2029 included), without
// the quotes.
func appendJSONStringBody(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

func (c *conn) invokeOperation(ctx context.Context, p protocol.InvokeChangesetOperationParams) (*protocol.InvokeChangesetOperationResult, error) {
	p.Target = session.LocalTarget(p.Target) // VS Code holds files under its own wrapped URIs
	res, err := c.srv.m.Invoke(ctx, p)
	if err == nil && res == nil {
		// The result is an object whose members are all optional: {}
		// when there is nothing to say, never null.
		res = &protocol.InvokeChangesetOperationResult{}
	}
	return res, err
}

func (c *conn) turnStart(p protocol.TurnStartParams) (any, error) {
	return c.srv.m.TurnStart(c.ctx, p.Channel, p.TurnID, p.Message)
}

func (c *conn) turnEnd(p protocol.TurnEndParams) (any, error) {
	return c.srv.m.TurnEnd(c.ctx, p.Channel, p.TurnID)
}

// fetchTurns loads a chat's older turns into its state; the answer is {}.
func (c *conn) fetchTurns(p protocol.FetchTurnsParams) (any, error) {
	if err := c.srv.m.FetchTurns(c.ctx, p.Channel, p.Cursor); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// setBranchBase chooses a session's branch base; the answer is {}.
func (c *conn) setBranchBase(p protocol.SetBranchBaseParams) (any, error) {
	if err := c.srv.m.SetBranchBase(c.ctx, p.Channel, p.Base); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// draft publishes a provisional version of a file.
func (c *conn) draft(p protocol.DraftParams) (any, error) {
	return c.srv.m.Draft(c.ctx, p.Channel, p.Resource, p.Text, p.Final)
}

// checkDelivery validates subscribe's delivery options. maxLatencyMs
// bounds how long the server may hold an action back to coalesce it; this
// server never holds one back after it is committed (file-system events
// are coalesced for a few milliseconds before they become actions), so
// every valid bound, 0 included, is met as it is.
func checkDelivery(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var d struct {
		MaxLatencyMs *json.Number `json:"maxLatencyMs"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return protocol.Errorf(protocol.CodeInvalidParams, "subscribe: delivery must be an object with an optional maxLatencyMs")
	}
	if d.MaxLatencyMs != nil {
		if n, err := d.MaxLatencyMs.Int64(); err != nil || n < 0 {
			return protocol.Errorf(protocol.CodeInvalidParams, "subscribe: delivery.maxLatencyMs must be a non-negative integer, not %s", *d.MaxLatencyMs)
		}
	}
	return nil
}

func (c *conn) editEvents(p protocol.EditEventsParams) (any, error) {
	return c.srv.m.EditEvents(c.ctx, p.Channel, p.Events)
}

func (c *conn) annotationsDelivered(p protocol.AnnotationsDeliveredParams) (struct{}, error) {
	return struct{}{}, c.srv.m.AnnotationsDelivered(c.ctx, p.Channel, p.AnnotationIDs, p.TurnID)
}

// hunksReviewChanged sets or clears the reviewed mark of hunks of a file;
// the answer is {}.
func (c *conn) hunksReviewChanged(p protocol.HunksReviewChangedParams) (any, error) {
	if err := c.srv.m.SetHunksReviewed(c.ctx, p); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}
