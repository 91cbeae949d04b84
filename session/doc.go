// Package session owns the live state of every channel the daemon serves:
// the root channel, one actor per session (its SessionState and every
// changeset channel under it), subscriptions, the global serverSeq and the
// per-channel replay buffers.
//
// # Commit path
//
// Every state change goes through one path: the owner reduces the action
// with package reducer, then, under Manager.commitMu, assigns the next
// global serverSeq, appends the envelope to the channel's replay ring and
// hands it to every subscriber. Because sequence assignment and fan-out
// happen under one lock, every connection receives envelopes in global
// serverSeq order, so a connection-wide lastSeenServerSeq (the legacy
// reconnect cursor) never skips an action on another channel. Snapshots
// are registered under the same lock: fromSeq is the sequence number at
// registration and every later action on the channel is delivered live.
//
// # Actors
//
// Each Session runs one goroutine that owns its state; callers post
// closures to its mailbox and never block on it. Slow work (scanning a
// working tree, diffing) runs on other goroutines and posts its result back
// to the actor. Subscribers must not block either: Subscriber.Send enqueues
// and the transport disconnects a subscriber whose queue overflows.
//
// The package imports protocol, reducer, uritemplate, changeset, confine
// and store (for its record types); it never imports server, scm, metrics,
// jsonrpc2, gorilla, go-git or fsnotify. The working tree is reached
// through the Workspace interface, durable state through Store and
// instruments through Metrics, all given in Options.
package session
