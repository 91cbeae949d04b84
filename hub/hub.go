package hub

import (
	"sync"

	"github.com/changesetd/changesetd/protocol"
)

// DefaultReplayBuffer is the number of envelopes kept per channel for
// reconnect replay. 1024 covers a few minutes of a busy changeset; older
// gaps fall back to a snapshot, which is always correct, just larger.
const DefaultReplayBuffer = 1024

// DefaultReplayBytes bounds the encoded bytes a channel's replay ring
// keeps, whatever the number of envelopes: a checkout's thousands of
// files are cheaper to send again as a snapshot than to keep for a
// reconnect that may never come, and a series of them must not hold
// a thousand file lists.
const DefaultReplayBytes = 4 << 20

// Subscriber receives envelopes and notifications for the channels it is
// subscribed to. Implementations must not block: a subscriber that cannot
// keep up closes itself and is then detached by its owner.
type Subscriber interface {
	// ClientID is the identity from initialize, used in origins.
	ClientID() string
	// Version is the negotiated protocol version, used to gate wire deltas.
	Version() string
	// Send delivers an action envelope, in the newest shape, encoded. The
	// same *Envelope goes to every subscriber, which all write the same
	// bytes (Envelope.WriteTo). It runs under the hub's lock: it queues,
	// and nothing more.
	Send(env *Envelope)
	// Notify delivers a protocol notification such as root/sessionAdded.
	Notify(method string, params any)
}

// Hub holds the global serverSeq and sequences every channel made by
// NewChannel.
type Hub struct {
	mu        sync.Mutex
	seq       int64
	firstSeq  int64 // cursors before it are from an earlier run
	ringCap   int
	ringBytes int64
}

// New returns a hub whose first serverSeq follows seqBase. serverSeq must
// never be reused, also across restarts, or a client's reconnect cursor
// from an earlier run would be taken for one of this run; cursors at or
// below seqBase are answered with snapshots. ringCap and ringBytes bound
// the replay ring of each channel in envelopes and in encoded bytes (0:
// DefaultReplayBuffer, DefaultReplayBytes).
func New(seqBase int64, ringCap int, ringBytes int64) *Hub {
	if ringCap <= 0 {
		ringCap = DefaultReplayBuffer
	}
	if ringBytes <= 0 {
		ringBytes = DefaultReplayBytes
	}
	return &Hub{seq: seqBase, firstSeq: seqBase, ringCap: ringCap, ringBytes: ringBytes}
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

	ring      []*Envelope // oldest first, from ring[head]
	head      int
	ringBytes int64 // encoded bytes of ring[head:]
	evicted   int64 // highest serverSeq dropped from the ring; replay after it only
	subs      map[Subscriber]struct{}
}

// NewChannel returns a channel with no subscribers and nothing to replay.
func (h *Hub) NewChannel(uri string) *Channel {
	return &Channel{h: h, uri: uri, subs: map[Subscriber]struct{}{}}
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
// replay and fans it out. The action is encoded before the lock is taken;
// under it the envelope only gets its number, joins the ring and is
// queued on every subscriber, which all share its bytes.
func (c *Channel) Publish(a protocol.Action, origin *protocol.ActionOrigin) protocol.ActionEnvelope {
	e := NewEnvelope(protocol.ActionEnvelope{Channel: c.uri, Action: protocol.StateAction{Action: a}, Origin: origin})
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	e.ServerSeq = h.seq
	c.appendLocked(e)
	for sub := range c.subs {
		sub.Send(e)
	}
	return e.ActionEnvelope
}

// PublishAll publishes actions on c as Publish does, in order and with
// consecutive serverSeqs: one hold of the lock for a chunk of a burst.
func (c *Channel) PublishAll(actions []protocol.Action) {
	envs := make([]*Envelope, len(actions))
	for i, a := range actions {
		envs[i] = NewEnvelope(protocol.ActionEnvelope{Channel: c.uri, Action: protocol.StateAction{Action: a}})
	}
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range envs {
		h.seq++
		e.ServerSeq = h.seq
		c.appendLocked(e)
		for sub := range c.subs {
			sub.Send(e)
		}
	}
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
	e := NewEnvelope(protocol.ActionEnvelope{Channel: channelURI, Action: protocol.StateAction{Action: a}, Origin: origin, RejectionReason: reason})
	h.mu.Lock()
	defer h.mu.Unlock()
	e.ServerSeq = h.seq
	sub.Send(e)
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

// appendLocked records e for replay, evicting the oldest envelopes past
// the ring's bounds in envelopes or bytes. The hub's lock must be held.
func (c *Channel) appendLocked(e *Envelope) {
	c.ring = append(c.ring, e)
	c.ringBytes += int64(e.Size())
	for len(c.ring)-c.head > c.h.ringCap || c.ringBytes > c.h.ringBytes {
		old := c.ring[c.head]
		c.ring[c.head] = nil
		c.head++
		c.ringBytes -= int64(old.Size())
		c.evicted = old.ServerSeq
	}
	// Shift the live part down once the dropped part is as long: each
	// envelope is moved at most once on average.
	if c.head > 0 && c.head >= len(c.ring)-c.head {
		n := copy(c.ring, c.ring[c.head:])
		clear(c.ring[n:])
		c.ring, c.head = c.ring[:n], 0
	}
}

// RingBytes returns the encoded bytes c's replay ring holds.
func (c *Channel) RingBytes() int64 {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	return c.ringBytes
}

// replayLocked returns the envelopes after lastSeen, or false when some of
// them have been evicted. The hub's lock must be held.
func (c *Channel) replayLocked(lastSeen int64) ([]protocol.ActionEnvelope, bool) {
	if lastSeen < c.evicted {
		return nil, false
	}
	var out []protocol.ActionEnvelope
	for _, e := range c.ring[c.head:] {
		if e.ServerSeq > lastSeen {
			out = append(out, e.ActionEnvelope)
		}
	}
	return out, true
}
