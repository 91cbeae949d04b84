package main

import (
	"bytes"
	"io"
	"sync"

	"github.com/gorilla/websocket"
)

// frameCache lets a burst's mirrors scan each distinct frame once. Every
// mirror still reads each of its frames, every byte of it, from its own
// connection; what it is spared is keeping and scanning bytes that
// another mirror already has. One mirror (the leader) keeps the frame's
// bytes as it reads them and scans them; the others compare each piece
// they read with the leader's bytes at the same offset, and take the
// leader's scan only if their frame is, byte for byte, the leader's:
// scanFrame and scanFile are functions of those bytes alone, and each
// mirror applies the result to its own state. A mirror whose bytes
// differ, or that cannot compare them (the leader's connection ended),
// keeps its own and scans them itself.
//
// A hundred subscribers of one daemon receive the same bytes (the daemon
// encodes each envelope once), and a hundred readers each keeping and
// scanning a 15 MB frame measured the bench rather than the daemon: most
// of its CPU went to faulting in and zeroing the frames' memory.
type frameCache struct {
	mu     sync.Mutex
	recent []*cachedFrame // newest last
	bytes  int            // of the frames in recent
}

// cacheBytes bounds the frames a cache keeps: a reader far behind the
// others (the throttled one) keeps and scans its frames itself.
const cacheBytes = 96 << 20

// cachedFrame is a frame as its leader reads it, then its scan.
type cachedFrame struct {
	mu     sync.Mutex
	cond   sync.Cond // signalled as data grows and when done, scan or failed change
	data   []byte
	done   bool       // the leader read the whole frame
	failed bool       // the leader's connection ended before it did
	scan   *frameScan // set once scanned, after done
}

// frameScan is what scanFrame and scanFile read of a frame.
type frameScan struct {
	data  []byte    // the frame's bytes (valid only while the frame is handled, for a mirror's own)
	head  frameHead // its files field cleared: heads holds them
	heads []fileHeadScan
	ok    bool  // false: the frame is to be decoded in full
	err   error // the scan differs from a full decode (checkScan)
}

func newFrameCache() *frameCache { return &frameCache{} }

// scanOnce scans frame; check also decodes it in full and compares.
func scanOnce(frame []byte, check bool) *frameScan {
	fs := &frameScan{data: frame}
	fs.head, fs.ok = scanFrame(frame)
	if fs.ok {
		for _, f := range fs.head.files {
			id, mf, ok := scanFile(f)
			if !ok {
				fs.ok = false
				break
			}
			fs.heads = append(fs.heads, fileHeadScan{id, mf})
		}
	}
	if fs.ok && check {
		fs.err = checkScan(frame, fs.head, fs.heads)
	}
	fs.head.files = nil
	return fs
}

// frameReader reads one connection's frames against a frameCache.
type frameReader struct {
	c       *frameCache
	lead    bool   // may lead a frame (a reader slower than the rest must not: the others would wait for it)
	scratch []byte // each piece read
	own     []byte // the frame's bytes when this reader keeps them, reused
	frames  int    // frames scanned by this reader, for checkEvery
}

// next reads the next message of ws and returns its scan. The scan's
// data is valid until the next call.
func (fr *frameReader) next(ws *websocket.Conn) (*frameScan, error) {
	_, rd, err := ws.NextReader()
	if err != nil {
		return nil, err
	}
	if fr.scratch == nil {
		fr.scratch = make([]byte, 64<<10)
	}
	var (
		lead, cand *cachedFrame
		off        int
		keep       bool // keeping own bytes in fr.own
	)
	fr.own = fr.own[:0]
	first := true
	fail := func() {
		if lead != nil {
			lead.mu.Lock()
			lead.failed = true
			lead.cond.Broadcast()
			lead.mu.Unlock()
		}
	}
	for {
		n, err := rd.Read(fr.scratch)
		p := fr.scratch[:n]
		if n > 0 {
			switch {
			case first:
				first = false
				if fr.c == nil {
					keep = true
					fr.own = append(fr.own, p...)
					break
				}
				cand = fr.c.match(p)
				if cand == nil && fr.lead {
					lead = fr.c.start(p)
					break
				}
				if cand == nil {
					keep = true
					fr.own = append(fr.own, p...)
					break
				}
				if !cand.follow(p, off) {
					fr.own = cand.prefix(fr.own, off)
					fr.own, cand, keep = append(fr.own, p...), nil, true
					break
				}
				off += n
			case lead != nil:
				lead.mu.Lock()
				lead.data = append(lead.data, p...)
				lead.cond.Broadcast()
				lead.mu.Unlock()
			case keep:
				fr.own = append(fr.own, p...)
			default:
				if !cand.follow(p, off) {
					fr.own = cand.prefix(fr.own, off)
					fr.own, cand, keep = append(fr.own, p...), nil, true
					break
				}
				off += n
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			fail()
			return nil, err
		}
	}
	switch {
	case lead != nil:
		lead.mu.Lock()
		lead.done = true
		lead.cond.Broadcast()
		lead.mu.Unlock()
		fr.frames++
		fs := scanOnce(lead.data, fr.frames%checkEvery == 0)
		lead.mu.Lock()
		lead.scan = fs
		lead.cond.Broadcast()
		lead.mu.Unlock()
		fr.c.scanned(lead)
		return fs, nil
	case cand != nil:
		if fs := cand.end(off); fs != nil {
			return fs, nil
		}
		fr.own = cand.prefix(fr.own, off)
	}
	fr.frames++
	return scanOnce(fr.own, fr.frames%checkEvery == 0), nil
}

// match returns the newest frame of the cache, read or being read,
// whose bytes so far begin as p does or are its beginning.
func (c *frameCache) match(p []byte) *cachedFrame {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.recent) - 1; i >= 0; i-- {
		f := c.recent[i]
		f.mu.Lock()
		k := min(len(f.data), len(p))
		ok := !f.failed && bytes.Equal(f.data[:k], p[:k]) && (!f.done || len(f.data) >= len(p))
		f.mu.Unlock()
		if ok {
			return f
		}
	}
	return nil
}

// start adds a frame whose first bytes are p, for its leader to read.
func (c *frameCache) start(p []byte) *cachedFrame {
	f := &cachedFrame{data: append(make([]byte, 0, 1<<20), p...)}
	f.cond.L = &f.mu
	c.mu.Lock()
	c.recent = append(c.recent, f)
	c.mu.Unlock()
	return f
}

// scanned counts f's bytes against the cache's bound, and lets the
// oldest frames go that are past it.
func (c *frameCache) scanned(f *cachedFrame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes += len(f.data)
	for c.bytes > cacheBytes && len(c.recent) > 1 {
		old := c.recent[0]
		old.mu.Lock()
		gone := old.scan != nil || old.failed
		old.mu.Unlock()
		if !gone {
			break
		}
		c.recent = c.recent[1:]
		c.bytes -= len(old.data)
	}
}

// follow reports whether p is f's bytes at off, waiting for its leader
// to read that far.
func (f *cachedFrame) follow(p []byte, off int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.data) < off+len(p) && !f.done && !f.failed {
		f.cond.Wait()
	}
	return len(f.data) >= off+len(p) && bytes.Equal(f.data[off:off+len(p)], p)
}

// end returns f's scan when f is n bytes long, the length of the frame
// that matched it so far; nil when it is not (or its leader failed).
func (f *cachedFrame) end(n int) *frameScan {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.data) == n && !f.done && !f.failed {
		f.cond.Wait()
	}
	if f.failed || len(f.data) != n {
		return nil
	}
	for f.scan == nil {
		f.cond.Wait()
	}
	return f.scan
}

// prefix appends f's first n bytes to dst: a frame that matched f so
// far and is kept by its own reader from there.
func (f *cachedFrame) prefix(dst []byte, n int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(dst, f.data[:n]...)
}
