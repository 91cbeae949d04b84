package protocol

import "encoding/json"

// TurnState says how a completed turn ended. It is an open string: unknown
// values decode and round-trip.
const (
	TurnComplete  = "complete"
	TurnCancelled = "cancelled"
	TurnError     = "error"
)

// MessageKind identifies who produced a message. Open string.
const (
	MessageUser               = "user"
	MessageAgent              = "agent"
	MessageTool               = "tool"
	MessageAutomation         = "automation"
	MessageSystemNotification = "systemNotification"
)

// ChatState is the state of an ahp-chat: channel (protocol 1.0.0). The
// summary fields are denormalised from ChatSummary. Fields the changeset
// host does not interpret are carried as untyped JSON so they survive the
// reducer unchanged.
type ChatState struct {
	Resource           string          `json:"resource"`
	Title              string          `json:"title"`
	Status             int             `json:"status"`
	Activity           *string         `json:"activity,omitempty"`
	ModifiedAt         string          `json:"modifiedAt"`
	Changes            *ChangesSummary `json:"changes,omitempty"`
	Origin             Object          `json:"origin,omitzero"`
	Movable            *bool           `json:"movable,omitempty"`
	Interactivity      string          `json:"interactivity,omitempty"`
	WorkingDirectories []string        `json:"workingDirectories,omitzero"`
	// Changesets is the chat's changeset catalogue (since 1.0.0); nil means
	// absent, a non-nil empty list is sent as [].
	Changesets      []Changeset `json:"changesets,omitzero"`
	BackgroundWork  []Object    `json:"backgroundWork,omitzero"`
	Turns           []Turn      `json:"turns"`
	TurnsNextCursor string      `json:"turnsNextCursor,omitempty"`
	ActiveTurn      *ActiveTurn `json:"activeTurn,omitempty"`
	// SteeringMessage and QueuedMessages hold PendingMessage objects
	// ({id, message}); chat/turnStarted with a queuedMessageId consumes one.
	SteeringMessage Object   `json:"steeringMessage,omitzero"`
	QueuedMessages  []Object `json:"queuedMessages,omitzero"`
	Draft           *Message `json:"draft,omitempty"`
	Meta            Object   `json:"_meta,omitzero"`
}

// MarshalJSON writes turns as [] rather than null.
func (s ChatState) MarshalJSON() ([]byte, error) {
	type plain ChatState
	if s.Turns == nil {
		s.Turns = []Turn{}
	}
	return json.Marshal(plain(s))
}

// TurnByID returns the completed turn with the id, if any.
func (s ChatState) TurnByID(id string) (Turn, bool) {
	for _, t := range s.Turns {
		if t.ID == id {
			return t, true
		}
	}
	return Turn{}, false
}

// Message is a message that starts or steers a turn.
type Message struct {
	Text        string        `json:"text"`
	Origin      MessageOrigin `json:"origin"`
	Attachments []Object      `json:"attachments,omitzero"`
	Model       Object        `json:"model,omitzero"`
	Agent       Object        `json:"agent,omitzero"`
	Meta        Object        `json:"_meta,omitzero"`
}

// MessageOrigin says who produced a message; Kind is one of the Message*
// constants or an unknown string.
type MessageOrigin struct {
	Kind string `json:"kind"`
}

// ResponsePart is one part of a turn's response stream (markdown, tool
// call, reasoning, ...), discriminated by its "kind". The changeset host
// carries parts without interpreting them.
type ResponsePart = Object

// Turn is a completed turn of a chat.
type Turn struct {
	ID            string         `json:"id"`
	StartedAt     string         `json:"startedAt,omitempty"`
	Duration      *int64         `json:"duration,omitempty"` // milliseconds
	Message       Message        `json:"message"`
	ResponseParts []ResponsePart `json:"responseParts"`
	Usage         Object         `json:"usage,omitzero"`
	State         string         `json:"state"`
}

// MarshalJSON writes responseParts as [] rather than null.
func (t Turn) MarshalJSON() ([]byte, error) {
	type plain Turn
	if t.ResponseParts == nil {
		t.ResponseParts = []ResponsePart{}
	}
	return json.Marshal(plain(t))
}

// ActiveTurn is the turn in progress.
type ActiveTurn struct {
	ID            string         `json:"id"`
	StartedAt     string         `json:"startedAt"`
	Message       Message        `json:"message"`
	ResponseParts []ResponsePart `json:"responseParts"`
	Usage         Object         `json:"usage,omitzero"`
}

// MarshalJSON writes responseParts as [] rather than null.
func (t ActiveTurn) MarshalJSON() ([]byte, error) {
	type plain ActiveTurn
	if t.ResponseParts == nil {
		t.ResponseParts = []ResponsePart{}
	}
	return json.Marshal(plain(t))
}
