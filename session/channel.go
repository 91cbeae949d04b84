package session

import (
	"sync"

	"github.com/changesetd/changesetd/protocol"
)

// Subscriber receives envelopes and notifications for the channels it is
// subscribed to. Implementations must not block: a subscriber that cannot
// keep up closes itself and is then removed by Manager.Detach.
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

// channel is the sequencing and fan-out part of one channel. Its owner
// (the Manager for root, a Session actor otherwise) keeps the typed state.
// All fields are guarded by Manager.commitMu.
type channel struct {
	uri string

	ring    []protocol.ActionEnvelope // circular once full: oldest at ring[head]
	head    int
	ringCap int
	evicted int64 // highest serverSeq dropped from the ring; replay after it only
	subs    map[Subscriber]struct{}
}

func newChannel(uri string, ringCap int) *channel {
	return &channel{uri: uri, ringCap: ringCap, subs: map[Subscriber]struct{}{}}
}

// appendLocked records env for replay. m.commitMu must be held.
func (c *channel) appendLocked(env protocol.ActionEnvelope) {
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
// them have been evicted. m.commitMu must be held.
func (c *channel) replayLocked(lastSeen int64) ([]protocol.ActionEnvelope, bool) {
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
