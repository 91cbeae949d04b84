package session

import "context"

// A caller that serves requests in order (the server's queue of one
// connection) waits for each to take effect before it starts the next.
// Most methods take effect when they return. One that only starts work
// on the actor, and returns once that work is done (an operation, which
// may run long on its repository's lock), says when it has taken its
// place instead: it calls the function WithAccepted put in its ctx, and
// the caller may start the next request while it runs.

type acceptedKey struct{}

// WithAccepted returns ctx carrying f, which a method of the Manager
// calls once what it was asked has taken its place, in order, on the
// session actor. f may be called more than once, or not at all when the
// method fails first; it must not block.
func WithAccepted(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, acceptedKey{}, f)
}

// accepted calls the function WithAccepted put in ctx, if any.
func accepted(ctx context.Context) {
	if f, ok := ctx.Value(acceptedKey{}).(func()); ok {
		f()
	}
}
