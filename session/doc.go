// Package session owns the live state of every channel the daemon serves:
// the root channel, one actor per session (its SessionState and every
// changeset channel under it), subscriptions, the global serverSeq and the
// per-channel replay buffers.
//
// # Commit path
//
// Every state change goes through one path: the owner reduces the action
// with package reducer, then publishes it through package hub, which
// encodes it once and, under its lock, assigns the next global serverSeq,
// appends the envelope to the channel's replay ring (bounded in bytes)
// and hands it to every subscriber. Because sequence assignment and
// fan-out happen under one lock, every connection receives envelopes in
// global serverSeq order, so a connection-wide lastSeenServerSeq (the
// legacy reconnect cursor) never skips an action on another channel.
// Snapshots are registered under the same lock: fromSeq is the sequence
// number at registration and every later action on the channel is
// delivered live. A refresh publishes the files that changed, in chunks
// (view.Model.Publish).
//
// # The view model
//
// What a changeset's subscribers hold is a value of package view
// (session/view): the state, the review flags and hunk marks bound to the
// content they were given at, and the view stamps. The actor builds each
// computed file's wire form, hands the list to the Model, and publishes
// the actions it returns (Reconcile, Publish); it stores and notifies from
// what it returns as well. The Model runs no goroutine and imports neither
// this package, server nor store, which the layering test enforces.
//
// # Actors
//
// Each Session runs one goroutine that owns its state; callers post
// closures to its mailbox and never block on it. Slow work (scanning a
// working tree, diffing) runs on other goroutines and posts its result back
// to the actor. Subscribers must not block either: Subscriber.Send enqueues,
// and the transport catches up a subscriber whose queue overflows.
//
// What callers ask of an actor is a query or a command. A query only
// reads and may be abandoned: when the caller's context ends first, the
// actor skips it. A command changes state and is the actor's once posted:
// it runs to completion and publishes its outcome whether or not the
// caller still waits (a changeset operation's flight, a turn boundary,
// an edit report), so a client that disconnects leaves nothing half done.
// Listing sessions waits for no actor: each keeps its catalogue entry as
// of its last batch of work.
//
// Operations that write a working tree or an index run one at a time per
// repository, across sessions, in the order their actors accepted them
// (repolock.go). A caller serving requests in order (a connection) learns
// through WithAccepted when an operation has taken its place, and need
// not wait for its work (accept.go).
//
// # Versions
//
// Every intent of a client (an operation, a review flag, a hunk mark) is
// bound to the versions it was made on (view.Shown, versions.go): the content nonces
// of the files and the view stamp of HEAD and the index it names in its
// _meta, checked equal to what the changeset published, else what the
// changeset last published. The Editor receives those versions in the
// Edit and checks them against the disk; it never acts on whatever is on
// disk at the moment of the write.
//
// # Durable state
//
// A session's record, turns, review flags and annotations (one record per
// annotation) go to Store before the action that changed them is echoed.
// A dispose keeps them, marked disposed, for DisposedRetention: creating
// the session again on the same directories brings them back.
//
// # What the package reads itself
//
// Nothing, but for one check. The working trees are reached through the
// Workspace interface (status, diffs, snapshots, objects, watches) and
// written through Editor, both given by Options.OpenWorkspace; a file a
// client reads by its file:// URI (resourceRead), and the current content
// an annotation's place is mapped onto, are read by Options.ReadFile,
// which the session hands the confinement to apply (inside some session's
// working directory once symbolic links are resolved); durable state goes
// through Store and instruments through Metrics. createSession's
// directories are checked, and their symbolic links resolved, by confine;
// the package itself imports neither os nor syscall.
//
// The package imports protocol, reducer, uritemplate, changeset, confine
// and store (for its record types), and its pure parts: session/view (a
// changeset's view model), session/ops (an operation's plan: what it is
// checked against, writes and puts back), session/attrib (who wrote each
// hunk) and session/annotation (what an annotation action may be, the
// stamps on its entries, and where an anchored range lies in another
// version of its file; annotations.go keeps the actor's half: storing,
// publishing, snapshots and placing off the loop). It never imports
// server, scm, metrics, jsonrpc2, gorilla, go-git or fsnotify.
package session
