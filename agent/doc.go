// Package agent holds what the hooks of a coding agent need from the
// daemon, apart from talking to it: reading and checking the JSON a hook
// receives on standard input (HookInput), naming the agent's own chat
// (Key), choosing the review annotations that are feedback for the
// agent's next prompt (Select), and writing them as the text the agent is
// shown (Feedback), or as a listing (WriteText, WriteMarkdown).
//
// An annotation is feedback for the agent when it is unresolved, has an
// entry someone other than the agent wrote that the agent has not been
// handed (_meta[protocol.MetaDelivered]), is not a VS Code review
// comment still waiting for the user to accept it
// (_meta[protocol.MetaFeedback] in state "created"), and is not on a turn
// of another agent's chat.
//
// It is pure: no I/O but the reader and writers it is given, no clock, no
// goroutines. It imports protocol and confine only; the command dials the
// daemon and passes in what it read.
package agent
