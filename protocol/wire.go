package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The JSON-RPC 2.0 envelope types, the one definition used by the server
// and by every client in this module. Keys are exactly those of JSON-RPC
// 2.0: a response carries either "result" or "error", never both.

// JSONRPCVersion is the value of every message's "jsonrpc" member.
const JSONRPCVersion = "2.0"

// Request is a JSON-RPC request, or a notification when ID is nil.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  any             `json:"params,omitempty"`
}

// NewRequest returns a request with a numeric id.
func NewRequest(id int64, method string, params any) Request {
	return Request{JSONRPC: JSONRPCVersion, ID: IntID(id), Method: method, Params: params}
}

// Notification is a JSON-RPC notification.
type Notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// NewNotification returns a notification of method with params.
func NewNotification(method string, params any) Notification {
	return Notification{JSONRPC: JSONRPCVersion, Method: method, Params: params}
}

// EncodeActionNotification encodes an "action" notification carrying env,
// byte for byte as json.Marshal(NewNotification(NotifyAction, env)) does,
// but assembled around the action's encoding instead of scanning and
// copying it again at every level: a changeset's first file list is
// megabytes.
func EncodeActionNotification(env ActionEnvelope) ([]byte, error) {
	var (
		action, typ, body []byte
		err               error
	)
	switch env.Action.Action.(type) {
	case nil:
		action = []byte("null")
	case UnknownAction:
		// Sent as received, which encoding/json compacts and escapes.
		action, err = json.Marshal(env.Action)
	default:
		// Its parts are written straight into the envelope below.
		typ, body, err = actionParts(env.Action.Action)
	}
	if err != nil {
		return nil, err
	}
	channel, err := json.Marshal(env.Channel)
	if err != nil {
		return nil, err
	}
	n := len(action)
	if body != nil {
		n = actionLen(typ, body)
	}
	b := make([]byte, 0, n+len(channel)+128)
	b = append(b, `{"jsonrpc":"`+JSONRPCVersion+`","method":"`+NotifyAction+`","params":{"channel":`...)
	b = append(b, channel...)
	b = append(b, `,"action":`...)
	if body != nil {
		b = appendAction(b, typ, body)
	} else {
		b = append(b, action...)
	}
	b = append(b, `,"serverSeq":`...)
	b = strconv.AppendInt(b, env.ServerSeq, 10)
	if env.Origin != nil {
		o, err := json.Marshal(env.Origin)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"origin":`...)
		b = append(b, o...)
	}
	if env.RejectionReason != "" {
		r, err := json.Marshal(env.RejectionReason)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"rejectionReason":`...)
		b = append(b, r...)
	}
	return append(b, "}}"...), nil
}

// Response is a JSON-RPC response. When Error is set the encoding has no
// "result" member; otherwise it has "result", null for a nil Result.
type Response struct {
	ID     json.RawMessage // the request's id as it was sent; null when unknown
	Result any
	Error  *Error
}

// MarshalJSON writes exactly one of "result" and "error".
func (r Response) MarshalJSON() ([]byte, error) {
	id := r.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if r.Error != nil {
		return json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *Error          `json:"error"`
		}{JSONRPCVersion, id, r.Error})
	}
	res, err := marshalResult(r.Result)
	if err != nil {
		return nil, err
	}
	// Assembled by hand: encoding/json would scan the result again to
	// compact it, twice for a result that is itself Encoded.
	b := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(id)+len(res))
	b = append(b, `{"jsonrpc":"`+JSONRPCVersion+`","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, res...)
	return append(b, '}'), nil
}

// EncodeParts is MarshalJSON as pieces to be written one after another
// as one message. A subscribe result whose snapshot state is Encoded is
// one of the pieces, not copied: the state of a large changeset is
// megabytes, shared by every subscriber until the state changes, and a
// copy of it for each reply was most of what a run of subscribes
// allocated. The pieces must not be modified.
func (r Response) EncodeParts() ([][]byte, error) {
	sr, ok := r.Result.(SubscribeResult)
	if !ok || r.Error != nil {
		b, err := r.MarshalJSON()
		return [][]byte{b}, err
	}
	id := r.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b := append([]byte(`{"jsonrpc":"`+JSONRPCVersion+`","id":`), id...)
	b = append(b, `,"result":`...)
	head, state, tail, ok, err := sr.encodedParts(b)
	if err != nil {
		return nil, err
	}
	if !ok {
		return [][]byte{append(head, '}')}, nil
	}
	return [][]byte{head, state, append(tail, '}')}, nil
}

// Encoded is JSON this program made with encoding/json, kept to be sent
// as it is: a snapshot of a large changeset is megabytes, and encoding/json
// would scan every byte again to compact it. A subscribe result whose
// snapshot state is Encoded is written without that scan.
type Encoded []byte

func (e Encoded) MarshalJSON() ([]byte, error) { return e, nil }

// marshalResult encodes a result; one that holds Encoded parts writes
// them itself (see SubscribeResult.appendJSON).
func marshalResult(v any) ([]byte, error) {
	if a, ok := v.(interface{ appendJSON([]byte) ([]byte, error) }); ok {
		return a.appendJSON(nil)
	}
	return json.Marshal(v)
}

// RPCMessage is any incoming JSON-RPC message, for clients to decode: a
// response has ID and Result or Error, a notification Method and Params.
type RPCMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// IsResponse reports whether m answers a request.
func (m *RPCMessage) IsResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// IntID encodes a numeric request id.
func IntID(n int64) json.RawMessage {
	b, _ := json.Marshal(n)
	return b
}

// IDEqual reports whether two encoded ids are the same id.
func IDEqual(a, b json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b)) }
