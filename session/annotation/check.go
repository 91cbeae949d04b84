package annotation

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/changesetd/changesetd/protocol"
)

// Checker validates the annotations actions a client dispatches against
// the state they would apply to. What only the session knows (its turns,
// its working directories, the feedback rules of its clients) it asks
// through the functions it is given.
type Checker struct {
	State protocol.AnnotationsState
	// Now is the time stamped on new entries (ISO-8601).
	Now string
	// TurnOf is the turn an annotation set over prev (nil when new) is
	// anchored to: n.TurnID, or the one chosen for a client that names
	// none.
	TurnOf func(n protocol.Annotation, prev *protocol.Annotation) string
	// Anchor returns what is wrong with an anchor, naming the field, or
	// "". CheckRange is one of its checks.
	Anchor func(turnID, resource string, r *protocol.TextRange) string
	// Adopt reconciles a checked annotation's feedback records.
	Adopt func(n protocol.Annotation) protocol.Annotation
}

// Find returns the annotation of st with id, or nil.
func Find(st protocol.AnnotationsState, id string) *protocol.Annotation {
	for i := range st.Annotations {
		if st.Annotations[i].ID == id {
			return &st.Annotations[i]
		}
	}
	return nil
}

// Check returns the action to apply — a client's with the server-owned
// _meta keys put back and its entries stamped — or why it is refused.
func (c Checker) Check(a protocol.Action) (protocol.Action, string) {
	now := c.Now
	switch a := a.(type) {
	case protocol.AnnotationsSet:
		n := a.Annotation
		if n.ID == "" {
			return a, "annotation.id is empty"
		}
		prev := Find(c.State, n.ID)
		if prev == nil && len(c.State.Annotations) >= MaxAnnotations {
			return a, fmt.Sprintf("this session already has %d annotations (the limit)", MaxAnnotations)
		}
		n.TurnID = c.TurnOf(n, prev)
		if r := c.Anchor(n.TurnID, n.Resource, n.Range); r != "" {
			return a, "annotation." + r
		}
		if len(n.Entries) == 0 {
			return a, "annotation.entries is empty: an annotation has at least one entry"
		}
		if len(n.Entries) > MaxEntries {
			return a, fmt.Sprintf("annotation.entries has %d entries; at most %d are kept", len(n.Entries), MaxEntries)
		}
		seen := map[string]bool{}
		n.Entries = slices.Clone(n.Entries)
		for i := range n.Entries {
			e := &n.Entries[i]
			if r := CheckEntry(*e); r != "" {
				return a, fmt.Sprintf("annotation.entries[%d].%s", i, r)
			}
			if seen[e.ID] {
				return a, fmt.Sprintf("annotation.entries[%d].id %q appears twice", i, e.ID)
			}
			seen[e.ID] = true
			var old *protocol.AnnotationEntry
			if prev != nil {
				if j := slices.IndexFunc(prev.Entries, func(x protocol.AnnotationEntry) bool { return x.ID == e.ID }); j >= 0 {
					old = &prev.Entries[j]
				}
			}
			*e = StampEntry(*e, old, now)
		}
		n.Meta = WithServerMeta(n.Meta, prev)
		if prev != nil && !SameAnchor(*prev, n) {
			// The snapshot was of the lines the annotation had.
			delete(n.Meta, protocol.MetaSnapshot)
		}
		n = c.Adopt(n)
		if b, _ := json.Marshal(n); len(b) > MaxAnnotationBytes {
			return a, fmt.Sprintf("the annotation is %d bytes encoded; at most %d are kept", len(b), MaxAnnotationBytes)
		}
		a.Annotation = n
		return a, ""
	case protocol.AnnotationsUpdated:
		prev := Find(c.State, a.AnnotationID)
		if prev == nil {
			return a, fmt.Sprintf("no annotation %q", a.AnnotationID)
		}
		turn, res := prev.TurnID, prev.Resource
		if a.TurnID != nil {
			turn = *a.TurnID
		}
		if a.Resource != nil {
			res = *a.Resource
		}
		if r := c.Anchor(turn, res, a.Range); r != "" {
			return a, r
		}
		return a, ""
	case protocol.AnnotationsRemoved:
		if Find(c.State, a.AnnotationID) == nil {
			return a, fmt.Sprintf("no annotation %q", a.AnnotationID)
		}
		return a, ""
	case protocol.AnnotationsEntrySet:
		prev := Find(c.State, a.AnnotationID)
		if prev == nil {
			return a, fmt.Sprintf("no annotation %q", a.AnnotationID)
		}
		if r := CheckEntry(a.Entry); r != "" {
			return a, "entry." + r
		}
		j := slices.IndexFunc(prev.Entries, func(x protocol.AnnotationEntry) bool { return x.ID == a.Entry.ID })
		if j < 0 && len(prev.Entries) >= MaxEntries {
			return a, fmt.Sprintf("annotation %q already has %d entries (the limit)", a.AnnotationID, MaxEntries)
		}
		var old *protocol.AnnotationEntry
		if j >= 0 {
			old = &prev.Entries[j]
		}
		a.Entry = StampEntry(a.Entry, old, now)
		return a, ""
	case protocol.AnnotationsEntryRemoved:
		prev := Find(c.State, a.AnnotationID)
		if prev == nil {
			return a, fmt.Sprintf("no annotation %q", a.AnnotationID)
		}
		if !slices.ContainsFunc(prev.Entries, func(x protocol.AnnotationEntry) bool { return x.ID == a.EntryID }) {
			return a, fmt.Sprintf("annotation %q has no entry %q", a.AnnotationID, a.EntryID)
		}
		if len(prev.Entries) == 1 {
			return a, "that is the annotation's last entry: an annotation keeps at least one, so dispatch annotations/removed instead"
		}
		return a, ""
	}
	return a, fmt.Sprintf("%s cannot be dispatched on an annotations channel; the annotations/* actions can", a.ActionType())
}
