package protocol

import "encoding/json"

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

// SessionWorkingDirectoryReplaced swaps Directory for Replacement in
// place (since 0.8.0): a compare-and-swap that does nothing unless
// Directory is in the set. Replacement is a URI or, from 1.0's rich
// records, a WorkingDirectory object; this host's state holds URIs, so an
// object counts by its "uri". The raw JSON round-trips either way.
type SessionWorkingDirectoryReplaced struct {
	Directory   string          `json:"directory"`
	Replacement json.RawMessage `json:"replacement"`
}

// ReplacementURI is the URI of Replacement: the string itself, or an
// object's "uri"; "" for anything else.
func (a SessionWorkingDirectoryReplaced) ReplacementURI() string {
	var s string
	if json.Unmarshal(a.Replacement, &s) == nil {
		return s
	}
	var o struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(a.Replacement, &o) == nil {
		return o.URI
	}
	return ""
}

// SessionChatsReordered gives SessionState.chats a new order (since
// 0.9.0): Chats is the complete resulting order of the chats' URIs.
type SessionChatsReordered struct {
	Chats []string `json:"chats"`
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
func (SessionWorkingDirectoryReplaced) ActionType() string {
	return "session/workingDirectoryReplaced"
}
func (SessionChatsReordered) ActionType() string { return "session/chatsReordered" }
func (SessionChatAdded) ActionType() string      { return "session/chatAdded" }
func (SessionChatUpdated) ActionType() string    { return "session/chatUpdated" }
func (SessionChatRemoved) ActionType() string    { return "session/chatRemoved" }

func init() {
	register(
		func() Action { return &SessionReady{} },
		func() Action { return &SessionCreationFailed{} },
		func() Action { return &SessionChangesetsChanged{} },
		func() Action { return &SessionTitleChanged{} },
		func() Action { return &SessionWorkingDirectorySet{} },
		func() Action { return &SessionWorkingDirectoryRemoved{} },
		func() Action { return &SessionWorkingDirectoryReplaced{} },
		func() Action { return &SessionChatsReordered{} },
		func() Action { return &SessionChatAdded{} },
		func() Action { return &SessionChatUpdated{} },
		func() Action { return &SessionChatRemoved{} },
	)
}
