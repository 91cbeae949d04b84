// Package ahpclient is the Go client of the Agent Host Protocol as the
// daemon speaks it: JSON-RPC 2.0 over a WebSocket. It dials with the
// token and Origin the daemon checks, correlates requests with their
// responses, and hands each notification to whoever is waiting for it:
// the hook of the call it arrives during, else the listener, else a queue
// that the next of those takes first. The CLI, the end-to-end tests, the
// load program and the benchmark all reach the daemon through it; no
// other package of the module but the server imports the WebSocket
// library (test/layering_test.go holds to that).
//
// One goroutine per connection reads, and Close waits for it. Writes are
// serialized, so calls may be made from several goroutines at once. With
// Options.Record a client also keeps every frame, for tests.
//
// It imports protocol and the WebSocket library only: it knows the wire,
// not the daemon's insides.
package ahpclient
