package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/changesetd/changesetd/hub"
	"github.com/changesetd/changesetd/protocol"
)

// closeMsg asks the writer to send a close frame and stop.
type closeMsg struct {
	code   int
	reason string
}

// frame is one message bound for the peer. channel is set for an action
// on a changeset channel that a fresh snapshot can stand in for: such a
// frame may be dropped from a backlog that does not drain (see lagLocked).
// slot is set for a place reserved in the queue (reserve, catchUpSlot):
// the writer stops there until it is filled.
type frame struct {
	data    []byte
	env     *hub.Envelope // instead of data: an action whose bytes every subscriber shares
	legacy  bool          // env is written in the 0.6/0.7 shape
	channel string
	slot    *slot
	body    *resourceReply // instead of data: a reply encoded as it is written
	parts   [][]byte       // instead of data: one message written as these pieces, which may be shared
	written chan struct{}  // if set, closed once the frame is on the socket
}

// size is what the frame adds to the backlog.
func (f frame) size() int64 {
	switch {
	case f.env != nil:
		return int64(f.env.Size())
	case f.slot != nil:
		return f.slot.size()
	case f.body != nil:
		return f.body.size()
	case f.parts != nil:
		return partsSize(f.parts)
	}
	return int64(len(f.data))
}

func partsSize(parts [][]byte) int64 {
	var n int64
	for _, p := range parts {
		n += int64(len(p))
	}
	return n
}

// slot is a place in the queue kept for frames still being made, such as
// initialize's reply gathering snapshots or a catch-up's snapshot being
// encoded: whatever is queued after the reservation goes out after them,
// and what was queued before goes out meanwhile.
type slot struct {
	frames [][]byte
	parts  [][]byte // one message in pieces (fillParts), written before frames
	filled bool
}

func (sl *slot) size() int64 { return partsSize(sl.frames) + partsSize(sl.parts) }

// stream frames JSON-RPC over one WebSocket connection. Writes never
// block: they go to a bounded queue drained by one writer goroutine.
// Reads decode each frame once and answer malformed ones directly.
//
// The queue is a slice that grows with what is pending, not a channel
// sized for the worst case: an idle connection costs no queue memory, and
// a thousand subscribers cost a thousand small slices.
//
// A client that reads, only more slowly than a burst is produced, is
// caught up rather than dropped: once the backlog passes SendQueue
// messages or SendQueueBytes, the changeset actions in it are dropped,
// and so are further actions of those channels as they come. Once the
// rest of the backlog has drained to a quarter of the bounds, onLag asks
// for a snapshot of each such channel (built then, so it is current, and
// taken off the sequencing lock: catchUpSlot); it covers every action
// dropped. Only a backlog of frames nothing can stand in for (replies,
// notifications) closes the connection, at four times the bounds; a
// client that reads nothing at all is closed when a write makes no
// progress for WriteTimeout.
type stream struct {
	ws       *websocket.Conn
	maxFrame int64
	cfg      *Config
	onClose  func(code int, reason string) // called once, from the goroutine that decided to close
	onLag    func(channels []string)       // called by the writer, without the lock; the channels await catchUpSlot

	wake chan struct{} // capacity 1: something is pending or a close was asked for

	mu          sync.Mutex
	pending     []frame        // frames queued for the writer, oldest first
	queuedBytes int64          // bytes in pending
	resyncing   map[string]lag // changeset channels whose actions are dropped until a catch-up
	acked       int64          // bytes the client had acknowledged at the last ping; the writer's
	closeReq    *closeMsg      // set once; written after pending
	closing     bool
	closeOnce   sync.Once
	done        chan struct{} // closed when the writer exits
	readOnce    sync.Once
	readDone    chan struct{} // closed when reading has ended
}

// lag is where a lagging channel's catch-up stands.
type lag int8

const (
	lagWaiting   lag = iota + 1 // the backlog is draining; no snapshot asked for yet
	lagRequested                // onLag asked for it; catchUpSlot ends it
)

// writeBatch is how many frames the writer takes from the queue at a
// time: the rest stays in the queue, where a lagging client's backlog can
// still be replaced by a snapshot.
const writeBatch = 64

// hardFactor multiplies the queue bounds for frames that cannot be
// dropped: past it the client is not reading its replies.
const hardFactor = 4

// closeGrace is how long the writer waits, after sending a close frame,
// for the peer's close before dropping the TCP connection. Closing at once
// would reset the connection and could destroy the close frame in flight.
const closeGrace = 2 * time.Second

// maxDrain bounds how much of an oversized frame is read and discarded so
// that the close frame reaches the peer instead of a TCP reset.
const maxDrain = 64 << 20

func newStream(ws *websocket.Conn, cfg *Config, onClose func(int, string)) *stream {
	s := &stream{
		ws:        ws,
		maxFrame:  cfg.MaxFrameBytes,
		cfg:       cfg,
		onClose:   onClose,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		readDone:  make(chan struct{}),
		resyncing: map[string]lag{},
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
	if cork, ok := ws.NetConn().(*corkConn); ok {
		// Taking our bytes is a sign of life, within a write too.
		cork.setPatience(cfg.WriteTimeout, extend)
	}
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

func (s *stream) write(data []byte) error { return s.push(frame{data: data}) }

// writeBody queues a reply encoded as it is written and returns a
// channel closed once it has been written to the socket: what holds a
// budget until its bytes leave the process waits there (or for the
// connection's end, when it is dropped).
func (s *stream) writeBody(body *resourceReply) (<-chan struct{}, error) {
	written := make(chan struct{})
	return written, s.push(frame{body: body, written: written})
}

// writeEnvelope queues an action envelope, written in the shape legacy
// selects. channel, when set, is the changeset channel whose snapshot can
// replace it.
func (s *stream) writeEnvelope(env *hub.Envelope, legacy bool, channel string) error {
	return s.push(frame{env: env, legacy: legacy, channel: channel})
}

func (s *stream) push(f frame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return io.ErrClosedPipe
	}
	if f.channel != "" && s.resyncing[f.channel] != 0 {
		return nil // the snapshot to come covers it
	}
	s.appendLocked(f)
	if len(s.pending) <= s.cfg.SendQueue && s.queuedBytes <= s.cfg.SendQueueBytes {
		return nil
	}
	s.lagLocked()
	if s.overHardLocked() {
		s.overflowLocked()
		return io.ErrClosedPipe
	}
	return nil
}

func (s *stream) appendLocked(f frame) {
	s.queuedBytes += f.size()
	s.pending = append(s.pending, f)
	s.signal()
}

// overHardLocked reports whether the backlog passed the bounds for frames
// nothing can stand in for.
func (s *stream) overHardLocked() bool {
	return len(s.pending) > hardFactor*s.cfg.SendQueue || s.queuedBytes > hardFactor*s.cfg.SendQueueBytes
}

// lagLocked drops every droppable frame of the backlog (a catch-up not
// yet written among them) and marks their channels as waiting for one.
func (s *stream) lagLocked() {
	kept := s.pending[:0]
	for _, f := range s.pending {
		if f.channel == "" {
			kept = append(kept, f)
			continue
		}
		s.queuedBytes -= f.size()
		if f.slot != nil {
			f.slot.frames, f.slot.parts, f.slot.filled = nil, nil, true // a late fill is dropped
		}
		if s.resyncing[f.channel] == 0 {
			s.resyncing[f.channel] = lagWaiting
		}
	}
	clear(s.pending[len(kept):]) // let the dropped frames go
	s.pending = kept
}

// drainedLocked returns the lagging channels whose snapshot can be asked
// for now that the backlog has drained to a quarter of the bounds, and
// marks them requested.
func (s *stream) drainedLocked() []string {
	if len(s.resyncing) == 0 || s.closing || len(s.pending) > s.cfg.SendQueue/4 || s.queuedBytes > s.cfg.SendQueueBytes/4 {
		return nil
	}
	var out []string
	for ch, st := range s.resyncing {
		if st == lagWaiting {
			s.resyncing[ch] = lagRequested
			out = append(out, ch)
		}
	}
	return out
}

// catchUpSlot ends channel's lag: it reserves the place of the frames
// that bring it up to date, which fillSlot supplies, and lets its actions
// through again. It must be called in the channel's sequence (hub calls
// Attach's done under its lock), so no action falls between the snapshot
// and the stream; the frames are made after, off that lock. The place is
// a changeset frame like the actions it stands for: if the client lags
// again before it is written, a later catch-up replaces it.
func (s *stream) catchUpSlot(channel string) *slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.resyncing, channel)
	sl := &slot{}
	if s.closing {
		sl.filled = true
		return sl
	}
	s.pending = append(s.pending, frame{slot: sl, channel: channel})
	return sl
}

// resynced gives up channel's catch-up (the client unsubscribed, or the
// channel is gone) and lets its actions through again.
func (s *stream) resynced(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.resyncing, channel)
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
	s.cfg.Metrics.SlowClientDropped()
	reason := fmt.Sprintf("send queue overflow: client did not read %d pending messages", len(s.pending))
	s.pending, s.queuedBytes = nil, 0
	s.closeLocked(websocket.ClosePolicyViolation, reason)
}

// reserve keeps the next place in the queue for a reply that fill
// supplies later.
func (s *stream) reserve() *slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := &slot{}
	if !s.closing {
		s.pending = append(s.pending, frame{slot: sl})
	}
	return sl
}

// fill gives a reserved place its reply and lets the writer past it.
func (s *stream) fill(sl *slot, data []byte) { s.fillSlot(sl, nil, [][]byte{data}) }

// fillParts gives a reserved place its reply as pieces of one message
// (protocol.Response.EncodeParts), written one after another.
func (s *stream) fillParts(sl *slot, parts [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || sl.filled {
		return
	}
	sl.parts, sl.filled = parts, true
	s.queuedBytes += sl.size()
	s.signal()
	if s.overHardLocked() {
		s.overflowLocked()
	}
}

// fillSlot gives a reserved place its messages, parts (one message in
// pieces, none when nil) then frames, and lets the writer past it.
// A place dropped meanwhile (a catch-up replaced by a later one) stays
// empty. The frames are queued even past the soft bounds: they are what
// the client needs, and a catch-up is asked for only once the backlog
// has drained.
func (s *stream) fillSlot(sl *slot, parts, frames [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || sl.filled {
		return
	}
	sl.parts, sl.frames, sl.filled = parts, frames, true
	s.queuedBytes += sl.size()
	s.signal()
	if s.overHardLocked() {
		s.overflowLocked()
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
	batch := make([]frame, 0, writeBatch)
	for {
		select {
		case <-s.wake:
		case <-ping.C:
			s.ackedProgress()
			if err := s.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.cfg.WriteTimeout)); err != nil {
				s.closeWith(websocket.CloseAbnormalClosure, "ping failed")
				return
			}
			continue
		}
		for {
			s.mu.Lock()
			if drained := s.drainedLocked(); len(drained) > 0 && s.onLag != nil {
				s.mu.Unlock()
				s.onLag(drained)
				s.mu.Lock()
			}
			// The batch ends at a place still reserved for a reply; once
			// closing, such a place is given up (nobody will read it).
			n := 0
			for n < len(s.pending) && n < writeBatch {
				if sl := s.pending[n].slot; sl != nil && !sl.filled && !s.closing {
					break
				}
				n++
			}
			if n == 0 && len(s.pending) > 0 {
				s.mu.Unlock()
				break // wait for fill
			}
			if n == 0 {
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
			// Take a batch off the front; the rest stays where a lagging
			// client's backlog can still be replaced.
			batch = append(batch[:0], s.pending[:n]...)
			rest := copy(s.pending, s.pending[n:])
			clear(s.pending[rest:])
			s.pending = s.pending[:rest]
			if rest == 0 && cap(s.pending) > 4*writeBatch {
				s.pending = nil // a burst's array is let go
			}
			for _, f := range batch {
				s.queuedBytes -= f.size()
			}
			s.mu.Unlock()
			cork, _ := s.ws.NetConn().(*corkConn)
			if cork != nil && len(batch) > 1 {
				cork.cork()
			}
			for i, f := range batch {
				var err error
				switch {
				case f.slot != nil:
					// Empty when given up while closing, or replaced.
					if f.slot.parts != nil {
						err = s.writeFrame(frame{parts: f.slot.parts})
					}
					for _, data := range f.slot.frames {
						if err != nil {
							break
						}
						err = s.writeFrame(frame{data: data})
					}
				case f.data != nil || f.env != nil || f.body != nil || f.parts != nil:
					err = s.writeFrame(f)
				}
				if f.written != nil && err == nil {
					close(f.written)
				}
				if err != nil {
					s.writeFailed(err)
					return
				}
				batch[i] = frame{} // the frame may be large; do not keep it alive
			}
			if cork != nil {
				if err := cork.uncork(s.cfg.WriteTimeout); err != nil {
					s.writeFailed(err)
					return
				}
			}
		}
	}
}

// ackedProgress extends the read deadline when the client has
// acknowledged more of what was written since the last ping: a client
// working through a burst the kernel's buffers hold for it reaches our
// ping only after that data, yet takes it steadily, so it is alive. A
// client that takes nothing acknowledges nothing and is still closed
// when the read deadline passes. Only the writer calls it.
func (s *stream) ackedProgress() {
	cork, _ := s.ws.NetConn().(*corkConn)
	if cork == nil {
		return
	}
	if acked, ok := cork.acked(); ok && acked > s.acked {
		s.acked = acked
		s.ws.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout))
	}
}

// writeChunk is the most written to the connection under one write
// deadline. A frame larger than that is written in pieces, the deadline
// extended before each: the time a frame may take grows with its size,
// and only a client that takes nothing for WriteTimeout is "reading
// nothing".
const writeChunk = 64 << 10

// frameWriting, when set (by tests only), is called with a frame's
// length before it is written: a test holds it there as a client that
// reads nothing would.
var frameWriting func(n int)

// writeFrame writes one message. Each piece the client takes is a sign
// of life as good as a pong (which a client far behind reaches only once
// it has read what came before): it extends the read deadline too.
func (s *stream) writeFrame(f frame) error {
	if frameWriting != nil {
		frameWriting(int(frame{data: f.data, body: f.body, parts: f.parts}.size()))
	}
	extend := func() {
		now := time.Now()
		s.ws.SetWriteDeadline(now.Add(s.cfg.WriteTimeout))
		s.ws.SetReadDeadline(now.Add(s.cfg.ReadTimeout))
	}
	if f.env == nil && f.body == nil && f.parts == nil && len(f.data) <= writeChunk {
		extend()
		return s.ws.WriteMessage(websocket.TextMessage, f.data)
	}
	w, err := s.ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	switch {
	case f.env != nil:
		err = f.env.WriteTo(w, f.legacy, writeChunk, extend)
	case f.body != nil:
		err = f.body.writeTo(w, writeChunk, extend)
	case f.parts != nil:
		for _, p := range f.parts {
			for ; len(p) > 0 && err == nil; p = p[min(len(p), writeChunk):] {
				extend()
				_, err = w.Write(p[:min(len(p), writeChunk)])
			}
		}
	default:
		for p := f.data; len(p) > 0 && err == nil; p = p[min(len(p), writeChunk):] {
			extend()
			_, err = w.Write(p[:min(len(p), writeChunk)])
		}
	}
	if err != nil {
		return err
	}
	extend()
	return w.Close()
}

// writeFailed closes the stream after a failed write. A write that timed
// out means the client stopped reading altogether: that is the one slow
// client that is disconnected, and the reason says so.
func (s *stream) writeFailed(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		s.cfg.Metrics.SlowClientDropped()
		s.closeWith(websocket.ClosePolicyViolation, fmt.Sprintf("send queue overflow: client read nothing for %v", s.cfg.WriteTimeout))
		return
	}
	s.closeWith(websocket.CloseAbnormalClosure, "write failed")
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
