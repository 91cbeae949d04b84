package reducer

import (
	"maps"
	"slices"

	"github.com/changesetd/changesetd/protocol"
)

// Customizations are untyped: a list of top-level entries (plugins,
// directories, bare MCP servers), each possibly a container whose
// "children" list holds nested entries. Entries are keyed by "id".

// mcpServerType is the "type" of an MCP server customization.
const mcpServerType = "mcpServer"

// MCP server lifecycle kinds the reducer writes optimistically.
const (
	mcpStarting = "starting"
	mcpStopped  = "stopped"
)

// applySessionCustomization handles the customization actions.
func applySessionCustomization(s protocol.SessionState, a protocol.Action) (protocol.SessionState, Outcome, bool) {
	var (
		list []protocol.Object
		ok   bool
	)
	switch a := a.(type) {
	case protocol.SessionCustomizationsChanged:
		list, ok = slices.Clone(a.Customizations), true
	case protocol.SessionCustomizationUpdated:
		if a.Customization != nil {
			list, ok = upsertObject(s.Customizations, "id", a.Customization), true
		}
	case protocol.SessionCustomizationToggled:
		list, ok = updateCustomization(s.Customizations, a.ID, anyEntry, func(c protocol.Object) {
			c["enabled"] = a.Enabled
		})
	case protocol.SessionCustomizationRemoved:
		list, ok = removeCustomization(s.Customizations, a.ID)
	case protocol.SessionMcpServerStateChanged:
		list, ok = updateCustomization(s.Customizations, a.ID, isMcpServer, func(c protocol.Object) {
			setMcpState(c, maps.Clone(a.State), a.Channel)
		})
	case protocol.SessionMcpServerStartRequested:
		list, ok = updateCustomization(s.Customizations, a.ID, isMcpServer, func(c protocol.Object) {
			setMcpState(c, protocol.Object{"kind": mcpStarting}, "")
		})
	case protocol.SessionMcpServerStopRequested:
		list, ok = updateCustomization(s.Customizations, a.ID, isMcpServer, func(c protocol.Object) {
			setMcpState(c, protocol.Object{"kind": mcpStopped}, "")
		})
	default:
		return s, NoOp, false
	}
	if !ok {
		return s, NoOp, true
	}
	s.Customizations = list
	return s, Applied, true
}

// setMcpState replaces an MCP server's state and channel; an empty
// channel removes the key.
func setMcpState(c protocol.Object, state protocol.Object, channel string) {
	c["state"] = state
	if channel == "" {
		delete(c, "channel")
		return
	}
	c["channel"] = channel
}

// entryPath locates a customization: top is the index in the top-level
// list, child the index in that entry's children, or -1 for the entry
// itself.
type entryPath struct{ top, child int }

func anyEntry(protocol.Object) bool { return true }

func isMcpServer(c protocol.Object) bool { return c["type"] == mcpServerType }

// findCustomization searches the top-level entries first, then the
// children of every container, for an entry with the id that satisfies
// match.
func findCustomization(list []protocol.Object, id string, match func(protocol.Object) bool) (entryPath, bool) {
	for i, c := range list {
		if keyOf(c, "id") == id && match(c) {
			return entryPath{i, -1}, true
		}
	}
	for i, c := range list {
		for j, k := range childrenOf(c) {
			if kid, ok := k.(protocol.Object); ok && keyOf(kid, "id") == id && match(kid) {
				return entryPath{i, j}, true
			}
		}
	}
	return entryPath{}, false
}

// updateCustomization returns a copy of list in which edit has been
// applied to a copy of the matching entry, or false if none matches.
func updateCustomization(list []protocol.Object, id string, match func(protocol.Object) bool, edit func(protocol.Object)) ([]protocol.Object, bool) {
	p, ok := findCustomization(list, id, match)
	if !ok {
		return nil, false
	}
	list = slices.Clone(list)
	top := maps.Clone(list[p.top])
	list[p.top] = top
	if p.child < 0 {
		edit(top)
		return list, true
	}
	kids := slices.Clone(childrenOf(top))
	kid := maps.Clone(kids[p.child].(protocol.Object))
	edit(kid)
	kids[p.child] = kid
	top["children"] = kids
	return list, true
}

// removeCustomization removes the entry with the id, a container together
// with its children.
func removeCustomization(list []protocol.Object, id string) ([]protocol.Object, bool) {
	p, ok := findCustomization(list, id, anyEntry)
	if !ok {
		return nil, false
	}
	if p.child < 0 {
		return slices.Delete(slices.Clone(list), p.top, p.top+1), true
	}
	list = slices.Clone(list)
	top := maps.Clone(list[p.top])
	top["children"] = slices.Delete(slices.Clone(childrenOf(top)), p.child, p.child+1)
	list[p.top] = top
	return list, true
}

// childrenOf returns a container's children as decoded from JSON, or nil.
func childrenOf(c protocol.Object) []any {
	switch kids := c["children"].(type) {
	case []any:
		return kids
	case []protocol.Object:
		out := make([]any, len(kids))
		for i, k := range kids {
			out[i] = k
		}
		return out
	}
	return nil
}
