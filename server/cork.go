package server

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// corkConn is the network connection under a WebSocket, able to hold
// back small writes while the stream's writer writes a batch of frames
// and send them together when it is done (uncork): a burst of a thousand
// small actions costs a few writes to the socket, not a thousand system
// calls per subscriber. Uncorked, every write goes straight through, so
// control frames written from other goroutines (a pong) are not held.
//
// A write whose deadline passes while the peer keeps acknowledging what
// was written before goes on (patience): a client that takes our bytes,
// however slowly, is reading. The kernel wakes a writer blocked on a full
// socket only once a good part of its buffer has drained, megabytes on
// a local connection, so a client reading steadily but slower than that
// per write timeout would otherwise be taken for one that reads nothing.
type corkConn struct {
	net.Conn
	mu      sync.Mutex
	corked  bool
	buf     []byte
	written atomic.Int64 // bytes handed to the kernel

	// patience is how long a write goes on past its deadline each time
	// the peer is found to have acknowledged more; alive is called then.
	// Both are set once, before the first write (setPatience); 0: a
	// write ends at its deadline.
	patience time.Duration
	alive    func()
	outq     func() (int64, bool) // stands in for unacked (tests)
}

// setPatience lets writes go on past their deadline by d while the peer
// acknowledges more, calling alive each time.
func (c *corkConn) setPatience(d time.Duration, alive func()) {
	c.patience, c.alive = d, alive
}

// acked returns how many of the bytes written the peer has acknowledged,
// where the system tells (unacked).
func (c *corkConn) acked() (int64, bool) {
	var q int64
	var ok bool
	if c.outq != nil {
		q, ok = c.outq()
	} else {
		q, ok = unacked(c.Conn)
	}
	if !ok {
		return 0, false
	}
	return c.written.Load() - q, true
}

// write writes p to the connection under the deadline set, extended by
// patience each time it passes while the peer acknowledged more since
// the write began or was last extended. c.mu held.
func (c *corkConn) write(p []byte) (int, error) {
	var last int64
	patient := c.patience > 0
	if patient {
		last, patient = c.acked()
	}
	total := 0
	for {
		n, err := c.Conn.Write(p)
		c.written.Add(int64(n))
		total, p = total+n, p[n:]
		var ne net.Error
		if err == nil || !patient || !errors.As(err, &ne) || !ne.Timeout() {
			return total, err
		}
		acked, ok := c.acked()
		if !ok || acked <= last {
			return total, err // nothing taken since: the peer reads nothing
		}
		last = acked
		c.Conn.SetWriteDeadline(time.Now().Add(c.patience))
		if c.alive != nil {
			c.alive()
		}
	}
}

// corkBuffer is the most a corked connection holds before it writes: a
// write of this much must finish within one write deadline, so it is no
// more than a large frame's piece (writeChunk).
const corkBuffer = writeChunk

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked && len(c.buf)+len(p) <= corkBuffer {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	// The writer's deadline, set just before this write, applies.
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return c.write(p)
}

func (c *corkConn) flushLocked() error {
	for len(c.buf) > 0 {
		n, err := c.write(c.buf)
		c.buf = c.buf[n:]
		if err != nil {
			c.buf = nil
			return err
		}
	}
	c.buf = c.buf[:0]
	return nil
}

// cork holds back writes until uncork.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	if c.buf == nil {
		c.buf = make([]byte, 0, corkBuffer)
	}
	c.mu.Unlock()
}

// uncork writes what was held back, under a write deadline timeout from
// now, and lets later writes through. An idle connection gives its
// buffer back.
func (c *corkConn) uncork(timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	var err error
	if len(c.buf) > 0 {
		c.Conn.SetWriteDeadline(time.Now().Add(timeout))
		err = c.flushLocked()
	}
	c.buf = nil
	return err
}

// corkingWriter hands the WebSocket upgrade a corkConn when it hijacks
// the HTTP connection.
type corkingWriter struct {
	http.ResponseWriter
	hj http.Hijacker
}

func (w corkingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := w.hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &corkConn{Conn: conn}, brw, nil
}

// corking wraps w so that the upgrade's connection is a corkConn; a
// writer that cannot be hijacked is returned as it is.
func corking(w http.ResponseWriter) http.ResponseWriter {
	if hj, ok := w.(http.Hijacker); ok {
		return corkingWriter{ResponseWriter: w, hj: hj}
	}
	return w
}
