package protocol

// Session channel actions. Only the ones the host itself emits or that
// clients may dispatch and the host interprets are typed; the rest are in
// actions_session_extra.go.

type SessionReady struct{}

type SessionCreationFailed struct {
	Error ErrorInfo `json:"error"`
}

// SessionChangesetsChanged replaces the catalogue; nil removes it.
type SessionChangesetsChanged struct {
	Changesets []Changeset `json:"changesets,omitzero"`
}

type SessionTitleChanged struct {
	Title string `json:"title"`
}

type SessionWorkingDirectorySet struct {
	Directory string `json:"directory"`
}

type SessionWorkingDirectoryRemoved struct {
	Directory string `json:"directory"`
}

// SessionChatAdded upserts a chat into SessionState.chats, keyed by
// Summary.Resource.
type SessionChatAdded struct {
	Summary ChatSummary `json:"summary"`
}

// SessionChatUpdated merges Changes (a partial ChatSummary) into the chat
// whose resource is Chat. A null value in Changes clears that field.
type SessionChatUpdated struct {
	Chat    string `json:"chat"`
	Changes Object `json:"changes"`
}

type SessionChatRemoved struct {
	Chat string `json:"chat"`
}

func (SessionReady) ActionType() string                   { return "session/ready" }
func (SessionCreationFailed) ActionType() string          { return "session/creationFailed" }
func (SessionChangesetsChanged) ActionType() string       { return "session/changesetsChanged" }
func (SessionTitleChanged) ActionType() string            { return "session/titleChanged" }
func (SessionWorkingDirectorySet) ActionType() string     { return "session/workingDirectorySet" }
func (SessionWorkingDirectoryRemoved) ActionType() string { return "session/workingDirectoryRemoved" }
func (SessionChatAdded) ActionType() string               { return "session/chatAdded" }
func (SessionChatUpdated) ActionType() string             { return "session/chatUpdated" }
func (SessionChatRemoved) ActionType() string             { return "session/chatRemoved" }

func init() {
	register(
		func() Action { return &SessionReady{} },
		func() Action { return &SessionCreationFailed{} },
		func() Action { return &SessionChangesetsChanged{} },
		func() Action { return &SessionTitleChanged{} },
		func() Action { return &SessionWorkingDirectorySet{} },
		func() Action { return &SessionWorkingDirectoryRemoved{} },
		func() Action { return &SessionChatAdded{} },
		func() Action { return &SessionChatUpdated{} },
		func() Action { return &SessionChatRemoved{} },
	)
}
