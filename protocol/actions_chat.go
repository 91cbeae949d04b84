package protocol

// Chat channel actions (ahp-chat:). Only the turn lifecycle and the chat
// catalogue are typed; other chat actions (deltas, response parts, tool
// calls, pending messages, ...) decode as UnknownAction.
//
// There is no chat/titleChanged action in the protocol: a chat's title is
// announced on its session with session/chatUpdated.

// ChatTurnStarted starts a turn: the message becomes ActiveTurn.
// QueuedMessageID names the steering or queued message the turn consumes.
type ChatTurnStarted struct {
	TurnID          string  `json:"turnId"`
	StartedAt       string  `json:"startedAt"` // ISO 8601
	Message         Message `json:"message"`
	QueuedMessageID string  `json:"queuedMessageId,omitempty"`
	Meta            Object  `json:"_meta,omitzero"`
}

// ChatTurnComplete ends the active turn normally. Duration is the
// producer-measured elapsed time in milliseconds.
type ChatTurnComplete struct {
	TurnID   string `json:"turnId"`
	Duration int64  `json:"duration"`
	Meta     Object `json:"_meta,omitzero"`
}

// ChatTurnCancelled ends the active turn as cancelled. Clients may dispatch
// it.
type ChatTurnCancelled struct {
	TurnID   string `json:"turnId"`
	Duration int64  `json:"duration"`
	Meta     Object `json:"_meta,omitzero"`
}

// ChatChangesetsChanged replaces ChatState.changesets; nil removes it.
// Since 1.0.0.
type ChatChangesetsChanged struct {
	Changesets []Changeset `json:"changesets,omitzero"`
}

// ChatActivityChanged sets ChatState.activity; nil clears it.
type ChatActivityChanged struct {
	Activity *string `json:"activity,omitempty"`
}

// ChatTurnsLoaded puts older completed turns (oldest first) in front of
// ChatState.turns, skipping any already there, and replaces
// turnsNextCursor with TurnsNextCursor ("" when every retained turn is
// loaded). The host dispatches it before it answers fetchTurns.
type ChatTurnsLoaded struct {
	Turns           []Turn `json:"turns"`
	TurnsNextCursor string `json:"turnsNextCursor,omitempty"`
}

func (ChatTurnsLoaded) ActionType() string       { return "chat/turnsLoaded" }
func (ChatTurnStarted) ActionType() string       { return "chat/turnStarted" }
func (ChatTurnComplete) ActionType() string      { return "chat/turnComplete" }
func (ChatTurnCancelled) ActionType() string     { return "chat/turnCancelled" }
func (ChatChangesetsChanged) ActionType() string { return "chat/changesetsChanged" }
func (ChatActivityChanged) ActionType() string   { return "chat/activityChanged" }

func init() {
	register(
		func() Action { return &ChatTurnStarted{} },
		func() Action { return &ChatTurnComplete{} },
		func() Action { return &ChatTurnCancelled{} },
		func() Action { return &ChatChangesetsChanged{} },
		func() Action { return &ChatActivityChanged{} },
		func() Action { return &ChatTurnsLoaded{} },
	)
}
