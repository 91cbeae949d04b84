package protocol

import "encoding/json"

// Review annotations: comment threads a reviewer anchors to a resource
// (optionally a range of it) and a turn. The annotations channel carries
// an AnnotationsState; the reducer in package reducer applies the
// annotations/* actions below.

// AnnotationsState is the state of an annotations channel.
type AnnotationsState struct {
	Annotations []Annotation `json:"annotations"`
	Meta        Object       `json:"_meta,omitzero"`
}

// MarshalJSON writes annotations as [] rather than null.
func (s AnnotationsState) MarshalJSON() ([]byte, error) {
	type plain AnnotationsState
	if s.Annotations == nil {
		s.Annotations = []Annotation{}
	}
	return json.Marshal(plain(s))
}

// Annotation is one comment thread. Range nil anchors it to the whole
// resource.
type Annotation struct {
	ID       string            `json:"id"`
	TurnID   string            `json:"turnId,omitempty"`
	Resource string            `json:"resource"`
	Range    *TextRange        `json:"range,omitempty"`
	Resolved bool              `json:"resolved"`
	Entries  []AnnotationEntry `json:"entries"`
	Meta     Object            `json:"_meta,omitzero"`
}

// MarshalJSON writes entries as [] rather than null.
func (a Annotation) MarshalJSON() ([]byte, error) {
	type plain Annotation
	if a.Entries == nil {
		a.Entries = []AnnotationEntry{}
	}
	return json.Marshal(plain(a))
}

// AnnotationEntry is one comment in a thread.
type AnnotationEntry struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	Meta Object `json:"_meta,omitzero"`
}

// AnnotationsSet inserts Annotation, or replaces the one with its id.
type AnnotationsSet struct {
	Annotation Annotation `json:"annotation"`
}

// AnnotationsRemoved removes the annotation with AnnotationID.
type AnnotationsRemoved struct {
	AnnotationID string `json:"annotationId"`
}

// AnnotationsEntrySet inserts Entry into an annotation, or replaces the
// entry with its id.
type AnnotationsEntrySet struct {
	AnnotationID string          `json:"annotationId"`
	Entry        AnnotationEntry `json:"entry"`
}

// AnnotationsEntryRemoved removes one entry of an annotation.
type AnnotationsEntryRemoved struct {
	AnnotationID string `json:"annotationId"`
	EntryID      string `json:"entryId"`
}

// AnnotationsUpdated changes the fields it carries of an annotation; an
// absent field is left as it is.
type AnnotationsUpdated struct {
	AnnotationID string     `json:"annotationId"`
	TurnID       *string    `json:"turnId,omitempty"`
	Resource     *string    `json:"resource,omitempty"`
	Range        *TextRange `json:"range,omitempty"`
	Resolved     *bool      `json:"resolved,omitempty"`
}

func (AnnotationsSet) ActionType() string          { return "annotations/set" }
func (AnnotationsRemoved) ActionType() string      { return "annotations/removed" }
func (AnnotationsEntrySet) ActionType() string     { return "annotations/entrySet" }
func (AnnotationsEntryRemoved) ActionType() string { return "annotations/entryRemoved" }
func (AnnotationsUpdated) ActionType() string      { return "annotations/updated" }

func init() {
	register(
		func() Action { return &AnnotationsSet{} },
		func() Action { return &AnnotationsRemoved{} },
		func() Action { return &AnnotationsEntrySet{} },
		func() Action { return &AnnotationsEntryRemoved{} },
		func() Action { return &AnnotationsUpdated{} },
	)
}
