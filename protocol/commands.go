package protocol

import (
	"encoding/json"
	"strconv"
)

// Method names.
const (
	MethodInitialize               = "initialize"
	MethodPing                     = "ping"
	MethodSubscribe                = "subscribe"
	MethodUnsubscribe              = "unsubscribe"
	MethodDispatchAction           = "dispatchAction"
	MethodReconnect                = "reconnect"
	MethodListSessions             = "listSessions"
	MethodCreateSession            = "createSession"
	MethodDisposeSession           = "disposeSession"
	MethodResourceRead             = "resourceRead"
	MethodInvokeChangesetOperation = "invokeChangesetOperation"
	MethodFetchTurns               = "fetchTurns"

	// Implementation-defined commands, under AHP's reserved x- prefix.
	MethodTurnStart  = "x-changesetd/turnStart"
	MethodTurnEnd    = "x-changesetd/turnEnd"
	MethodEditEvents = "x-changesetd/editEvents"
	// MethodAnnotationsDelivered records that annotations were handed to
	// the agent.
	MethodAnnotationsDelivered = "x-changesetd/annotationsDelivered"
	// MethodSetBranchBase chooses the base of a session's branch
	// changeset.
	MethodSetBranchBase = "x-changesetd/setBranchBase"
	// MethodDraft publishes a provisional version of a file being written.
	MethodDraft = "x-changesetd/draft"

	NotifyAction                = "action"
	NotifySessionAdded          = "root/sessionAdded"
	NotifySessionRemoved        = "root/sessionRemoved"
	NotifySessionSummaryChanged = "root/sessionSummaryChanged"
)

// BaseParams is embedded by every command's params.
type BaseParams struct {
	Channel string `json:"channel"`
	Meta    Object `json:"_meta,omitzero"`
}

type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Title   string `json:"title,omitempty"`
}

type InitializeParams struct {
	BaseParams
	ProtocolVersions     []string    `json:"protocolVersions"`
	ClientID             string      `json:"clientId"`
	ClientInfo           *ClientInfo `json:"clientInfo,omitempty"`
	InitialSubscriptions []string    `json:"initialSubscriptions,omitzero"`
	Locale               string      `json:"locale,omitempty"`
}

type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type InitializeResult struct {
	ProtocolVersion  string      `json:"protocolVersion"`
	ServerSeq        int64       `json:"serverSeq"`
	Snapshots        []Snapshot  `json:"snapshots"`
	ServerInfo       *ServerInfo `json:"serverInfo,omitempty"`
	DefaultDirectory string      `json:"defaultDirectory,omitempty"`
	Meta             Object      `json:"_meta,omitzero"`
}

// MetaSessionURIs, true in an initialize result's _meta, declares that
// sessions are ahp-session: URIs whose agent is SessionSummary.provider,
// not the URI's scheme (VS Code's supportsAgentHostSessionUris).
const MetaSessionURIs = "vscode.ahpSessionUris"

// Snapshot is a channel's state at FromSeq. State is one of RootState,
// SessionState, ChatState or ChangesetState.
type Snapshot struct {
	Resource string `json:"resource"`
	State    any    `json:"state"`
	FromSeq  int64  `json:"fromSeq"`
}

type SubscribeParams struct {
	BaseParams
	Delivery json.RawMessage `json:"delivery,omitempty"`
	View     json.RawMessage `json:"view,omitempty"`
}

type SubscribeResult struct {
	Snapshot *Snapshot `json:"snapshot,omitempty"`
}

// appendJSON writes the result, an Encoded snapshot state as it is (as
// encoding/json would write it, without scanning it again).
func (r SubscribeResult) appendJSON(b []byte) ([]byte, error) {
	head, state, tail, ok, err := r.encodedParts(b)
	if !ok || err != nil {
		return head, err
	}
	b = append(head, state...)
	return append(b, tail...), nil
}

// encodedParts splits r's encoding around its snapshot's Encoded state:
// head is appended to b, then state, the very bytes of the snapshot,
// then tail. ok is false when the state is not Encoded: head then holds
// the whole encoding.
func (r SubscribeResult) encodedParts(b []byte) (head []byte, state Encoded, tail []byte, ok bool, err error) {
	if r.Snapshot != nil {
		switch st := r.Snapshot.State.(type) {
		case Encoded:
			state, ok = st, true
		case ChangesetState:
			// Written by its own encoder rather than through
			// encoding/json, which would scan the megabytes of its
			// files once more to compact them.
			if state, err = st.MarshalJSON(); err != nil {
				return nil, nil, nil, false, err
			}
			ok = true
		}
	}
	if !ok {
		out, err := json.Marshal(r)
		return append(b, out...), nil, nil, false, err
	}
	res, err := json.Marshal(r.Snapshot.Resource)
	if err != nil {
		return nil, nil, nil, false, err
	}
	b = append(b, `{"snapshot":{"resource":`...)
	b = append(b, res...)
	b = append(b, `,"state":`...)
	tail = append([]byte(`,"fromSeq":`), strconv.AppendInt(nil, r.Snapshot.FromSeq, 10)...)
	return b, state, append(tail, "}}"...), true, nil
}

type UnsubscribeParams struct {
	Channel string `json:"channel"`
}

type DispatchActionParams struct {
	Channel   string      `json:"channel"`
	ClientSeq int64       `json:"clientSeq"`
	Action    StateAction `json:"action"`
}

type ReconnectParams struct {
	BaseParams
	ClientID          string   `json:"clientId"`
	LastSeenServerSeq int64    `json:"lastSeenServerSeq"`
	Subscriptions     []string `json:"subscriptions"`
}

// Reconnect result types.
const (
	ReconnectReplay   = "replay"
	ReconnectSnapshot = "snapshot"
)

// ReconnectResult is either a replay (Actions, Missing) or a snapshot
// (Snapshots, Missing).
type ReconnectResult struct {
	Type      string           `json:"type"`
	Actions   []ActionEnvelope `json:"actions,omitzero"`
	Snapshots []Snapshot       `json:"snapshots,omitzero"`
	Missing   []string         `json:"missing"`
}

type ListSessionsParams struct {
	BaseParams
	Limit  *int   `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

type ListSessionsResult struct {
	Items      []SessionSummary `json:"items"`
	NextCursor string           `json:"nextCursor,omitempty"`
}

type CreateSessionParams struct {
	BaseParams
	Provider           string   `json:"provider,omitempty"`
	WorkingDirectories []string `json:"workingDirectories,omitzero"`
	Config             Object   `json:"config,omitzero"`
}

type DisposeSessionParams struct {
	BaseParams
}

type ResourceReadParams struct {
	BaseParams
	URI      string `json:"uri"`
	Encoding string `json:"encoding,omitempty"`
}

type ResourceReadResult struct {
	Data        string `json:"data"`
	Encoding    string `json:"encoding"`
	ContentType string `json:"contentType,omitempty"`
}

type InvokeChangesetOperationParams struct {
	BaseParams
	OperationID string                    `json:"operationId"`
	Target      *ChangesetOperationTarget `json:"target,omitempty"`
}

type FollowUp struct {
	Content  ContentRef `json:"content"`
	External bool       `json:"external,omitempty"`
}

type InvokeChangesetOperationResult struct {
	Message  json.RawMessage `json:"message,omitempty"`
	FollowUp *FollowUp       `json:"followUp,omitempty"`
}

type SessionAddedParams struct {
	Channel string         `json:"channel"`
	Summary SessionSummary `json:"summary"`
}

type SessionRemovedParams struct {
	Channel string `json:"channel"`
	Session string `json:"session"`
}

type SessionSummaryChangedParams struct {
	Channel string `json:"channel"`
	Session string `json:"session"`
	Changes Object `json:"changes"`
}

// TurnStartParams are the params of x-changesetd/turnStart; Channel is the
// session URI.
type TurnStartParams struct {
	BaseParams
	TurnID  string `json:"turnId,omitempty"`
	Message string `json:"message,omitempty"`
}

// EditEventsParams are the params of x-changesetd/editEvents; Channel is
// the session URI and Events are an edit tool's EditOutput objects.
type EditEventsParams struct {
	BaseParams
	Events []json.RawMessage `json:"events"`
}

// FetchTurnsParams are the params of fetchTurns: Channel is a chat, Cursor
// the opaque ChatState.turnsNextCursor to load the page before; nil asks
// for the chat's next older page, if any. The result is {}: the turns
// arrive in the chat's state as chat/turnsLoaded before the answer.
type FetchTurnsParams struct {
	BaseParams
	Cursor *string `json:"cursor,omitempty"`
}

// SetBranchBaseParams are the params of x-changesetd/setBranchBase:
// Channel is the session, Base a revision ("origin/release", a commit id)
// or "" for the default. It is kept across restarts.
type SetBranchBaseParams struct {
	BaseParams
	Base string `json:"base"`
}

// DraftParams are the params of x-changesetd/draft: Channel is the
// session, Resource the file:// URI of the file, Text its new content so
// far, Final whether Text is all of it.
type DraftParams struct {
	BaseParams
	Resource string `json:"resource"`
	Text     string `json:"text"`
	Final    bool   `json:"final,omitempty"`
}

// TurnEndParams are the params of x-changesetd/turnEnd; an empty TurnID
// ends whichever turn is running.
type TurnEndParams struct {
	BaseParams
	TurnID string `json:"turnId,omitempty"`
}

// AnnotationsDeliveredParams are the params of
// x-changesetd/annotationsDelivered; Channel is the annotations channel.
type AnnotationsDeliveredParams struct {
	BaseParams
	AnnotationIDs []string `json:"annotationIds"`
	TurnID        string   `json:"turnId,omitempty"`
}
