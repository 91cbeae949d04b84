package session

import "github.com/changesetd/changesetd/hub"

// The sequencing of every channel (serverSeq, replay rings, fan-out,
// attach) is package hub's; session owns the channels' state. These names
// keep the transport's view of session unchanged.
type (
	// Subscriber receives envelopes and notifications (hub.Subscriber).
	Subscriber = hub.Subscriber
	// Envelope is an action envelope on its way to subscribers
	// (hub.Envelope).
	Envelope = hub.Envelope
	// Attachment is the result of attaching a subscriber (hub.Attachment).
	Attachment = hub.Attachment
)

// NewEnvelope wraps env for delivery (hub.NewEnvelope).
var NewEnvelope = hub.NewEnvelope

// DefaultReplayBuffer is the number of envelopes kept per channel for
// reconnect replay (hub.DefaultReplayBuffer).
const DefaultReplayBuffer = hub.DefaultReplayBuffer
