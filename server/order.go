package server

import (
	"context"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// Requests of one connection take effect in the order they were sent.
// The read loop admits each request (admit) into the connection's queue,
// and one goroutine of the connection at a time (drain) handles them in
// turn: it starts a request only once the one before was accepted, that
// is, once its handler returned and the work it handed off (conn.async)
// finished — or, for a method that takes its place on a session actor
// early and answers later (lateReply: an operation, which waits for its
// repository's lock and its writes), once it has taken that place. So a
// turnEnd never overtakes its turnStart, and a long revert holds up
// nothing but the writes queued behind it on its repository's lock.
//
// The preempted methods are answered as soon as they arrive, ahead of
// requests still queued: they change nothing a later request could see.
// While the connection is not initialized, or an initialize or reconnect
// is in flight, they queue like the others (ping excepted), so that they
// run with the handshake in effect and answer after it.
var preempted = map[string]bool{
	protocol.MethodPing:            true,
	protocol.MethodResourceRead:    true,
	protocol.MethodResourceResolve: true,
	protocol.MethodResourceList:    true,
	protocol.MethodListSessions:    true,
}

// Requests in flight on one connection: admitted and not yet answered (a
// notification: not yet handled). Past either bound a request is refused
// as overloaded at once; one request alone always passes the bytes bound
// (a frame is at most MaxFrameBytes).
const (
	DefaultMaxInFlight      = 1024
	DefaultMaxInFlightBytes = 64 << 20
)

// job is one admitted request.
type job struct {
	req  *jsonrpc2.Request
	id   string // the request id as sent; "" for a notification
	size int64  // bytes of its params

	// held counts what keeps the next request waiting: the handler until
	// it returns, and each piece of work it handed off (async). A
	// request is in flight until held is zero and it is answered
	// (awaiting false), which a callback may do after its handler
	// returned (subscribe). Guarded by inbox.mu.
	held     int
	awaiting bool
	// opening: an initialize or reconnect counted in inbox.opening, until
	// it is answered (its handshake is in effect by then) or leaves
	// flight unanswered. Guarded by inbox.mu.
	opening bool
	// accepted is closed once the next request may start: held dropped
	// to zero, or the handler's method took its place early.
	accepted chan struct{}
	once     sync.Once
}

func (j *job) accept() { j.once.Do(func() { close(j.accepted) }) }

// inbox is the connection's queue and what it has in flight.
type inbox struct {
	mu      sync.Mutex
	queue   []*job
	running bool                       // a drain goroutine serves queue
	jobs    map[*jsonrpc2.Request]*job // in flight, by request
	ids     map[string]*job            // requests in flight not yet answered, by id
	n       int                        // len(jobs)
	bytes   int64                      // their params
	opening int                        // initialize and reconnect jobs among them
}

// opens reports whether a request (re)establishes the connection's
// handshake.
func opens(req *jsonrpc2.Request) bool {
	return req.Method == protocol.MethodInitialize || req.Method == protocol.MethodReconnect
}

// admit takes a request off the read loop: it refuses a duplicate
// in-flight id and a request past the bounds, answers a preempted one
// now and queues the others.
func (c *conn) admit(req *jsonrpc2.Request) {
	j := &job{req: req, held: 1, accepted: make(chan struct{})}
	if !req.Notif {
		j.id, j.awaiting = string(rawID(req.ID)), true
	}
	if req.Params != nil {
		j.size = int64(len(*req.Params))
	}
	in := &c.in
	in.mu.Lock()
	now := preempted[req.Method] && (c.srv.routes[req.Method].beforeInit || (in.opening == 0 && c.isInitialized()))
	if j.id != "" && in.ids[j.id] != nil {
		in.mu.Unlock()
		c.reply(req, nil, protocol.Errorf(protocol.CodeInvalidRequest, "%s: request id %s is already in flight on this connection; an id may be used again once its request is answered", req.Method, j.id).WithReason(protocol.ReasonDuplicateRequestID))
		return
	}
	if in.n > 0 && (in.n >= c.srv.cfg.MaxInFlight || in.bytes+j.size > c.srv.cfg.MaxInFlightBytes) {
		n, size := in.n, in.bytes
		in.mu.Unlock()
		c.reply(req, nil, protocol.Errorf(protocol.CodeOverloaded, "%s: this connection has %d requests (%d bytes of params) in flight, the most it may have; nothing was done: send it again once some are answered", req.Method, n, size).WithReason(protocol.ReasonOverloaded))
		return
	}
	if in.jobs == nil {
		in.jobs, in.ids = map[*jsonrpc2.Request]*job{}, map[string]*job{}
	}
	in.jobs[req] = j
	if j.id != "" {
		in.ids[j.id] = j
	}
	in.n++
	in.bytes += j.size
	if opens(req) {
		in.opening++
		j.opening = true
	}
	if now {
		in.mu.Unlock()
		c.handle(req)
		c.release(j)
		return
	}
	in.queue = append(in.queue, j)
	start := !in.running
	in.running = true
	in.mu.Unlock()
	if start && !c.work.goFunc(c.drain) {
		// goFunc refuses only once run has stopped reading, and admit
		// runs on its read loop: never, but answer rather than hang.
		in.mu.Lock()
		queued := in.queue
		in.queue, in.running = nil, false
		in.mu.Unlock()
		for _, q := range queued {
			c.reply(q.req, nil, protocol.Errorf(protocol.CodeInternalError, "%s: the connection is closing", q.req.Method))
			c.release(q)
		}
	}
}

// drain handles the queued requests one at a time, each once the one
// before was accepted, until the queue is empty. Once the connection is
// closing, what is still queued is dropped unanswered.
func (c *conn) drain() {
	in := &c.in
	for {
		in.mu.Lock()
		if len(in.queue) == 0 {
			in.running = false
			in.mu.Unlock()
			return
		}
		j := in.queue[0]
		in.queue[0] = nil
		in.queue = in.queue[1:]
		in.mu.Unlock()
		if c.ctx.Err() != nil {
			c.release(j)
			continue
		}
		c.handle(j.req)
		c.release(j)
		<-j.accepted
	}
}

// hold keeps req's job (and the next request) waiting for a piece of
// work handed off; it returns nil when req is no longer tracked.
func (c *conn) hold(req *jsonrpc2.Request) *job {
	in := &c.in
	in.mu.Lock()
	defer in.mu.Unlock()
	j := in.jobs[req]
	if j == nil || j.held == 0 {
		return nil // its handler returned: nothing waits for it any more
	}
	j.held++
	return j
}

// release ends one hold of j; the last one accepts it, and takes it out
// of flight if it is answered.
func (c *conn) release(j *job) {
	if j == nil {
		return
	}
	in := &c.in
	in.mu.Lock()
	j.held--
	done := j.held == 0
	if done && !j.awaiting {
		in.forget(j)
	}
	in.mu.Unlock()
	if done {
		j.accept()
	}
}

// answeredID records that req's response is built: its id is free at
// once (the client may use it again once it has the answer), and the
// request leaves flight when nothing holds it.
func (c *conn) answeredID(req *jsonrpc2.Request) {
	in := &c.in
	in.mu.Lock()
	defer in.mu.Unlock()
	j := in.jobs[req]
	if j == nil || !j.awaiting {
		return // a refused request, never admitted, or answered already
	}
	j.awaiting = false
	if in.ids[j.id] == j {
		delete(in.ids, j.id)
	}
	// The handshake is in effect once its answer is built: a request the
	// client sends on reading it must not queue behind the handshake's
	// own release (a read would then wait for the read before it).
	in.stopOpening(j)
	if j.held == 0 {
		in.forget(j)
	}
}

// forget takes j out of flight. in.mu is held.
func (in *inbox) forget(j *job) {
	delete(in.jobs, j.req)
	if j.id != "" && in.ids[j.id] == j {
		delete(in.ids, j.id)
	}
	in.n--
	in.bytes -= j.size
	in.stopOpening(j)
}

// stopOpening ends j's count in in.opening, if it has one. in.mu is held.
func (in *inbox) stopOpening(j *job) {
	if j.opening {
		j.opening = false
		in.opening--
	}
}

// acceptEarly returns the function a lateReply handler's method calls
// once it took its place on the session actor.
func (c *conn) acceptEarly(req *jsonrpc2.Request) func() {
	in := &c.in
	in.mu.Lock()
	j := in.jobs[req]
	in.mu.Unlock()
	if j == nil {
		return func() {}
	}
	return j.accept
}

// lateReply is offLoop for a method that takes its place on a session
// actor and then answers once its work is done: the next request of the
// connection starts when it has taken its place (session.WithAccepted),
// not when it answers.
func lateReply[P, R any](h func(c *conn, ctx context.Context, p P) (R, error)) func(*conn, *jsonrpc2.Request) {
	return onLoop(func(c *conn, req *jsonrpc2.Request, p P) {
		ctx := session.WithAccepted(c.ctx, c.acceptEarly(req))
		c.async(req, func() {
			res, err := h(c, ctx, p)
			c.reply(req, res, err)
		})
	})
}
