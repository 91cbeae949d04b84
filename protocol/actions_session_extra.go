package protocol

import "encoding/json"

// Session channel actions the changeset host carries and reduces but does
// not otherwise interpret. Payloads it has no use for (tool definitions,
// active clients, customizations, input requests, MCP server states) are
// untyped Objects so they survive the reducer unchanged.

// SessionServerToolsChanged replaces SessionState.serverTools.
type SessionServerToolsChanged struct {
	Tools []Object `json:"tools"`
}

// MarshalJSON writes tools as [] rather than null.
func (a SessionServerToolsChanged) MarshalJSON() ([]byte, error) {
	type plain SessionServerToolsChanged
	if a.Tools == nil {
		a.Tools = []Object{}
	}
	return json.Marshal(plain(a))
}

// SessionActiveClientSet upserts an active client keyed by its "clientId".
type SessionActiveClientSet struct {
	ActiveClient Object `json:"activeClient"`
}

// SessionActiveClientRemoved removes the active client with ClientID.
type SessionActiveClientRemoved struct {
	ClientID string `json:"clientId"`
}

// SessionIsReadChanged sets or clears the SessionIsRead status bit.
type SessionIsReadChanged struct {
	IsRead bool `json:"isRead"`
}

// SessionIsArchivedChanged sets or clears the SessionIsArchived status bit.
type SessionIsArchivedChanged struct {
	IsArchived bool `json:"isArchived"`
}

// SessionActivityChanged sets SessionState.activity; nil clears it.
type SessionActivityChanged struct {
	Activity *string `json:"activity,omitempty"`
}

// SessionMetaChanged replaces SessionState._meta; nil clears it.
type SessionMetaChanged struct {
	Meta Object `json:"_meta,omitzero"`
}

// SessionDefaultChatChanged sets the default chat; "" clears it.
type SessionDefaultChatChanged struct {
	DefaultChat string `json:"defaultChat,omitempty"`
}

// SessionConfigChanged merges Config into SessionState.config.values, or
// replaces the values when Replace is set.
type SessionConfigChanged struct {
	Config  Object `json:"config"`
	Replace bool   `json:"replace,omitempty"`
}

// SessionCustomizationsChanged replaces SessionState.customizations.
type SessionCustomizationsChanged struct {
	Customizations []Object `json:"customizations"`
}

// MarshalJSON writes customizations as [] rather than null.
func (a SessionCustomizationsChanged) MarshalJSON() ([]byte, error) {
	type plain SessionCustomizationsChanged
	if a.Customizations == nil {
		a.Customizations = []Object{}
	}
	return json.Marshal(plain(a))
}

// SessionCustomizationToggled sets "enabled" on the top-level customization
// or container child whose "id" is ID.
type SessionCustomizationToggled struct {
	ID      string `json:"id"`
	Enabled bool   `json:"enabled"`
}

// SessionCustomizationUpdated upserts a top-level customization keyed by
// its "id", replacing the entry (children included) when present.
type SessionCustomizationUpdated struct {
	Customization Object `json:"customization"`
}

// SessionCustomizationRemoved removes the customization or container child
// whose "id" is ID; removing a container removes its children.
type SessionCustomizationRemoved struct {
	ID string `json:"id"`
}

// SessionMcpServerStateChanged replaces the "state" and "channel" of the
// MCP server customization whose "id" is ID. An empty Channel clears it.
type SessionMcpServerStateChanged struct {
	ID      string `json:"id"`
	State   Object `json:"state"`
	Channel string `json:"channel,omitempty"`
}

// SessionMcpServerStartRequested optimistically moves an MCP server
// customization to state "starting" and clears its channel.
type SessionMcpServerStartRequested struct {
	ID string `json:"id"`
}

// SessionMcpServerStopRequested optimistically moves an MCP server
// customization to state "stopped" and clears its channel.
type SessionMcpServerStopRequested struct {
	ID string `json:"id"`
}

// SessionInputNeededSet upserts an input request keyed by its "id" and
// raises the session's activity to SessionInputNeeded.
type SessionInputNeededSet struct {
	Request Object `json:"request"`
}

// SessionInputNeededRemoved removes the input request with ID; removing
// the last one drops the activity back to SessionInProgress.
type SessionInputNeededRemoved struct {
	ID string `json:"id"`
}

func (SessionServerToolsChanged) ActionType() string      { return "session/serverToolsChanged" }
func (SessionActiveClientSet) ActionType() string         { return "session/activeClientSet" }
func (SessionActiveClientRemoved) ActionType() string     { return "session/activeClientRemoved" }
func (SessionIsReadChanged) ActionType() string           { return "session/isReadChanged" }
func (SessionIsArchivedChanged) ActionType() string       { return "session/isArchivedChanged" }
func (SessionActivityChanged) ActionType() string         { return "session/activityChanged" }
func (SessionMetaChanged) ActionType() string             { return "session/metaChanged" }
func (SessionDefaultChatChanged) ActionType() string      { return "session/defaultChatChanged" }
func (SessionConfigChanged) ActionType() string           { return "session/configChanged" }
func (SessionCustomizationsChanged) ActionType() string   { return "session/customizationsChanged" }
func (SessionCustomizationToggled) ActionType() string    { return "session/customizationToggled" }
func (SessionCustomizationUpdated) ActionType() string    { return "session/customizationUpdated" }
func (SessionCustomizationRemoved) ActionType() string    { return "session/customizationRemoved" }
func (SessionMcpServerStateChanged) ActionType() string   { return "session/mcpServerStateChanged" }
func (SessionMcpServerStartRequested) ActionType() string { return "session/mcpServerStartRequested" }
func (SessionMcpServerStopRequested) ActionType() string  { return "session/mcpServerStopRequested" }
func (SessionInputNeededSet) ActionType() string          { return "session/inputNeededSet" }
func (SessionInputNeededRemoved) ActionType() string      { return "session/inputNeededRemoved" }

func init() {
	register(
		func() Action { return &SessionServerToolsChanged{} },
		func() Action { return &SessionActiveClientSet{} },
		func() Action { return &SessionActiveClientRemoved{} },
		func() Action { return &SessionIsReadChanged{} },
		func() Action { return &SessionIsArchivedChanged{} },
		func() Action { return &SessionActivityChanged{} },
		func() Action { return &SessionMetaChanged{} },
		func() Action { return &SessionDefaultChatChanged{} },
		func() Action { return &SessionConfigChanged{} },
		func() Action { return &SessionCustomizationsChanged{} },
		func() Action { return &SessionCustomizationToggled{} },
		func() Action { return &SessionCustomizationUpdated{} },
		func() Action { return &SessionCustomizationRemoved{} },
		func() Action { return &SessionMcpServerStateChanged{} },
		func() Action { return &SessionMcpServerStartRequested{} },
		func() Action { return &SessionMcpServerStopRequested{} },
		func() Action { return &SessionInputNeededSet{} },
		func() Action { return &SessionInputNeededRemoved{} },
	)
}
