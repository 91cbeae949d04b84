package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/changesetd/changesetd/ahpclient"
	"github.com/changesetd/changesetd/protocol"
)

// Wire types: just the fields the load program looks at.

// inbound is one JSON-RPC message from the daemon. Params is kept raw and
// decoded a second time only for action notifications.
type inbound = protocol.RPCMessage

// envelope is an action envelope; the action itself is decoded only as far
// as its type (and, for the driver, separately in full).
type envelope struct {
	Channel   string `json:"channel"`
	ServerSeq int64  `json:"serverSeq"`
	Origin    *struct {
		ClientID  string `json:"clientId"`
		ClientSeq int64  `json:"clientSeq"`
	} `json:"origin"`
	RejectionReason string          `json:"rejectionReason"`
	Action          json.RawMessage `json:"action"`
}

type snapshot = ahpclient.Snapshot

type reconnectResult struct {
	Type      string     `json:"type"`
	Actions   []envelope `json:"actions"`
	Snapshots []snapshot `json:"snapshots"`
	Missing   []string   `json:"missing"`
}

const notifyAction = "action"

// callTimeout bounds the wait for a response (set by -call-timeout).
var callTimeout = 60 * time.Second

// wsConn is one connection to the daemon.
type wsConn = ahpclient.Client

// dialWS connects; onClose, when set, is told how the connection ended.
func dialWS(url string, onClose func(error)) (*wsConn, error) {
	c, resp, err := ahpclient.Dial(context.Background(), url, ahpclient.Options{HandshakeTimeout: 30 * time.Second, OnClose: onClose})
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			return nil, fmt.Errorf("dial: %w (HTTP %d: %s)", err, resp.StatusCode, bytes.TrimSpace(body))
		}
		return nil, fmt.Errorf("dial: %w", err)
	}
	return c, nil
}

// call sends a request and waits for its response, at most callTimeout;
// the notifications that come before it go to onNote.
func call(c *wsConn, method string, params any, out any, onNote func(*inbound)) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	err := c.CallNotes(ctx, method, params, out, onNote)
	if _, rpc := errors.AsType[*ahpclient.RPCError](err); rpc {
		return fmt.Errorf("%s: %w", method, err)
	}
	return err
}

func initialize(c *wsConn, clientID string) error {
	return call(c, "initialize", map[string]any{
		"channel": "ahp-root://", "protocolVersions": []string{"1.0.0"}, "clientId": clientID,
	}, nil, nil)
}

func subscribe(c *wsConn, uri string, onNote func(*inbound)) (snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return c.Subscribe(ctx, uri, onNote)
}

// pingLoop sends a JSON-RPC ping on every connection conns returns, every
// interval, until quit. Responses are ignored by the readers.
func pingLoop(every time.Duration, conns func() []*wsConn, quit <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-quit:
			return
		case <-tick.C:
		}
		for _, c := range conns() {
			_ = c.Send(protocol.Request{JSONRPC: protocol.JSONRPCVersion, ID: json.RawMessage(`"keepalive"`), Method: "ping", Params: map[string]any{"channel": protocol.RootURI}})
		}
	}
}

// gap is a range (from, to] of serverSeqs a snapshot stood in for.
type gap struct{ from, to int64 }

// subscriber is one load client. The plain fields after seen are owned by
// the client's goroutine while it runs and read by main after it exits.
type subscriber struct {
	r        *loadRun
	clientID string

	mu      sync.Mutex
	conn    *wsConn // current connection, nil between connections
	dialing *wsConn // connection being set up
	planned atomic.Bool
	active  atomic.Bool // connected and subscribed
	seen    atomic.Int64

	start      int64   // fromSeq of the first subscription
	received   []int64 // serverSeqs applied, ascending
	gaps       []gap   // ranges covered by a snapshot instead of actions
	dupes      int64
	outOfOrder int64
	rejected   int64
	otherChan  int64
	latencies  []int32 // µs, live review echoes of the driver's dispatches
	replays    int64
	snapshots  int64
	failures   int64 // reconnects that failed and were retried

	activeAtEnd bool // connected when the run settled; set by main
}

// connect opens a connection: initialize+subscribe the first time, a
// reconnect afterwards. On success s.conn is set and s.active is true.
func (s *subscriber) connect(first bool) error {
	c, err := dialWS(s.r.url, nil)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.dialing = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.dialing = nil
		s.mu.Unlock()
	}()
	if first {
		if err := initialize(c, s.clientID); err != nil {
			c.Close()
			return err
		}
		snap, err := subscribe(c, s.r.uri, func(m *inbound) { s.note(m, time.Now(), true) })
		if err != nil {
			c.Close()
			return err
		}
		s.start = snap.FromSeq
		s.seen.Store(max(s.seen.Load(), snap.FromSeq))
	} else {
		var res reconnectResult
		err := call(c, "reconnect", map[string]any{
			"channel": "ahp-root://", "clientId": s.clientID, "lastSeenServerSeq": s.seen.Load(),
			"subscriptions": []string{s.r.uri},
		}, &res, func(m *inbound) { s.note(m, time.Now(), true) })
		if err != nil {
			c.Close()
			return err
		}
		if len(res.Missing) > 0 {
			c.Close()
			return fmt.Errorf("reconnect: subscriptions missing: %v", res.Missing)
		}
		switch res.Type {
		case "replay":
			s.replays++
			s.r.reconnReplay.Add(1)
			for i := range res.Actions {
				s.deliver(&res.Actions[i], time.Time{}, false)
			}
		case "snapshot":
			s.snapshots++
			s.r.reconnSnapshot.Add(1)
			for _, sn := range res.Snapshots {
				if sn.Resource != s.r.uri {
					continue
				}
				if last := s.seen.Load(); sn.FromSeq > last {
					s.gaps = append(s.gaps, gap{last, sn.FromSeq})
					s.seen.Store(sn.FromSeq)
				}
			}
		default:
			c.Close()
			return fmt.Errorf("reconnect: unknown result type %q", res.Type)
		}
	}
	s.mu.Lock()
	s.conn = c
	s.mu.Unlock()
	s.active.Store(true)
	s.r.connected.Add(1)
	return nil
}

// run serves the client until the load run stops: read, and after every
// disconnect (planned or not) reconnect with the last seen serverSeq.
func (s *subscriber) run(done func()) {
	defer done()
	for {
		err := s.readLoop()
		s.r.connected.Add(-1)
		s.active.Store(false)
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
		if s.r.stopping.Load() {
			return
		}
		if !s.planned.Swap(false) {
			s.r.unexpectedClose(s.clientID, err)
		} else {
			// Stay away a little so that the replay has something in it.
			time.Sleep(time.Duration(rand.Int64N(int64(2*s.r.cfg.churnPause) + 1)))
		}
		for {
			if s.r.stopping.Load() {
				return
			}
			err := s.connect(false)
			if err == nil {
				break
			}
			if s.r.stopping.Load() {
				return
			}
			s.failures++
			s.r.reconnFailed.Add(1)
			s.r.event("reconnect failed: "+errClass(err), "%s: reconnect failed: %v", s.clientID, err)
			time.Sleep(500 * time.Millisecond)
		}
		if s.r.stopping.Load() {
			s.closeNow() // closeAll may have run while this connected
		}
	}
}

// readLoop takes the connection's notifications until it ends.
func (s *subscriber) readLoop() error {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	c.Listen(func(m *inbound) { s.note(m, time.Now(), true) })
	<-c.Done()
	err := c.Err()
	c.Close()
	return err
}

// disconnect starts a planned disconnect; false if the client is not
// connected right now.
func (s *subscriber) disconnect() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil || !s.active.Load() || s.planned.Load() {
		return false
	}
	s.planned.Store(true)
	s.conn.Shutdown(5 * time.Second)
	return true
}

// closeNow drops the connection at the end of the run, and one being set
// up.
func (s *subscriber) closeNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Shutdown(2 * time.Second)
	}
	if s.dialing != nil {
		s.dialing.Close()
	}
}

func (s *subscriber) note(m *inbound, now time.Time, live bool) {
	if m.Method != notifyAction {
		return
	}
	var env envelope
	if json.Unmarshal(m.Params, &env) != nil {
		return
	}
	s.deliver(&env, now, live)
}

// deliver applies one envelope: in order, once, on the subscribed channel.
func (s *subscriber) deliver(env *envelope, now time.Time, live bool) {
	if env.Channel != s.r.uri {
		s.otherChan++
		return
	}
	if env.RejectionReason != "" {
		s.rejected++
		return
	}
	last := s.seen.Load()
	if env.ServerSeq <= last {
		if _, found := searchInt64(s.received, env.ServerSeq); found {
			s.dupes++
			s.r.event("duplicate", "%s: duplicate serverSeq %d (last %d, live=%v)", s.clientID, env.ServerSeq, last, live)
		} else {
			s.outOfOrder++
			s.r.event("out of order", "%s: out-of-order serverSeq %d after %d (live=%v)", s.clientID, env.ServerSeq, last, live)
		}
		return
	}
	s.received = append(s.received, env.ServerSeq)
	s.seen.Store(env.ServerSeq)
	if !live {
		s.r.replayed.Add(1)
		return
	}
	s.r.live.Add(1)
	if o := env.Origin; o != nil && o.ClientID == s.r.driverID {
		if sent := s.r.sentAt(o.ClientSeq); sent > 0 {
			us := (now.Sub(s.r.t0) - time.Duration(sent)) / time.Microsecond
			s.latencies = append(s.latencies, int32(min(us, 1<<31-1)))
		}
	}
}

// searchInt64 is a binary search in an ascending slice.
func searchInt64(xs []int64, x int64) (int, bool) {
	lo, hi := 0, len(xs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if xs[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(xs) && xs[lo] == x
}

// driver is the dedicated client that dispatches review toggles. It also
// subscribes, and what it receives is the reference stream.
type driver struct {
	r    *loadRun
	conn *wsConn

	mu       sync.Mutex
	files    []string // file ids in the changeset
	status   string
	ref      []int64 // serverSeqs received, ascending
	types    map[string]int64
	echoes   int64 // own dispatches echoed back
	rejected int64
	disorder int64 // envelopes not in ascending order
	changed  chan struct{}
	closed   error
}

func newDriver(r *loadRun) (*driver, error) {
	d := &driver{r: r, types: map[string]int64{}, changed: make(chan struct{})}
	c, err := dialWS(r.url, d.connEnded)
	if err != nil {
		return nil, err
	}
	d.conn = c
	if err := initialize(c, r.driverID); err != nil {
		return nil, err
	}
	var sessions struct {
		Items []struct {
			Resource string `json:"resource"`
		} `json:"items"`
	}
	if err := call(c, "listSessions", map[string]any{"channel": "ahp-root://"}, &sessions, nil); err != nil {
		return nil, err
	}
	if len(sessions.Items) != 1 {
		return nil, fmt.Errorf("listSessions: %d sessions, want 1", len(sessions.Items))
	}
	id, ok := cutPrefix(sessions.Items[0].Resource, "ahp-session:/")
	if !ok {
		return nil, fmt.Errorf("listSessions: unexpected session resource %q", sessions.Items[0].Resource)
	}
	r.uri = "ahp-changeset:/" + id + "/changeset/uncommitted"
	snap, err := subscribe(c, r.uri, nil)
	if err != nil {
		return nil, err
	}
	var st struct {
		Status string `json:"status"`
		Files  []struct {
			ID string `json:"id"`
		} `json:"files"`
	}
	if err := json.Unmarshal(snap.State, &st); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	d.status = st.Status
	for _, f := range st.Files {
		d.files = append(d.files, f.ID)
	}
	d.ref = append(d.ref, snap.FromSeq) // ref[0] is the starting point, not an envelope
	c.Listen(d.note)
	return d, nil
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

// waitReady waits until the changeset is ready with at least one file.
func (d *driver) waitReady(timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		d.mu.Lock()
		ok, n, st, ch, closed := d.status == "ready" && len(d.files) > 0, len(d.files), d.status, d.changed, d.closed
		d.mu.Unlock()
		if ok {
			return nil
		}
		if closed != nil {
			return fmt.Errorf("driver connection closed: %w", closed)
		}
		select {
		case <-ch:
		case <-deadline:
			return fmt.Errorf("changeset not ready after %v (status %q, %d files)", timeout, st, n)
		}
	}
}

// connEnded records that the driver's connection ended.
func (d *driver) connEnded(err error) {
	d.mu.Lock()
	d.closed = err
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
	if !d.r.stopping.Load() {
		d.r.event("driver connection closed", "DRIVER connection closed: %v", describeClose(err))
	}
}

// note takes one notification of the reference stream.
func (d *driver) note(m *inbound) {
	if m.Method != notifyAction {
		return
	}
	var env envelope
	if json.Unmarshal(m.Params, &env) != nil || env.Channel != d.r.uri {
		return
	}
	d.record(&env)
}

func (d *driver) record(env *envelope) {
	var a struct {
		Type   string `json:"type"`
		Status string `json:"status"`
		Files  []json.RawMessage
		File   *struct {
			ID string `json:"id"`
		} `json:"file"`
		FileID string `json:"fileId"`
	}
	_ = json.Unmarshal(env.Action, &a)
	d.mu.Lock()
	defer func() {
		close(d.changed)
		d.changed = make(chan struct{})
		d.mu.Unlock()
	}()
	if env.RejectionReason != "" {
		d.rejected++
		d.r.event("driver action rejected", "driver: action rejected: %s (%s)", env.RejectionReason, a.Type)
		return
	}
	if last := d.ref[len(d.ref)-1]; env.ServerSeq <= last {
		d.disorder++
		d.r.event("driver out of order", "driver: serverSeq %d after %d", env.ServerSeq, last)
		return
	}
	d.ref = append(d.ref, env.ServerSeq)
	d.types[a.Type]++
	if env.Origin != nil && env.Origin.ClientID == d.r.driverID {
		d.echoes++
		d.r.echoed.Add(1)
	}
	switch a.Type {
	case "changeset/statusChanged":
		d.status = a.Status
	case "changeset/contentChanged":
		d.files = d.files[:0]
		for _, raw := range a.Files {
			var f struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(raw, &f) == nil && f.ID != "" {
				d.files = append(d.files, f.ID)
			}
		}
	case "changeset/fileSet":
		if a.File != nil && !contains(d.files, a.File.ID) {
			d.files = append(d.files, a.File.ID)
		}
	case "changeset/fileRemoved":
		for i, id := range d.files {
			if id == a.FileID {
				d.files = append(d.files[:i], d.files[i+1:]...)
				break
			}
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// lastSeq is the newest serverSeq of the reference stream.
func (d *driver) lastSeq() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ref[len(d.ref)-1]
}

// pacer yields how many events are due at rate per second since it
// started. A busy machine delays ticks; the loops then catch up instead of
// silently running slower than asked.
type pacer struct {
	start time.Time
	rate  float64
	done  int64
}

func (p *pacer) due() int64 { return int64(time.Since(p.start).Seconds()*p.rate) - p.done }

// paced calls do(k) for k = 0, 1, 2, … at rate per second until stop is
// closed or do returns false.
func paced(rate float64, stop <-chan struct{}, do func(k int64) bool) {
	p := &pacer{start: time.Now(), rate: rate}
	tick := time.NewTicker(max(time.Millisecond, time.Duration(float64(time.Second)/p.rate)))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for n := p.due(); n > 0; n-- {
			k := p.done
			p.done++
			if !do(k) {
				return
			}
		}
	}
}

// dispatchLoop sends review toggles at the configured rate until stop:
// each pass over the file list sets every file reviewed, the next pass
// unreviewed, so every action changes state.
func (d *driver) dispatchLoop(stop <-chan struct{}) {
	paced(d.r.cfg.rate, stop, func(k int64) bool {
		if err := d.dispatchOne(k); err != nil {
			d.r.event("driver dispatch failed", "driver: dispatch failed: %v", err)
			return false
		}
		return true
	})
}

// dispatchOne sends the k-th review toggle.
func (d *driver) dispatchOne(k int64) error {
	d.mu.Lock()
	files := d.files
	n := int64(len(files))
	var file string
	if n > 0 {
		file = files[k%n]
	}
	d.mu.Unlock()
	if n == 0 {
		return nil
	}
	reviewed := (k/n)%2 == 0
	seq := d.r.dispatched.Load() + 1
	d.r.markSent(seq)
	err := d.conn.Send(protocol.NewNotification("dispatchAction", map[string]any{
		"channel": d.r.uri, "clientSeq": seq,
		"action": map[string]any{"type": "changeset/filesReviewChanged", "files": []string{file}, "reviewed": reviewed},
	}))
	if err == nil {
		d.r.dispatched.Store(seq)
	}
	return err
}

// writeLoop modifies dirty files on disk at the configured rate, so that
// the daemon produces recomputing/fileSet/ready on its own.
func writeLoop(r *loadRun, repo string, files []string, stop <-chan struct{}, count *atomic.Int64) {
	if r.cfg.writes <= 0 || len(files) == 0 {
		return
	}
	paced(r.cfg.writes, stop, func(k int64) bool {
		name := files[rand.IntN(len(files))]
		f, err := os.OpenFile(filepath.Join(repo, name), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			r.event("writer failed", "writer: %v", err)
			return true
		}
		fmt.Fprintf(f, "// load edit %d at %s\n", k+1, time.Now().Format(time.RFC3339Nano))
		f.Close()
		count.Add(1)
		return true
	})
}

var addrPattern = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+`)

// errClass is an error message without addresses, to count alike errors.
func errClass(err error) string {
	return addrPattern.ReplaceAllString(describeClose(err), "ADDR")
}

// describeClose renders a read error, with the close code and reason when
// the daemon sent a close frame.
func describeClose(err error) string {
	if ce, ok := errors.AsType[*ahpclient.CloseError](err); ok {
		return fmt.Sprintf("close %d %q", ce.Code, ce.Text)
	}
	return err.Error()
}

// metricsClient fetches the daemon's Prometheus text.
var metricsClient = &http.Client{Timeout: 5 * time.Second}
