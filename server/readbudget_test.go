package server

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
)

// TestUnreadRepliesHoldTheirReads pipelines reads of a large file on a
// connection whose replies are not taken off the socket (the writer is
// held, as by a client that reads nothing): a read's place is given back
// when its reply has been written, not when it is queued, so no more
// than DefaultReadsPerConn replies are ever held and the heap stays
// within them, however many reads are sent. Gated, not timed: the state
// is looked at once the first reply is being written, the next read has
// its content and every other read waits for a place.
func TestUnreadRepliesHoldTheirReads(t *testing.T) {
	const (
		size  = 4 << 20
		reads = 10
	)
	s := startServer(t)
	// The hooks are let go once the server has stopped: its goroutines
	// call them until then.
	defer func() { frameWriting, readWaiting = nil, nil }()
	defer s.stop(t)
	var (
		mu      sync.Mutex
		served  int
		waiting int
		writing bool
		changed = make(chan struct{}, 1)
	)
	note := func(f func()) {
		mu.Lock()
		f()
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	s.srv.readResource = func(ctx context.Context, uri string, limit int64) ([]byte, error) {
		b := make([]byte, size)
		for i := range b {
			b[i] = 'a'
		}
		note(func() { served++ })
		return b, nil
	}
	release := make(chan struct{})
	var once sync.Once
	frameWriting = func(n int) {
		if n < size {
			return
		}
		note(func() { writing = true })
		<-release
	}
	readWaiting = func(d int) { note(func() { waiting += d }) }
	free := func() { once.Do(func() { close(release) }) }
	defer free()

	ctx := testCtx(t)
	c, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.ws.Close()
	if err := initialize(ctx, c, "reader"); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	before := heapBytes()
	pipelineReads(t, c, reads)
	for {
		mu.Lock()
		done := served > DefaultReadsPerConn || (writing && served == DefaultReadsPerConn && waiting == reads-DefaultReadsPerConn)
		mu.Unlock()
		if done {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			mu.Lock()
			t.Fatalf("the reads never settled: %d served, %d waiting, writing %v, %d bytes queued", served, waiting, writing, queuedOf(s, "reader"))
		}
	}
	runtime.GC()
	held := heapBytes() - before
	mu.Lock()
	n := served
	mu.Unlock()
	if n > DefaultReadsPerConn {
		t.Errorf("%d reads served while their replies sat unwritten; a connection holds at most %d", n, DefaultReadsPerConn)
	}
	// The content of the reply being written and of the next read (each
	// reply is encoded as it is written), with room for the rest of the
	// process and a piece being encoded: the replies of the reads still
	// waiting, were they held, would pass it.
	if limit := int64(DefaultReadsPerConn+2) * size; held > limit {
		t.Errorf("the heap grew by %d MiB with %d unread replies of %d MiB, more than %d MiB", held>>20, reads, size>>20, limit>>20)
	}
	// Released, the replies go out; the client closing ends the rest.
	free()
}

// queuedOf returns the bytes queued on the stream of the connection of
// clientID.
func queuedOf(s *testServer, clientID string) int64 {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	for c := range s.srv.conns {
		if c.ClientID() == clientID {
			c.stream.mu.Lock()
			defer c.stream.mu.Unlock()
			return c.stream.queuedBytes
		}
	}
	return 0
}

// heapBytes is the live heap the runtime reports.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
