package hub

import (
	"sync"

	"github.com/changesetd/changesetd/protocol"
)

// DefaultReplayBuffer is the number of envelopes kept per channel for
// reconnect replay. 1024 covers a few minutes of a busy changeset; older
// gaps fall back to a snapshot, which is always correct, just larger.
const DefaultReplayBuffer = 1024

// Subscriber receives envelopes and notifications for the channels it is
// subscribed to. Implementations must not block: a subscriber that cannot
// keep up closes itself and is then detached by its owner.
type Subscriber interface {
	// ClientID is the identity from initialize, used in origins.
	ClientID() string
	// Version is the negotiated protocol version, used to gate wire deltas.
	Version() string
	// Send delivers an action envelope, in the newest shape. The same
	// *Envelope goes to every subscriber, so the transport can encode it
	// once per protocol generation (Envelope.Frame).
	Send(env *Envelope)
	// Notify delivers a protocol notification such as root/sessionAdded.
	Notify(method string, params any)
}

// Hub holds the global serverSeq and sequences every channel made by
// NewChannel.
type Hub struct {
	mu       sync.Mutex
	seq      int64
	firstSeq int64 // cursors before it are from an earlier run
	ringCap  int
}

// New returns a hub whose first serverSeq follows seqBase. serverSeq must
// never be reused, also across restarts, or a client's reconnect cursor
// from an earlier run would be taken for one of this run; cursors at or
// below seqBase are answered with snapshots. ringCap is the replay ring of
// each channel (0: DefaultReplayBuffer).
func New(seqBase int64, ringCap int) *Hub {
	if ringCap <= 0 {
		ringCap = DefaultReplayBuffer
	}
	return &Hub{seq: seqBase, firstSeq: seqBase, ringCap: ringCap}
}

// Seq returns the current global serverSeq.
func (h *Hub) Seq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// Channel is the sequencing and fan-out part of one channel. Its owner
// (the session Manager for root, a Session actor otherwise) keeps the
// typed state. All fields are guarded by the hub's lock.
type Channel struct {
	h   *Hub
	uri string

	ring    []protocol.ActionEnvelope // circular once full: oldest at ring[head]
	head    int
	ringCap int
	evicted int64 // highest serverSeq dropped from the ring; replay after it only
	subs    map[Subscriber]struct{}
}

// NewChannel returns a channel with no subscribers and nothing to replay.
func (h *Hub) NewChannel(uri string) *Channel {
	return &Channel{h: h, uri: uri, ringCap: h.ringCap, subs: map[Subscriber]struct{}{}}
}

// URI is the channel's URI.
func (c *Channel) URI() string { return c.uri }

// ForgetHistory makes every cursor up to now unreplayable on c: a cursor
// from an earlier channel of the same URI gets a snapshot.
func (c *Channel) ForgetHistory() {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	c.evicted = c.h.seq
}

// Publish assigns the next serverSeq to an action on c, records it for
// replay and fans it out. Every subscriber gets the same *Envelope; the
// transport adapts it to each connection's protocol version.
func (c *Channel) Publish(a protocol.Action, origin *protocol.ActionOrigin) protocol.ActionEnvelope {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	env := protocol.ActionEnvelope{Channel: c.uri, Action: protocol.StateAction{Action: a}, ServerSeq: h.seq, Origin: origin}
	c.appendLocked(env)
	shared := NewEnvelope(env)
	for sub := range c.subs {
		sub.Send(shared)
	}
	return env
}

// Reject sends a rejection envelope to the dispatching subscriber only. It
// consumes no serverSeq and is not replayed; serverSeq carries the current
// value so cursors do not move backwards.
func (c *Channel) Reject(sub Subscriber, a protocol.Action, origin *protocol.ActionOrigin, reason string) {
	c.h.Reject(sub, c.uri, a, origin, reason)
}

// Reject is Channel.Reject for a channel the hub need not know (the root
// channel, or one that does not exist).
func (h *Hub) Reject(sub Subscriber, channelURI string, a protocol.Action, origin *protocol.ActionOrigin, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sub.Send(NewEnvelope(protocol.ActionEnvelope{Channel: channelURI, Action: protocol.StateAction{Action: a}, ServerSeq: h.seq, Origin: origin, RejectionReason: reason}))
}

// Attachment is the result of attaching a subscriber to a channel.
type Attachment struct {
	Snapshot protocol.Snapshot
	// Replay holds the envelopes after the requested cursor; CanReplay is
	// false when some were evicted from the replay buffer.
	Replay    []protocol.ActionEnvelope
	CanReplay bool
	// NextSeq, called inside done only, consumes a serverSeq for an
	// envelope that this subscriber alone receives: a transport catching a
	// lagging client up from the snapshot sends it actions numbered after
	// the snapshot and before every later action, as any client expects.
	NextSeq func() int64
}

// Attach registers sub on c and calls done with a snapshot taken at the
// registration point, all under the hub's lock, so no action falls
// between the snapshot and the live stream. state must return a copy that
// is safe to encode on another goroutine, and be cheap: every publish
// waits for it. done must not block.
func (c *Channel) Attach(sub Subscriber, lastSeen int64, state func() any, done func(Attachment, error)) {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	var at Attachment
	// A cursor outside this run's sequence numbers was handed out by an
	// earlier run of the daemon (or under a clock that since went back):
	// this run's replay buffers cannot bring it up to date, only a
	// snapshot can.
	if lastSeen >= 0 && lastSeen >= h.firstSeq && lastSeen <= h.seq {
		at.Replay, at.CanReplay = c.replayLocked(lastSeen)
	}
	at.Snapshot = protocol.Snapshot{Resource: c.uri, State: state(), FromSeq: h.seq}
	at.NextSeq = func() int64 { h.seq++; return h.seq } // the lock is held while done runs
	c.subs[sub] = struct{}{}
	done(at, nil)
}

// Detach removes sub from c.
func (c *Channel) Detach(sub Subscriber) {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	delete(c.subs, sub)
}

// Has reports whether sub is subscribed to c.
func (c *Channel) Has(sub Subscriber) bool {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	_, ok := c.subs[sub]
	return ok
}

// Subscribers returns how many subscribers c has.
func (c *Channel) Subscribers() int {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	return len(c.subs)
}

// DropSubscribers detaches every subscriber of the channels.
func (h *Hub) DropSubscribers(chs ...*Channel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range chs {
		clear(c.subs)
	}
}

// Notify sends a protocol notification to c's subscribers, in sequence
// with its actions.
func (c *Channel) Notify(method string, params any) {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	for sub := range c.subs {
		sub.Notify(method, params)
	}
}

// appendLocked records env for replay. The hub's lock must be held.
func (c *Channel) appendLocked(env protocol.ActionEnvelope) {
	if len(c.ring) < c.ringCap {
		c.ring = append(c.ring, env)
		return
	}
	// Full: overwrite the oldest in place rather than shifting the ring on
	// every commit.
	c.evicted = c.ring[c.head].ServerSeq
	c.ring[c.head] = env
	c.head = (c.head + 1) % len(c.ring)
}

// replayLocked returns the envelopes after lastSeen, or false when some of
// them have been evicted. The hub's lock must be held.
func (c *Channel) replayLocked(lastSeen int64) ([]protocol.ActionEnvelope, bool) {
	if lastSeen < c.evicted {
		return nil, false
	}
	var out []protocol.ActionEnvelope
	for i := range c.ring {
		if env := c.ring[(c.head+i)%len(c.ring)]; env.ServerSeq > lastSeen {
			out = append(out, env)
		}
	}
	return out, true
}

// Envelope is an action envelope on its way to subscribers. Fan-out to a
// thousand subscribers must not encode it a thousand times: Frame encodes
// it once per protocol generation (current, and 0.6/0.7) and hands every
// caller of that generation the same bytes.
type Envelope struct {
	protocol.ActionEnvelope
	once  [2]sync.Once
	frame [2][]byte
}

// NewEnvelope wraps env for delivery.
func NewEnvelope(env protocol.ActionEnvelope) *Envelope { return &Envelope{ActionEnvelope: env} }

// Frame returns encode(envelope) for the generation legacy selects,
// computed by its first caller. The returned bytes must not be modified.
func (e *Envelope) Frame(legacy bool, encode func(protocol.ActionEnvelope) []byte) []byte {
	g := 0
	if legacy {
		g = 1
	}
	e.once[g].Do(func() { e.frame[g] = encode(e.ActionEnvelope) })
	return e.frame[g]
}
