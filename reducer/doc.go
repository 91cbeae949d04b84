// Package reducer holds the pure state machines of the channels a changeset
// host serves: ApplyChangeset for ahp-changeset: channels and ApplySession
// for ahp-session: channels.
//
// Each apply function takes a state, an action and an Env and returns the
// next state plus an Outcome. The functions are pure:
//
//   - they never modify the state they are given. Slices, maps and pointers
//     reachable from the input are copied before anything inside them
//     changes (copy-on-write), so a caller may keep handing the old state to
//     other goroutines while it applies the next action. The new state
//     shares unchanged parts with the old one, and payload values with the
//     action, so none of the three may be mutated in place afterwards;
//   - they do no I/O, read no clock, start no goroutines and never log;
//   - they never panic, whatever the action carries. Actions of unknown
//     type (protocol.UnknownAction) or of another channel, and actions whose
//     target does not exist, leave the state unchanged and report NoOp.
//
// Actions are matched by their value types, as protocol.DecodeAction
// returns them; pointers to action structs are treated as unknown.
//
// Env carries the negotiated protocol version, because 0.6/0.7 clients
// reduce two actions differently from 1.0 (see Legacy).
//
// The package imports only protocol and the standard library. It must not
// import sync, os, net, log/slog or any transport, git or file-watching
// package, and must not call time.Now.
package reducer
