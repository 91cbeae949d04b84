package session

import "sync"

// mailbox is an unbounded FIFO of closures run by one goroutine. Posting
// never blocks, so the JSON-RPC read loop can hand work to an actor
// without waiting on it.
type mailbox struct {
	mu     sync.Mutex
	queue  []func()
	closed bool
	wake   chan struct{} // 1-buffered
	// after, when set, runs on the actor after each batch of closures.
	after func()
}

func newMailbox() *mailbox { return &mailbox{wake: make(chan struct{}, 1)} }

// post enqueues f; it reports false when the mailbox is closed.
func (mb *mailbox) post(f func()) bool {
	mb.mu.Lock()
	if mb.closed {
		mb.mu.Unlock()
		return false
	}
	mb.queue = append(mb.queue, f)
	mb.mu.Unlock()
	select {
	case mb.wake <- struct{}{}:
	default:
	}
	return true
}

// close stops accepting work; run returns once the queue is drained.
func (mb *mailbox) close() {
	mb.mu.Lock()
	mb.closed = true
	mb.mu.Unlock()
	select {
	case mb.wake <- struct{}{}:
	default:
	}
}

// run executes closures until the mailbox is closed and drained.
func (mb *mailbox) run() {
	for {
		mb.mu.Lock()
		batch := mb.queue
		mb.queue = nil
		closed := mb.closed
		mb.mu.Unlock()
		for _, f := range batch {
			f()
		}
		if len(batch) > 0 && mb.after != nil {
			mb.after()
		}
		if len(batch) == 0 {
			if closed {
				return
			}
			<-mb.wake
		}
	}
}
