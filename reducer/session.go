package reducer

import (
	"maps"
	"slices"

	"github.com/changesetd/changesetd/protocol"
)

// statusActivityMask covers the mutually exclusive activity bits (0-4) of
// a session status; the bits above it (IsRead, IsArchived) are orthogonal
// flags that activity changes must preserve.
const statusActivityMask = 1<<5 - 1

// ApplySession reduces one action into the state of an ahp-session:
// channel. It never modifies s; see the package documentation.
func ApplySession(s protocol.SessionState, a protocol.Action, env Env) (protocol.SessionState, Outcome) {
	if next, out, ok := applySessionLifecycle(s, a, env); ok {
		return next, out
	}
	if next, out, ok := applySessionCatalogue(s, a); ok {
		return next, out
	}
	if next, out, ok := applySessionCustomization(s, a); ok {
		return next, out
	}
	return s, NoOp
}

// applySessionLifecycle handles lifecycle, summary and status actions.
func applySessionLifecycle(s protocol.SessionState, a protocol.Action, env Env) (protocol.SessionState, Outcome, bool) {
	switch a := a.(type) {
	case protocol.SessionReady:
		// Status is deliberately untouched: a turn may already be running.
		s.Lifecycle = protocol.LifecycleReady
	case protocol.SessionCreationFailed:
		s.Lifecycle = protocol.LifecycleFailed
		if env.legacy() {
			s.Lifecycle = protocol.LifecycleCreationFailed
		}
		s.CreationError = cloneError(&a.Error)
	case protocol.SessionTitleChanged:
		s.Title = a.Title
	case protocol.SessionActivityChanged:
		s.Activity = clonePtr(a.Activity)
	case protocol.SessionMetaChanged:
		s.Meta = maps.Clone(a.Meta)
	case protocol.SessionIsReadChanged:
		s.Status = withFlag(s.Status, protocol.SessionIsRead, a.IsRead)
	case protocol.SessionIsArchivedChanged:
		s.Status = withFlag(s.Status, protocol.SessionIsArchived, a.IsArchived)
	case protocol.SessionConfigChanged:
		return sessionConfigChanged(s, a)
	case protocol.SessionInputNeededSet:
		return sessionInputNeededSet(s, a)
	case protocol.SessionInputNeededRemoved:
		return sessionInputNeededRemoved(s, a)
	default:
		return s, NoOp, false
	}
	return s, Applied, true
}

// applySessionCatalogue handles the lists keyed by id or URI: chats,
// active clients, working directories, server tools and changesets.
func applySessionCatalogue(s protocol.SessionState, a protocol.Action) (protocol.SessionState, Outcome, bool) {
	switch a := a.(type) {
	case protocol.SessionChangesetsChanged:
		s.Changesets = slices.Clone(a.Changesets)
	case protocol.SessionServerToolsChanged:
		s.ServerTools = slices.Clone(a.Tools)
	case protocol.SessionDefaultChatChanged:
		s.DefaultChat = a.DefaultChat
	case protocol.SessionActiveClientSet:
		if a.ActiveClient == nil {
			return s, NoOp, true
		}
		s.ActiveClients = upsertObject(s.ActiveClients, "clientId", a.ActiveClient)
	case protocol.SessionActiveClientRemoved:
		return removeActiveClient(s, a.ClientID)
	case protocol.SessionWorkingDirectorySet:
		if slices.Contains(s.WorkingDirectories, a.Directory) {
			return s, NoOp, true
		}
		s.WorkingDirectories = append(slices.Clip(s.WorkingDirectories), a.Directory)
	case protocol.SessionWorkingDirectoryRemoved:
		i := slices.Index(s.WorkingDirectories, a.Directory)
		if i < 0 {
			return s, NoOp, true
		}
		s.WorkingDirectories = slices.Delete(slices.Clone(s.WorkingDirectories), i, i+1)
	case protocol.SessionWorkingDirectoryReplaced:
		return workingDirectoryReplaced(s, a)
	case protocol.SessionChatsReordered:
		return chatsReordered(s, a)
	case protocol.SessionChatAdded:
		s.Chats = upsertChat(s.Chats, a.Summary)
	case protocol.SessionChatUpdated:
		return sessionChatUpdated(s, a)
	case protocol.SessionChatRemoved:
		return sessionChatRemoved(s, a)
	default:
		return s, NoOp, false
	}
	return s, Applied, true
}

// sessionConfigChanged merges into, or replaces, config.values. A session
// without a config schema has nothing to change.
func sessionConfigChanged(s protocol.SessionState, a protocol.SessionConfigChanged) (protocol.SessionState, Outcome, bool) {
	if s.Config == nil {
		return s, NoOp, true
	}
	cfg := *s.Config
	if a.Replace {
		cfg.Values = maps.Clone(a.Config)
		if cfg.Values == nil {
			cfg.Values = protocol.Object{}
		}
	} else {
		cfg.Values = maps.Clone(cfg.Values)
		if cfg.Values == nil {
			cfg.Values = make(protocol.Object, len(a.Config))
		}
		maps.Copy(cfg.Values, a.Config)
	}
	s.Config = &cfg
	return s, Applied, true
}

// sessionInputNeededSet upserts a request by id and raises the activity to
// InputNeeded, keeping the orthogonal flags.
func sessionInputNeededSet(s protocol.SessionState, a protocol.SessionInputNeededSet) (protocol.SessionState, Outcome, bool) {
	if a.Request == nil {
		return s, NoOp, true
	}
	s.InputNeeded = upsertObject(s.InputNeeded, "id", a.Request)
	s.Status = withActivity(s.Status, protocol.SessionInputNeeded)
	return s, Applied, true
}

// sessionInputNeededRemoved removes a request by id. Removing the last one
// drops the key and falls back to InProgress, keeping the orthogonal flags.
func sessionInputNeededRemoved(s protocol.SessionState, a protocol.SessionInputNeededRemoved) (protocol.SessionState, Outcome, bool) {
	i := indexObject(s.InputNeeded, "id", a.ID)
	if i < 0 {
		return s, NoOp, true
	}
	rest := slices.Delete(slices.Clone(s.InputNeeded), i, i+1)
	if len(rest) > 0 {
		s.InputNeeded = rest
		return s, Applied, true
	}
	s.InputNeeded = nil
	s.Status = withActivity(s.Status, protocol.SessionInProgress)
	return s, Applied, true
}

func removeActiveClient(s protocol.SessionState, clientID string) (protocol.SessionState, Outcome, bool) {
	i := indexObject(s.ActiveClients, "clientId", clientID)
	if i < 0 {
		return s, NoOp, true
	}
	s.ActiveClients = slices.Delete(slices.Clone(s.ActiveClients), i, i+1)
	return s, Applied, true
}

// upsertChat replaces the chat with the same resource, or appends.
func upsertChat(chats []protocol.ChatSummary, c protocol.ChatSummary) []protocol.ChatSummary {
	i := chatIndex(chats, c.Resource)
	if i < 0 {
		return append(slices.Clip(chats), c)
	}
	chats = slices.Clone(chats)
	chats[i] = c
	return chats
}

// sessionChatUpdated merges the partial summary into an existing chat.
// The resource is identity and never changes; null clears a field.
func sessionChatUpdated(s protocol.SessionState, a protocol.SessionChatUpdated) (protocol.SessionState, Outcome, bool) {
	i := chatIndex(s.Chats, a.Chat)
	if i < 0 {
		return s, NoOp, true
	}
	merged, ok := mergeChat(s.Chats[i], a.Changes)
	if !ok {
		return s, NoOp, true
	}
	s.Chats = slices.Clone(s.Chats)
	s.Chats[i] = merged
	return s, Applied, true
}

// sessionChatRemoved removes a chat and clears defaultChat if it named it.
func sessionChatRemoved(s protocol.SessionState, a protocol.SessionChatRemoved) (protocol.SessionState, Outcome, bool) {
	i := chatIndex(s.Chats, a.Chat)
	if i < 0 {
		return s, NoOp, true
	}
	s.Chats = slices.Delete(slices.Clone(s.Chats), i, i+1)
	if s.DefaultChat == a.Chat {
		s.DefaultChat = ""
	}
	return s, Applied, true
}

func chatIndex(chats []protocol.ChatSummary, resource string) int {
	return slices.IndexFunc(chats, func(c protocol.ChatSummary) bool { return c.Resource == resource })
}

// withFlag sets or clears one orthogonal status flag.
func withFlag(status, flag int, set bool) int {
	if set {
		return status | flag
	}
	return status &^ flag
}

// withActivity replaces the activity bits, keeping the orthogonal flags.
func withActivity(status, activity int) int {
	return status&^statusActivityMask | activity
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// workingDirectoryReplaced puts the replacement in the target's slot and
// drops any other entry equal to it, except that a replacement already
// earlier in the list keeps its place and the target goes: [A B C] with
// C→A is [A B], B→C is [A C]. Without the target it does nothing.
func workingDirectoryReplaced(s protocol.SessionState, a protocol.SessionWorkingDirectoryReplaced) (protocol.SessionState, Outcome, bool) {
	i := slices.Index(s.WorkingDirectories, a.Directory)
	if i < 0 {
		return s, NoOp, true
	}
	repl := a.ReplacementURI()
	if repl == "" {
		return s, NoOp, true // no URI to put there
	}
	out := make([]string, 0, len(s.WorkingDirectories))
	for j, d := range s.WorkingDirectories {
		switch {
		case j == i:
			if !slices.Contains(out, repl) {
				out = append(out, repl)
			}
		case d != repl:
			out = append(out, d)
		case j < i:
			out = append(out, d) // the replacement, earlier: it stays
		}
	}
	s.WorkingDirectories = out
	return s, Applied, true
}

// chatsReordered orders the chats as the action lists their URIs. The
// action is meant to name every chat exactly once; a URI the state does
// not hold, or a repeated one, is skipped, and a chat it leaves out keeps
// its relative place after those it names, so no summary is ever lost.
func chatsReordered(s protocol.SessionState, a protocol.SessionChatsReordered) (protocol.SessionState, Outcome, bool) {
	if len(s.Chats) == 0 {
		return s, NoOp, true
	}
	out := make([]protocol.ChatSummary, 0, len(s.Chats))
	placed := make([]bool, len(s.Chats))
	for _, uri := range a.Chats {
		i := slices.IndexFunc(s.Chats, func(c protocol.ChatSummary) bool { return c.Resource == uri })
		if i >= 0 && !placed[i] {
			out = append(out, s.Chats[i])
			placed[i] = true
		}
	}
	for i, c := range s.Chats {
		if !placed[i] {
			out = append(out, c)
		}
	}
	s.Chats = out
	return s, Applied, true
}
