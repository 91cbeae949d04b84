package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/changesetd/changesetd/metrics"
	"github.com/changesetd/changesetd/protocol"
)

// closeMsg asks the writer to send a close frame and stop.
type closeMsg struct {
	code   int
	reason string
}

// stream frames JSON-RPC over one WebSocket connection. Writes never
// block: they go to a bounded queue drained by one writer goroutine.
// Reads decode each frame once and answer malformed ones directly.
//
// The queue is a slice that grows with what is pending, not a channel
// sized for the worst case: an idle connection costs no queue memory, and
// a thousand subscribers cost a thousand small slices.
type stream struct {
	ws       *websocket.Conn
	maxFrame int64
	cfg      *Config
	onClose  func(code int, reason string) // called once, from the goroutine that decided to close

	wake chan struct{} // capacity 1: something is pending or a close was asked for

	mu        sync.Mutex
	pending   [][]byte  // frames queued for the writer, oldest first
	closeReq  *closeMsg // set once; written after pending
	held      int       // hold depth; while > 0 writes go to heldBuf
	heldBuf   [][]byte  // frames written while held
	closing   bool
	closeOnce sync.Once
	done      chan struct{} // closed when the writer exits
	readOnce  sync.Once
	readDone  chan struct{} // closed when reading has ended
}

// closeGrace is how long the writer waits, after sending a close frame,
// for the peer's close before dropping the TCP connection. Closing at once
// would reset the connection and could destroy the close frame in flight.
const closeGrace = 2 * time.Second

// maxDrain bounds how much of an oversized frame is read and discarded so
// that the close frame reaches the peer instead of a TCP reset.
const maxDrain = 64 << 20

func newStream(ws *websocket.Conn, cfg *Config, onClose func(int, string)) *stream {
	s := &stream{
		ws:       ws,
		maxFrame: cfg.MaxFrameBytes,
		cfg:      cfg,
		onClose:  onClose,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		readDone: make(chan struct{}),
	}
	// A peer that answers our pings (or pings us) is alive even when it
	// sends no messages: each control frame extends the read deadline.
	extend := func() { ws.SetReadDeadline(time.Now().Add(cfg.ReadTimeout)) }
	ws.SetPongHandler(func(string) error { extend(); return nil })
	ws.SetPingHandler(func(data string) error {
		extend()
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(cfg.WriteTimeout))
		if err == websocket.ErrCloseSent {
			return nil
		}
		return err
	})
	go s.writeLoop()
	return s
}

// WriteObject encodes obj and queues it. A full queue means the peer is
// not reading: the connection is closed with a reason rather than
// silently dropping the frame.
func (s *stream) WriteObject(obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("server: encode frame: %w", err)
	}
	return s.write(data)
}

func (s *stream) write(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return io.ErrClosedPipe
	}
	if s.held > 0 {
		s.heldBuf = append(s.heldBuf, data)
		if len(s.heldBuf) > s.cfg.SendQueue {
			s.overflowLocked()
			return io.ErrClosedPipe
		}
		return nil
	}
	return s.enqueueLocked(data)
}

func (s *stream) enqueueLocked(data []byte) error {
	if len(s.pending) >= s.cfg.SendQueue {
		s.overflowLocked()
		return io.ErrClosedPipe
	}
	s.pending = append(s.pending, data)
	s.signal()
	return nil
}

// signal wakes the writer; a wake already pending covers this one.
func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// overflowLocked closes a connection whose client stopped reading. What
// is queued is dropped: the close frame goes out next.
func (s *stream) overflowLocked() {
	metrics.SlowClients.Inc()
	reason := fmt.Sprintf("send queue overflow: client did not read %d pending messages", s.cfg.SendQueue)
	s.pending = nil
	s.closeLocked(websocket.ClosePolicyViolation, reason)
}

// hold diverts writes into a side buffer until release; it lets a reply
// that gathers several channels precede every action queued meanwhile.
func (s *stream) hold() {
	s.mu.Lock()
	s.held++
	s.mu.Unlock()
}

// release queues first and then everything written while held.
func (s *stream) release(first []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held--
	if s.closing {
		return
	}
	if s.held > 0 {
		// An outer hold is still open: keep order behind it.
		s.heldBuf = append([][]byte{first}, s.heldBuf...)
		return
	}
	buf := s.heldBuf
	s.heldBuf = nil
	if first != nil && s.enqueueLocked(first) != nil {
		return
	}
	for _, b := range buf {
		if s.enqueueLocked(b) != nil {
			return
		}
	}
}

func (s *stream) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// closeWith sends a close frame after everything already queued.
func (s *stream) closeWith(code int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked(code, reason)
}

func (s *stream) closeLocked(code int, reason string) {
	if s.closing {
		return
	}
	s.closing = true
	s.closeReq = &closeMsg{code: code, reason: reason}
	s.signal()
	s.closeOnce.Do(func() {
		if s.onClose != nil {
			go s.onClose(code, reason)
		}
	})
}

func (s *stream) writeLoop() {
	defer close(s.done)
	defer s.ws.Close()
	ping := time.NewTicker(s.cfg.PingInterval)
	defer ping.Stop()
	var spare [][]byte // the previous batch's backing array, reused
	for {
		select {
		case <-s.wake:
		case <-ping.C:
			if err := s.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.cfg.WriteTimeout)); err != nil {
				s.closeWith(websocket.CloseAbnormalClosure, "ping failed")
				return
			}
			continue
		}
		for {
			s.mu.Lock()
			if len(s.pending) == 0 {
				cm := s.closeReq
				s.mu.Unlock()
				if cm == nil {
					break
				}
				msg := websocket.FormatCloseMessage(cm.code, truncateReason(cm.reason))
				_ = s.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(s.cfg.WriteTimeout))
				select {
				case <-s.readDone:
				case <-time.After(closeGrace):
				}
				return
			}
			// Swap arrays with the producers: the batch is the writer's
			// alone until it becomes the spare again.
			batch := s.pending
			s.pending = spare[:0]
			s.mu.Unlock()
			spare = nil
			for i, data := range batch {
				s.ws.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
				if err := s.ws.WriteMessage(websocket.TextMessage, data); err != nil {
					s.closeWith(websocket.CloseAbnormalClosure, "write failed")
					return
				}
				batch[i] = nil // the frame may be large; do not keep it alive
			}
			if cap(batch) <= 64 {
				spare = batch // small arrays are reused; a burst's is let go
			}
		}
	}
}

// truncateReason keeps a close reason within the 123 bytes a close frame
// allows.
func truncateReason(r string) string {
	if len(r) > 120 {
		return r[:120]
	}
	return r
}

// readRequest returns the next request or notification. Frames that are
// not well-formed JSON-RPC are answered here with the matching error and
// skipped, as are responses (the server sends no requests); the
// connection stays up. It returns an error only when the connection ends.
func (s *stream) readRequest() (*jsonrpc2.Request, error) {
	for {
		data, err := s.readFrame()
		if err != nil {
			s.readOnce.Do(func() { close(s.readDone) })
			return nil, err
		}
		if data == nil || s.isClosing() {
			continue // after our close frame, only the peer's close matters
		}
		req, rpcErr, id := parseFrame(data)
		if rpcErr != nil {
			if id != nil {
				s.writeError(id, rpcErr)
			}
			continue
		}
		if req != nil {
			return req, nil
		}
	}
}

// readFrame returns one text frame, nil for a frame that was answered
// already, or an error that ends the connection.
func (s *stream) readFrame() ([]byte, error) {
	s.ws.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout))
	typ, r, err := s.ws.NextReader()
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, s.maxFrame+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > s.maxFrame {
		reason := fmt.Sprintf("message larger than %d bytes", s.maxFrame)
		s.writeError(json.RawMessage("null"), &protocol.Error{Code: protocol.CodeInvalidRequest, Message: reason})
		s.closeWith(websocket.CloseMessageTooBig, reason)
		s.ws.SetReadDeadline(time.Now().Add(closeGrace))
		_, _ = io.Copy(io.Discard, io.LimitReader(r, maxDrain))
		return nil, nil
	}
	if typ != websocket.TextMessage {
		s.writeError(json.RawMessage("null"), &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "binary frames are not accepted: send one JSON-RPC message per text frame"})
		return nil, nil
	}
	return data, nil
}

// writeError queues an error response with a raw id.
func (s *stream) writeError(id json.RawMessage, e *protocol.Error) {
	_ = s.WriteObject(protocol.Response{ID: id, Error: e})
}

// parseFrame decodes a frame once, checking it against JSON-RPC 2.0 with
// case-sensitive member names. It returns the request (nil for a response,
// which needs no answer), or the error to answer and the raw id to answer
// it with (nil: do not answer, e.g. a bad notification).
func parseFrame(data []byte) (*jsonrpc2.Request, *protocol.Error, json.RawMessage) {
	null := json.RawMessage("null")
	trimmed := bytes.Trim(data, " \t\r\n") // JSON whitespace only, as the decoder sees it
	if len(trimmed) == 0 || trimmed[0] != '{' {
		switch {
		case !json.Valid(trimmed):
			return nil, &protocol.Error{Code: protocol.CodeParseError, Message: "parse error: the frame is not valid JSON"}, null
		case trimmed[0] == '[':
			return nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "batch requests are not supported: send one message per frame"}, null
		}
		return nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "invalid request: a JSON-RPC message must be a JSON object"}, null
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, &protocol.Error{Code: protocol.CodeParseError, Message: "parse error: the frame is not valid JSON"}, null
		}
		return nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "invalid request: " + err.Error()}, null
	}
	rawID, hasID := m["id"]
	id := null
	var reqID jsonrpc2.ID
	idOK := true
	if hasID {
		reqID, idOK = parseID(rawID)
		if idOK || isIDType(rawID) {
			id = rawID
		}
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: `invalid request: "jsonrpc" must be "2.0"`}, id
	}
	method, hasMethod := m["method"]
	if !hasMethod {
		if _, ok := m["result"]; ok && hasID {
			return nil, nil, nil // a response; nothing awaits one
		}
		if _, ok := m["error"]; ok && hasID {
			return nil, nil, nil
		}
		return nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: `invalid request: "method" is missing`}, id
	}
	var name string
	if err := json.Unmarshal(method, &name); err != nil || name == "" {
		return nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: `invalid request: "method" must be a non-empty string`}, id
	}
	if hasID && !idOK {
		return nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "invalid request: id must be a string or a non-negative integer"}, id
	}
	req := &jsonrpc2.Request{Method: name, ID: reqID, Notif: !hasID}
	if p, ok := m["params"]; ok {
		if t := bytes.TrimSpace(p); len(t) == 0 || (t[0] != '{' && t[0] != '[' && string(t) != "null") {
			if !hasID {
				return nil, &protocol.Error{}, nil
			}
			return nil, &protocol.Error{Code: protocol.CodeInvalidParams, Message: fmt.Sprintf("invalid params for %s: params must be an object", name)}, id
		}
		req.Params = &p
	}
	return req, nil, nil
}

// parseID decodes an id: a string or a non-negative integer in int64
// range. A null id is not one.
func parseID(raw json.RawMessage) (jsonrpc2.ID, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '"' {
		var s string
		if json.Unmarshal(t, &s) != nil {
			return jsonrpc2.ID{}, false
		}
		return jsonrpc2.ID{Str: s, IsString: true}, true
	}
	n, err := strconv.ParseInt(string(t), 10, 64)
	if err != nil || n < 0 {
		return jsonrpc2.ID{}, false
	}
	return jsonrpc2.ID{Num: uint64(n)}, true
}

// isIDType reports whether raw has a type JSON-RPC 2.0 allows for an id:
// a string, a number or null. An id of that type that this server does
// not accept (negative, fractional, too large) is still echoed in the
// error so the client can match it; any other (true, an object) is
// answered with a null id, as JSON-RPC requires when the id cannot be
// determined.
func isIDType(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && (t[0] == '"' || t[0] == '-' || ('0' <= t[0] && t[0] <= '9') || string(t) == "null")
}
