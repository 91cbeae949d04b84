// Package server is the transport edge: the HTTP handler that upgrades
// /ahp to a WebSocket after checking the token, Origin and Host; one conn
// per connection over a frame stream (stream.go) that validates every
// frame as JSON-RPC 2.0 itself, sourcegraph/jsonrpc2 supplying only the
// request type; the method switch (handlers.go); and graceful shutdown.
//
// The read loop (conn.run) never waits on a session: it admits each
// request into the connection's queue (order.go), refusing one whose id is
// in flight or that would pass the bound on requests in flight, and
// answers ping, resourceRead and listSessions at once. One goroutine of
// the connection, while it has requests, handles them in order, each once
// the one before took effect: returned, with the work it handed to a
// goroutine the connection owns (conn.async) done, or, for an operation,
// accepted by its session actor (session.WithAccepted), so requests of a
// connection reach the actors in the order sent. Replies, notifications
// and action envelopes share the stream's one queue, drained by one writer
// goroutine, so a reply carrying a snapshot always precedes the live
// actions after it; initialize and reconnect reserve their reply's place
// in the queue before they gather snapshots (stream.reserve), so actions
// committed meanwhile follow the reply while earlier frames go out.
//
// A client that reads more slowly than a burst is produced is caught up,
// not dropped: past --send-queue messages (or 64 MiB) queued, the
// changeset actions in its backlog give way, once the rest has drained,
// to actions built from a fresh snapshot of each such channel
// (conn.catchUp), encoded off the sequencing lock. Frames nothing can
// stand in for close the connection at four times that. Frames are
// written in 64 KiB pieces, each under a fresh write deadline, so a large
// one takes as long as the client needs; only a client that reads nothing
// for the write timeout is closed. resourceRead runs a bounded
// number of reads per connection and in total, each at most 64 MiB.
//
// The same listener serves the review page of package web at / and
// /assets/, without a token (it holds no data) but behind the Host check;
// the page's own origin passes the Origin check of the upgrade.
//
// The package imports session, hub (the envelopes it queues), protocol, web, jsonrpc2 (for its
// Request type), gorilla/websocket and the standard library; it never
// imports scm, go-git or fsnotify. What it counts goes to the Metrics of
// its Config, and /metrics is served by the Config's handler: the
// instruments live in package metrics, which only the daemon wires in.
package server
