// Package hub sequences what the daemon publishes: it owns the global
// serverSeq, each channel's replay ring and subscribers, and the
// registration point of every snapshot (attach), replay and catch-up.
//
// # Commit path
//
// A channel's owner reduces an action on its own state, then publishes it
// here: under the hub's lock the envelope gets the next global serverSeq,
// joins the channel's replay ring and is handed to every subscriber.
// Because sequence assignment and fan-out happen under one lock, every
// connection receives envelopes in global serverSeq order, so a
// connection-wide lastSeenServerSeq (the legacy reconnect cursor) never
// skips an action on another channel. Snapshots are registered under the
// same lock: fromSeq is the sequence number at registration and every
// later action on the channel is delivered live.
//
// Only sequencing runs under the lock. Subscribers' Send and Notify must
// not block and must not call back into the hub.
//
// The hub knows nothing of sessions or transports: package session owns
// the channels' state and package server the connections.
package hub
