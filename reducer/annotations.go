package reducer

import (
	"slices"

	"github.com/changesetd/changesetd/protocol"
)

// ApplyAnnotations reduces one action into the state of an annotations
// channel. It never modifies s. Actions naming an unknown annotation or
// entry are no-ops.
func ApplyAnnotations(s protocol.AnnotationsState, a protocol.Action, _ Env) (protocol.AnnotationsState, Outcome) {
	switch a := a.(type) {
	case protocol.AnnotationsSet:
		s.Annotations = slices.Clone(s.Annotations)
		n := cloneAnnotation(a.Annotation)
		if i := annotationIndex(s.Annotations, n.ID); i >= 0 {
			s.Annotations[i] = n
		} else {
			s.Annotations = append(s.Annotations, n)
		}
		return s, Applied
	case protocol.AnnotationsRemoved:
		i := annotationIndex(s.Annotations, a.AnnotationID)
		if i < 0 {
			return s, NoOp
		}
		s.Annotations = slices.Delete(slices.Clone(s.Annotations), i, i+1)
		return s, Applied
	case protocol.AnnotationsEntrySet:
		return updateAnnotation(s, a.AnnotationID, func(n *protocol.Annotation) bool {
			e := a.Entry
			if j := slices.IndexFunc(n.Entries, func(x protocol.AnnotationEntry) bool { return x.ID == e.ID }); j >= 0 {
				n.Entries[j] = e
			} else {
				n.Entries = append(n.Entries, e)
			}
			return true
		})
	case protocol.AnnotationsEntryRemoved:
		return updateAnnotation(s, a.AnnotationID, func(n *protocol.Annotation) bool {
			j := slices.IndexFunc(n.Entries, func(x protocol.AnnotationEntry) bool { return x.ID == a.EntryID })
			if j < 0 {
				return false
			}
			n.Entries = slices.Delete(n.Entries, j, j+1)
			return true
		})
	case protocol.AnnotationsUpdated:
		return updateAnnotation(s, a.AnnotationID, func(n *protocol.Annotation) bool {
			if a.TurnID != nil {
				n.TurnID = *a.TurnID
			}
			if a.Resource != nil {
				n.Resource = *a.Resource
			}
			if a.Range != nil {
				r := *a.Range
				n.Range = &r
			}
			if a.Resolved != nil {
				n.Resolved = *a.Resolved
			}
			return true
		})
	}
	return s, NoOp
}

// updateAnnotation applies change to a copy of the annotation with id and
// returns the state holding it; change reports whether it changed anything.
func updateAnnotation(s protocol.AnnotationsState, id string, change func(*protocol.Annotation) bool) (protocol.AnnotationsState, Outcome) {
	i := annotationIndex(s.Annotations, id)
	if i < 0 {
		return s, NoOp
	}
	n := cloneAnnotation(s.Annotations[i])
	if !change(&n) {
		return s, NoOp
	}
	s.Annotations = slices.Clone(s.Annotations)
	s.Annotations[i] = n
	return s, Applied
}

func annotationIndex(as []protocol.Annotation, id string) int {
	return slices.IndexFunc(as, func(a protocol.Annotation) bool { return a.ID == id })
}

// cloneAnnotation copies everything a reducer may write into.
func cloneAnnotation(a protocol.Annotation) protocol.Annotation {
	a.Entries = slices.Clone(a.Entries)
	if a.Range != nil {
		r := *a.Range
		a.Range = &r
	}
	return a
}
