package protocol

import (
	"errors"
	"fmt"
)

// JSON-RPC and AHP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	CodeSessionNotFound            = -32001
	CodeProviderNotFound           = -32002
	CodeSessionAlreadyExists       = -32003
	CodeTurnInProgress             = -32004
	CodeUnsupportedProtocolVersion = -32005
	CodeAuthRequired               = -32007
	CodeNotFound                   = -32008
	CodePermissionDenied           = -32009
	CodeAlreadyExists              = -32010
	// CodeConflict is AHP's Conflict (upstream types/common/errors.ts):
	// an optimistic-concurrency precondition failed, the state it was
	// checked against having moved on. Here that is the working tree's
	// git index locked by another process (data {"reason":
	// ReasonIndexLocked}), or a revert whose expected nonce or file
	// content no longer matches; the request changed nothing and may be
	// retried after a fresh read.
	CodeConflict = -32011
)

// Reasons carried in error.data.reason so clients need not parse messages.
const (
	ReasonIndexLocked = "indexLocked"
	// ReasonSessionStarting: the session is still taking its baseline;
	// the same request succeeds a moment later.
	ReasonSessionStarting = "sessionStarting"
)

// WithReason returns e carrying {"reason": reason} as its data.
func (e *Error) WithReason(reason string) *Error {
	e.Data = map[string]any{"reason": reason}
	return e
}

// ReasonOf reports data.reason of the first *Error in err's chain, or "".
// It reads both the server's own errors and errors decoded from the wire.
func ReasonOf(err error) string {
	var pe *Error
	if !errors.As(err, &pe) {
		return ""
	}
	if m, ok := pe.Data.(map[string]any); ok {
		r, _ := m["reason"].(string)
		return r
	}
	return ""
}

// Error is an error that carries a JSON-RPC error code and optional data.
// Handlers wrap it with %w; the server finds it with errors.As and keeps the
// code while using the outermost message. It is also the JSON-RPC error
// object on the wire: data is omitted when nil.
type Error struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code int64, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Sentinels that carry codes; wrap them to add context:
//
//	fmt.Errorf("subscribe %s: %w", uri, protocol.ErrNotFound)
var (
	ErrInvalidRequest  = &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	ErrMethodNotFound  = &Error{Code: CodeMethodNotFound, Message: "method not found"}
	ErrInvalidParams   = &Error{Code: CodeInvalidParams, Message: "invalid params"}
	ErrInternal        = &Error{Code: CodeInternalError, Message: "internal error"}
	ErrSessionNotFound = &Error{Code: CodeSessionNotFound, Message: "session not found"}
	ErrSessionExists   = &Error{Code: CodeSessionAlreadyExists, Message: "session already exists"}
	ErrNotFound        = &Error{Code: CodeNotFound, Message: "not found"}
	ErrPermission      = &Error{Code: CodePermissionDenied, Message: "permission denied"}
	ErrTurnInProgress  = &Error{Code: CodeTurnInProgress, Message: "turn in progress"}
)

// CodeOf reports the code of the first *Error in err's chain, or
// CodeInternalError when there is none.
func CodeOf(err error) int64 {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return CodeInternalError
}

// DataOf reports the Data of the first *Error in err's chain.
func DataOf(err error) any {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Data
	}
	return nil
}
