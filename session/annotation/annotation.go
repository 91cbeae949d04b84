package annotation

import (
	"slices"

	"github.com/changesetd/changesetd/protocol"
)

// Limits on what a client may store; a larger action is rejected.
const (
	MaxAnnotations     = 10_000
	MaxEntries         = 1_000 // per annotation
	MaxEntryTextBytes  = 64 << 10
	MaxAnnotationBytes = 1 << 20 // one annotation, encoded
)

// IDOf names the one annotation action a changes, and whether a removes
// it.
func IDOf(a protocol.Action) (id string, removed bool) {
	switch a := a.(type) {
	case protocol.AnnotationsSet:
		return a.Annotation.ID, false
	case protocol.AnnotationsUpdated:
		return a.AnnotationID, false
	case protocol.AnnotationsRemoved:
		return a.AnnotationID, true
	case protocol.AnnotationsEntrySet:
		return a.AnnotationID, false
	case protocol.AnnotationsEntryRemoved:
		return a.AnnotationID, false
	}
	return "", false
}

// CloneState copies st's list, so that the copy can be handed out while
// st changes.
func CloneState(st protocol.AnnotationsState) protocol.AnnotationsState {
	st.Annotations = slices.Clone(st.Annotations)
	return st
}

// CloneMeta copies a with a _meta of its own to write into.
func CloneMeta(a protocol.Annotation) protocol.Annotation {
	meta := protocol.Object{}
	for k, v := range a.Meta {
		meta[k] = v
	}
	a.Meta = meta
	a.Entries = slices.Clone(a.Entries)
	return a
}

// OnWorkingTree says whether a client asks for an annotation's range to
// be taken on the working tree as it is now (protocol.MetaOnWorkingTree).
func OnWorkingTree(a protocol.Annotation) bool {
	v, _ := a.Meta[protocol.MetaOnWorkingTree].(bool)
	return v && a.Range != nil
}

// SnapshotOf is the working tree snapshot a's range is on, or "".
func SnapshotOf(a protocol.Annotation) string {
	t, _ := a.Meta[protocol.MetaSnapshot].(string)
	return t
}

// SameAnchor says whether two versions of an annotation name the same
// lines of the same version of the same file.
func SameAnchor(a, b protocol.Annotation) bool {
	return a.TurnID == b.TurnID && a.Resource == b.Resource && SameRange(a.Range, b.Range)
}

// SameRange says whether a and b are the same range, or both absent.
func SameRange(a, b *protocol.TextRange) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// serverOwned are the _meta keys of an annotation the server writes; a
// client's values for them are replaced.
var serverOwned = []string{protocol.MetaCurrent, protocol.MetaDelivered, protocol.MetaSnapshot}

// WithServerMeta returns a client's _meta for an annotation with the keys
// the server owns taken from prev (or dropped).
func WithServerMeta(meta protocol.Object, prev *protocol.Annotation) protocol.Object {
	out := protocol.Object{}
	for k, v := range meta {
		if !slices.Contains(serverOwned, k) {
			out[k] = v
		}
	}
	if prev != nil {
		for _, k := range serverOwned {
			if v, ok := prev.Meta[k]; ok {
				out[k] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
