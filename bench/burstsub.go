package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// rawSub is a burst subscriber's connection, read frame by frame without
// the client library: a hundred subscribers in the bench's one process
// that each decoded every frame in full (the library's message, the
// envelope, each file) measured the bench's JSON decoding, several times
// the daemon's work, on the same two cores. It takes each frame as the
// daemon wrote it and scans out only what the mirror keeps (frameHead).
type rawSub struct {
	ws     *websocket.Conn
	delay  atomic.Int64 // ns to wait before taking each frame in
	done   chan struct{}
	taken  chan struct{} // capacity 1: a frame was taken in (Wait)
	mu     sync.Mutex
	code   int
	reason string
}

func dialRaw(ctx context.Context, url string) (*rawSub, error) {
	return dialRawAt(ctx, url, 0)
}

// dialRawAt is dialRaw for a client whose connection takes in at most
// rate bytes a second (0: no limit), as a tunnelled remote IDE does: the
// daemon's writes to it block on a full socket for as long as that takes.
func dialRawAt(ctx context.Context, url string, rate int64) (*rawSub, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 64 << 10}
	if rate > 0 {
		d.ReadBufferSize = 4 << 10
		d.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var nd net.Dialer
			c, err := nd.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetReadBuffer(16 << 10) // the kernel buffers little on our side
			}
			return &throttledConn{Conn: c, rate: rate, start: time.Now()}, nil
		}
	}
	ws, _, err := d.DialContext(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(-1)
	return &rawSub{ws: ws, done: make(chan struct{}), taken: make(chan struct{}, 1)}, nil
}

// call sends a request and reads frames until its response: before
// listen only, when nothing else reads.
func (r *rawSub) call(id int, method string, params any) (json.RawMessage, error) {
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if err := r.ws.WriteMessage(websocket.TextMessage, req); err != nil {
		return nil, err
	}
	for {
		_, data, err := r.ws.ReadMessage()
		if err != nil {
			return nil, err
		}
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &m) != nil || m.ID == nil || *m.ID != id {
			continue
		}
		if len(m.Error) > 0 {
			return nil, fmt.Errorf("%s: %s", method, m.Error)
		}
		return m.Result, nil
	}
}

// callDiscarding is call for a request whose result is large and not
// looked at: each frame is read to its end from the connection, but
// only its head is decoded (up to the id and the start of the result),
// the rest read into a small buffer and dropped. A client that took
// each of a changeset's 15 MB snapshots apart in full, on the same two
// cores, would be measured instead of the daemon's work of sending them.
func (r *rawSub) callDiscarding(id int, method string, params any) error {
	_, err := r.callHead(id, method, params)
	return err
}

// callHead is callDiscarding returning the reply's first 4 KiB, which
// hold its state's first members.
func (r *rawSub) callHead(id int, method string, params any) ([]byte, error) {
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if err := r.ws.WriteMessage(websocket.TextMessage, req); err != nil {
		return nil, err
	}
	head := make([]byte, 4<<10)
	rest := make([]byte, 64<<10)
	for {
		_, rd, err := r.ws.NextReader()
		if err != nil {
			return nil, err
		}
		n, err := io.ReadFull(rd, head)
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return nil, err
		}
		if _, err := io.CopyBuffer(io.Discard, rd, rest); err != nil {
			return nil, err
		}
		got, rerr, ok := replyHead(head[:n], id)
		if !ok {
			continue
		}
		if !got {
			return nil, fmt.Errorf("%s: %s", method, rerr)
		}
		return head[:n], nil
	}
}

// replyHead reads the members of a JSON-RPC message from the start of
// its bytes until its result or error: ok is false for a message that is
// not the response to id; got is true for a result, and for an error
// rerr is its text.
func replyHead(b []byte, id int) (got bool, rerr string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false, "", false
	}
	idOK := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false, "", false
		}
		switch k {
		case "id":
			v, err := dec.Token()
			idOK = err == nil && v == json.Number(strconv.Itoa(id))
		case "result":
			return true, "", idOK
		case "error":
			var e json.RawMessage
			if err := dec.Decode(&e); err != nil {
				return false, "an error (cut short)", idOK
			}
			return false, string(e), idOK
		case "method":
			return false, "", false // a notification
		default:
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return false, "", false
			}
		}
	}
	return false, "", false
}

// listen hands the scan of every later frame to f, on a goroutine of
// its own, until the connection ends. Its frames are read through fr
// (frameCache): a scan's bytes are valid only until f returns.
func (r *rawSub) listen(fr *frameReader, f func(*frameScan)) {
	go func() {
		defer close(r.done)
		for {
			fs, err := fr.next(r.ws)
			if err != nil {
				var ce *websocket.CloseError
				r.mu.Lock()
				if errors.As(err, &ce) {
					r.code, r.reason = ce.Code, ce.Text
				} else {
					r.code, r.reason = websocket.CloseAbnormalClosure, err.Error()
				}
				r.mu.Unlock()
				return
			}
			if d := r.delay.Load(); d > 0 {
				time.Sleep(time.Duration(d))
			}
			f(fs)
			if cap(fr.own) > 64<<20 {
				fr.own = nil // not kept for a frame larger than a burst's
			}
			select {
			case r.taken <- struct{}{}:
			default:
			}
		}
	}()
}

// Wait returns once cond holds, checked after each frame taken in.
func (r *rawSub) Wait(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-r.taken:
		case <-r.done:
			if cond() {
				return nil
			}
			return fmt.Errorf("waiting for %s: the connection ended", what)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
	return nil
}

func (r *rawSub) SetReadDelay(d time.Duration) { r.delay.Store(int64(d)) }
func (r *rawSub) Done() <-chan struct{}        { return r.done }
func (r *rawSub) Close()                       { r.ws.Close() }

func (r *rawSub) Closed() (bool, int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return true, r.code, r.reason
}

// frameHead is what the mirror keeps of an action notification.
type frameHead struct {
	channel, typ, status, fileID string
	serverSeq                    int64
	rejected                     bool
	files                        [][]byte // the file objects of fileSet (one) or contentChanged
}

// scanFrame reads an action notification in the shape the daemon writes
// it (hub.Envelope: channel, action, serverSeq, then origin or a
// rejection reason), scanning bytes rather than decoding JSON. ok is
// false for any other frame, or one it cannot read so: the caller
// decodes those in full.
func scanFrame(b []byte) (h frameHead, ok bool) {
	const pre = `{"jsonrpc":"2.0","method":"action","params":{"channel":`
	if !bytes.HasPrefix(b, []byte(pre)) {
		return h, false
	}
	i := len(pre)
	if h.channel, i, ok = scanString(b, i); !ok {
		return h, false
	}
	const act = `,"action":`
	if !bytes.HasPrefix(b[i:], []byte(act)) {
		return h, false
	}
	i += len(act)
	end := objectEnd(b, i)
	if end < 0 {
		return h, false
	}
	a := b[i:end]
	const typ = `{"type":`
	if !bytes.HasPrefix(a, []byte(typ)) {
		return h, false
	}
	j := len(typ)
	if h.typ, j, ok = scanString(a, j); !ok {
		return h, false
	}
	rest := a[j:]
	switch h.typ {
	case "changeset/fileSet":
		const f = `,"file":`
		if !bytes.HasPrefix(rest, []byte(f)) {
			return h, false
		}
		e := objectEnd(rest, len(f))
		if e < 0 {
			return h, false
		}
		h.files = [][]byte{rest[len(f):e]}
	case "changeset/contentChanged":
		const f = `,"files":[`
		if !bytes.HasPrefix(rest, []byte(f)) {
			return h, false
		}
		k := len(f)
		for k < len(rest) && rest[k] != ']' {
			if rest[k] == ',' {
				k++
			}
			e := objectEnd(rest, k)
			if e < 0 {
				return h, false
			}
			h.files = append(h.files, rest[k:e])
			k = e
		}
	case "changeset/fileRemoved":
		const f = `,"fileId":`
		if !bytes.HasPrefix(rest, []byte(f)) {
			return h, false
		}
		if h.fileID, _, ok = scanString(rest, len(f)); !ok {
			return h, false
		}
	case "changeset/statusChanged":
		const f = `,"status":`
		if !bytes.HasPrefix(rest, []byte(f)) {
			return h, false
		}
		if h.status, _, ok = scanString(rest, len(f)); !ok {
			return h, false
		}
	}
	const seq = `,"serverSeq":`
	if !bytes.HasPrefix(b[end:], []byte(seq)) {
		return h, false
	}
	k := end + len(seq)
	n := k
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	var err error
	if h.serverSeq, err = strconv.ParseInt(string(b[k:n]), 10, 64); err != nil {
		return h, false
	}
	h.rejected = bytes.Contains(b[n:], []byte(`"rejectionReason":"`))
	return h, true
}

// scanFile reads a file's id and the nonce of its after side from its
// encoded object, as the daemon writes a ChangesetFile (id first, then
// edit). ok is false when it cannot.
func scanFile(f []byte) (id string, mf mirrorFile, ok bool) {
	const pre = `{"id":`
	if !bytes.HasPrefix(f, []byte(pre)) {
		return "", mf, false
	}
	i := len(pre)
	if id, i, ok = scanString(f, i); !ok {
		return "", mf, false
	}
	mf.size = len(f)
	const edit = `,"edit":`
	if !bytes.HasPrefix(f[i:], []byte(edit)) {
		return "", mf, false
	}
	i += len(edit)
	e := objectEnd(f, i)
	if e < 0 {
		return "", mf, false
	}
	ed := f[i:e]
	k := bytes.Index(ed, []byte(`"after":{`))
	if k < 0 {
		return id, mf, true // deleted: no after side
	}
	after := ed[k+len(`"after":`):]
	after = after[:objectEnd(after, 0)]
	n := bytes.Index(after, []byte(`"nonce":`))
	if n < 0 {
		return id, mf, true
	}
	mf.nonce, _, ok = scanString(after, n+len(`"nonce":`))
	return id, mf, ok
}

// scanString reads the JSON string starting at b[i] (its opening quote)
// and returns it with the index after its closing quote; a string with
// an escape is not read here (ok false).
func scanString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	j := bytes.IndexByte(b[i+1:], '"')
	if j < 0 {
		return "", i, false
	}
	s := b[i+1 : i+1+j]
	if bytes.IndexByte(s, '\\') >= 0 {
		return "", i, false
	}
	return string(s), i + j + 2, true
}

// objectEnd returns the index just past the JSON object or array
// starting at b[i], strings skipped, or -1.
func objectEnd(b []byte, i int) int {
	if i >= len(b) || (b[i] != '{' && b[i] != '[') {
		return -1
	}
	depth := 0
	for k := i; k < len(b); k++ {
		switch b[k] {
		case '"':
			for k++; k < len(b) && b[k] != '"'; k++ {
				if b[k] == '\\' {
					k++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return k + 1
			}
		}
	}
	return -1
}

// throttledConn reads at most rate bytes a second on average, in pieces
// of a fiftieth of a second's worth.
type throttledConn struct {
	net.Conn
	rate  int64
	start time.Time
	read  int64
}

func (c *throttledConn) Read(p []byte) (int, error) {
	if piece := int(max(c.rate/50, 512)); len(p) > piece {
		p = p[:piece]
	}
	n, err := c.Conn.Read(p)
	c.read += int64(n)
	if due := time.Duration(float64(c.read) / float64(c.rate) * float64(time.Second)); due > time.Since(c.start) {
		time.Sleep(due - time.Since(c.start))
	}
	return n, err
}
