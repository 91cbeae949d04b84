package protocol

// CodeOverloaded refuses a request because its connection already has as
// many requests in flight as it may (server.Config.MaxInFlight): nothing
// was done, and the request may be sent again once answers come back.
// It is JSON-RPC's first implementation-defined server error, which AHP
// leaves unassigned (its own codes start at -32001); the error's data
// carries ReasonOverloaded.
const CodeOverloaded = -32000

const (
	// ReasonOverloaded: the connection has too many requests in flight.
	ReasonOverloaded = "overloaded"
	// ReasonDuplicateRequestID: a request (-32600) reuses the id of one
	// of its connection still in flight; the earlier one is answered as
	// if the duplicate had not been sent.
	ReasonDuplicateRequestID = "duplicateRequestId"
)
