// Package annotation holds what a review annotation is apart from the
// session that keeps it: the limits on what a client may store, the checks
// of an entry and of an anchor's range, the stamps the server puts on an
// entry, the _meta keys the server owns, and where an anchored range lies
// in a later version of its file (placement by line mapping).
//
// It is pure: no goroutines, no store, no hub and no session. The actor
// in package session validates an action against its state with these
// functions, stores and publishes it, and computes places off the actor
// with MapRange.
package annotation
