package server

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/changesetd/changesetd/metrics"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// handle runs on the read loop: it decodes and routes, and anything that
// waits on a session runs elsewhere.
func (c *conn) handle(req *jsonrpc2.Request) {
	defer c.recoverRequest(req)
	c.mu.Lock()
	initialized := c.initialized
	c.mu.Unlock()
	switch req.Method {
	case protocol.MethodPing:
		c.reply(req, nil, nil)
		return
	case protocol.MethodInitialize:
		c.initialize(req)
		return
	case protocol.MethodReconnect:
		c.reconnect(req)
		return
	}
	if !initialized {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidRequest, "%s before initialize: send initialize (or reconnect) first", req.Method))
		return
	}
	switch req.Method {
	case protocol.MethodSubscribe:
		c.subscribe(req)
	case protocol.MethodUnsubscribe:
		c.unsubscribe(req)
	case protocol.MethodDispatchAction:
		c.dispatchAction(req)
	case protocol.MethodListSessions:
		c.listSessions(req)
	case protocol.MethodCreateSession:
		c.createSession(req)
	case protocol.MethodDisposeSession:
		c.disposeSession(req)
	case protocol.MethodResourceRead:
		c.resourceRead(req)
	case protocol.MethodInvokeChangesetOperation:
		c.invokeOperation(req)
	case protocol.MethodTurnStart:
		c.turnStart(req)
	case protocol.MethodTurnEnd:
		c.turnEnd(req)
	case protocol.MethodEditEvents:
		c.editEvents(req)
	case protocol.MethodAnnotationsDelivered:
		c.annotationsDelivered(req)
	case protocol.MethodHunksReviewChanged:
		c.hunksReviewChanged(req)
	default:
		c.reply(req, nil, protocol.Errorf(protocol.CodeMethodNotFound, "method %q is not supported by this server", req.Method))
	}
}

func (c *conn) initialize(req *jsonrpc2.Request) {
	var p protocol.InitializeParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	c.mu.Lock()
	already := c.initialized
	c.mu.Unlock()
	if already {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidRequest, "initialize: this connection is already initialized"))
		return
	}
	if p.ClientID == "" {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "initialize: clientId is required"))
		return
	}
	version, err := protocol.Negotiate(p.ProtocolVersions)
	if err != nil {
		c.reply(req, nil, err)
		if protocol.CodeOf(err) == protocol.CodeUnsupportedProtocolVersion {
			c.stream.closeWith(websocket.CloseNormalClosure, "unsupported protocol version")
		}
		return
	}
	c.mu.Lock()
	c.initialized, c.clientID, c.version = true, p.ClientID, version
	c.legacy.Store(protocol.IsLegacy(version))
	c.mu.Unlock()
	c.srv.rememberVersion(p.ClientID, version)
	c.setLogger(c.logger().With("client", p.ClientID))
	c.logger().Info("initialized", "version", version)

	c.stream.hold()
	c.async(req, func() {
		snaps, _ := c.attachAll(p.InitialSubscriptions, -1)
		res := protocol.InitializeResult{
			ProtocolVersion: version,
			ServerSeq:       c.srv.m.Seq(),
			Snapshots:       []protocol.Snapshot{},
			ServerInfo:      &protocol.ServerInfo{Name: "changesetd", Version: c.srv.cfg.Version},
		}
		for _, a := range snaps {
			if a.err == nil {
				res.Snapshots = append(res.Snapshots, a.at.Snapshot)
			}
		}
		c.stream.release(c.encodeReply(req, res))
	})
}

type attachResult struct {
	uri string
	at  session.Attachment
	err error
}

// attachAll attaches the connection to each uri, waits for every owner to
// answer and records the successful subscriptions. The caller holds the
// stream so nothing delivered meanwhile overtakes its reply.
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
		metrics.Subscriptions.Inc()
	}
	c.subs[uri] = struct{}{}
	return nil
}

func (c *conn) releaseSub(uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.subs[uri]; ok {
		metrics.Subscriptions.Dec()
	}
	delete(c.subs, uri)
}

func (c *conn) subscribe(req *jsonrpc2.Request) {
	var p protocol.SubscribeParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
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
	// The owner calls back on its goroutine with the registration in
	// effect; replying from there queues the snapshot ahead of any action
	// the owner commits next.
	c.srv.m.Attach(c, p.Channel, -1, func(at session.Attachment, err error) {
		if err != nil {
			c.releaseSub(p.Channel)
			c.reply(req, nil, err)
			return
		}
		snap := at.Snapshot
		c.reply(req, protocol.SubscribeResult{Snapshot: &snap}, nil)
	})
}

func (c *conn) unsubscribe(req *jsonrpc2.Request) {
	var p protocol.UnsubscribeParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	c.releaseSub(p.Channel)
	c.srv.m.Detach(c, p.Channel)
	c.reply(req, nil, nil)
}

func (c *conn) dispatchAction(req *jsonrpc2.Request) {
	var p protocol.DispatchActionParams
	if err := decode(req, &p); err != nil {
		c.logger().Warn("dropping malformed dispatchAction", "err", err)
		c.reply(req, nil, err)
		return
	}
	if p.Action.Action == nil {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "dispatchAction: action is required"))
		return
	}
	c.srv.m.Dispatch(c, p.Channel, p.ClientSeq, p.Action.Action)
	c.reply(req, nil, nil)
}

func (c *conn) reconnect(req *jsonrpc2.Request) {
	var p protocol.ReconnectParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	if p.ClientID == "" {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "reconnect: clientId is required"))
		return
	}
	if p.LastSeenServerSeq < 0 {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "reconnect: lastSeenServerSeq must not be negative"))
		return
	}
	c.mu.Lock()
	if !c.initialized {
		version, ok := c.srv.versionOf(p.ClientID)
		if !ok {
			version = "1.0.0"
		}
		c.initialized, c.clientID, c.version = true, p.ClientID, version
		c.legacy.Store(protocol.IsLegacy(version))
		c.setLogger(c.logger().With("client", p.ClientID))
	} else if c.clientID != p.ClientID {
		c.mu.Unlock()
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "reconnect: clientId %q differs from this connection's %q", p.ClientID, c.clientID))
		return
	}
	c.mu.Unlock()

	c.stream.hold()
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
		c.stream.release(c.encodeReply(req, res))
	})
}

func (c *conn) listSessions(req *jsonrpc2.Request) {
	var p protocol.ListSessionsParams
	if req.Params != nil {
		if err := decode(req, &p); err != nil {
			c.reply(req, nil, err)
			return
		}
	}
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

func (c *conn) createSession(req *jsonrpc2.Request) {
	var p protocol.CreateSessionParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	_, err := c.srv.m.Create(session.CreateParams{URI: p.Channel, Provider: p.Provider, WorkingDirectories: p.WorkingDirectories})
	c.reply(req, nil, err)
}

func (c *conn) disposeSession(req *jsonrpc2.Request) {
	var p protocol.DisposeSessionParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	c.async(req, func() {
		c.reply(req, nil, c.srv.m.Dispose(p.Channel))
	})
}

// maxResourceBytes bounds one resourceRead: content larger than this is
// not something a review panel renders inline.
const maxResourceBytes = 64 << 20

func (c *conn) resourceRead(req *jsonrpc2.Request) {
	var p protocol.ResourceReadParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	if p.Encoding != "" && p.Encoding != "base64" && p.Encoding != "utf-8" {
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidParams, "resourceRead: encoding must be \"base64\" or \"utf-8\", not %q", p.Encoding))
		return
	}
	c.async(req, func() {
		data, err := c.srv.m.ReadResource(c.ctx, p.URI, maxResourceBytes)
		if err != nil {
			c.reply(req, nil, err)
			return
		}
		res := protocol.ResourceReadResult{Encoding: "base64"}
		if p.Encoding != "base64" && utf8.Valid(data) {
			res.Encoding, res.Data = "utf-8", string(data)
		} else {
			res.Data = base64.StdEncoding.EncodeToString(data)
		}
		c.reply(req, res, nil)
	})
}

func (c *conn) invokeOperation(req *jsonrpc2.Request) {
	var p protocol.InvokeChangesetOperationParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	c.async(req, func() {
		res, err := c.srv.m.Invoke(c.ctx, p)
		if err != nil {
			c.reply(req, nil, err)
			return
		}
		if res == nil {
			// The result is an object whose members are all optional:
			// {} when there is nothing to say, never null.
			res = &protocol.InvokeChangesetOperationResult{}
		}
		c.reply(req, res, nil)
	})
}

func (c *conn) turnStart(req *jsonrpc2.Request) {
	var p protocol.TurnStartParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	c.async(req, func() {
		info, err := c.srv.m.TurnStart(c.ctx, p.Channel, p.TurnID, p.Message)
		c.reply(req, info, err)
	})
}

func (c *conn) turnEnd(req *jsonrpc2.Request) {
	var p protocol.TurnEndParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	c.async(req, func() {
		info, err := c.srv.m.TurnEnd(c.ctx, p.Channel, p.TurnID)
		c.reply(req, info, err)
	})
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

func (c *conn) editEvents(req *jsonrpc2.Request) {
	var p protocol.EditEventsParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	c.async(req, func() {
		res, err := c.srv.m.EditEvents(c.ctx, p.Channel, p.Events)
		c.reply(req, res, err)
	})
}

func (c *conn) hunksReviewChanged(req *jsonrpc2.Request) {
	var p protocol.HunksReviewChangedParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	c.async(req, func() {
		c.reply(req, struct{}{}, c.srv.m.SetHunksReviewed(c.ctx, p))
	})
}

func (c *conn) annotationsDelivered(req *jsonrpc2.Request) {
	var p protocol.AnnotationsDeliveredParams
	if err := decode(req, &p); err != nil {
		c.reply(req, nil, err)
		return
	}
	c.async(req, func() {
		err := c.srv.m.AnnotationsDelivered(c.ctx, p.Channel, p.AnnotationIDs, p.TurnID)
		c.reply(req, struct{}{}, err)
	})
}
