package protocol

import "encoding/json"

// Session lifecycle values. 0.6/0.7 clients use LifecycleCreationFailed
// where 1.0 uses LifecycleFailed.
const (
	LifecycleCreating       = "creating"
	LifecycleReady          = "ready"
	LifecycleFailed         = "failed"
	LifecycleCreationFailed = "creationFailed"
)

// SessionStatus bits.
const (
	SessionIdle        = 1
	SessionError       = 2
	SessionInProgress  = 8
	SessionInputNeeded = 24
	SessionIsRead      = 32
	SessionIsArchived  = 64
)

// SessionState is the state of an ahp-session: channel. Fields a changeset
// host does not interpret are carried as untyped JSON so they survive the
// reducer unchanged.
type SessionState struct {
	Provider           string              `json:"provider"`
	Title              string              `json:"title"`
	Status             int                 `json:"status"`
	Lifecycle          string              `json:"lifecycle"`
	ActiveClients      []Object            `json:"activeClients"`
	Chats              []ChatSummary       `json:"chats"`
	Activity           *string             `json:"activity,omitempty"`
	Origin             Object              `json:"origin,omitzero"`
	Project            Object              `json:"project,omitzero"`
	WorkingDirectories []string            `json:"workingDirectories,omitzero"`
	Annotations        *AnnotationsSummary `json:"annotations,omitempty"`
	CreationError      *ErrorInfo          `json:"creationError,omitempty"`
	ServerTools        []Object            `json:"serverTools,omitzero"`
	DefaultChat        string              `json:"defaultChat,omitempty"`
	Config             *SessionConfig      `json:"config,omitempty"`
	Customizations     []Object            `json:"customizations,omitzero"`
	Changesets         []Changeset         `json:"changesets,omitzero"`
	InputNeeded        []Object            `json:"inputNeeded,omitzero"`
	Meta               Object              `json:"_meta,omitzero"`
}

// MarshalJSON writes the required arrays as [] rather than null.
func (s SessionState) MarshalJSON() ([]byte, error) {
	type plain SessionState
	if s.ActiveClients == nil {
		s.ActiveClients = []Object{}
	}
	if s.Chats == nil {
		s.Chats = []ChatSummary{}
	}
	return json.Marshal(plain(s))
}

// SessionConfig is a session's configuration schema and values.
type SessionConfig struct {
	Schema Object `json:"schema,omitzero"`
	Values Object `json:"values"`
}

// ChatSummary is a chat as listed in SessionState.chats.
type ChatSummary struct {
	Resource   string          `json:"resource"`
	Title      string          `json:"title"`
	Status     int             `json:"status"`
	Activity   *string         `json:"activity,omitempty"`
	ModifiedAt string          `json:"modifiedAt"`
	Origin     Object          `json:"origin,omitzero"`
	Changes    *ChangesSummary `json:"changes,omitempty"`
	// Interactivity is "full" (the default when absent), "read-only"
	// (watched, no messages sent) or "hidden".
	Interactivity string `json:"interactivity,omitempty"`
	Meta          Object `json:"_meta,omitzero"`
}

// ChatInteractivity values.
const (
	ChatFull     = "full"
	ChatReadOnly = "read-only"
)

// ChangesSummary aggregates line and file counts.
type ChangesSummary struct {
	Additions *int `json:"additions,omitempty"`
	Deletions *int `json:"deletions,omitempty"`
	Files     *int `json:"files,omitempty"`
}

// SessionSummary is a session as listed by listSessions and root
// notifications.
type SessionSummary struct {
	Resource           string              `json:"resource"`
	Provider           string              `json:"provider"`
	Title              string              `json:"title"`
	Status             int                 `json:"status"`
	Activity           *string             `json:"activity,omitempty"`
	Project            Object              `json:"project,omitzero"`
	WorkingDirectories []string            `json:"workingDirectories,omitzero"`
	CreatedAt          string              `json:"createdAt"`
	ModifiedAt         string              `json:"modifiedAt"`
	Changes            *ChangesSummary     `json:"changes,omitempty"`
	Annotations        *AnnotationsSummary `json:"annotations,omitempty"`
	Meta               Object              `json:"_meta,omitzero"`
}

// RootState is the state of ahp-root://.
type RootState struct {
	Agents         []AgentInfo `json:"agents"`
	ActiveSessions *int        `json:"activeSessions,omitempty"`
	Meta           Object      `json:"_meta,omitzero"`
}

// AgentInfo describes an agent provider.
type AgentInfo struct {
	Provider    string   `json:"provider"`
	DisplayName string   `json:"displayName"`
	Description string   `json:"description"`
	Models      []Object `json:"models"`
}
