package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Review annotations: comment threads a reviewer anchors to a resource
// (optionally a range of it) and a turn. The annotations channel carries
// an AnnotationsState; the reducer in package reducer applies the
// annotations/* actions below.

// Keys this server writes in the _meta of annotations and their entries.
// The server owns MetaCurrent, MetaDelivered and MetaSnapshot: a client's
// values for them are replaced by the server's.
const (
	// MetaCurrent on an Annotation says where its lines are in the
	// working tree now: an AnnotationPlace.
	MetaCurrent = "changesetd/current"
	// MetaDelivered on an Annotation records when it was handed to the
	// agent: an AnnotationDelivery.
	MetaDelivered = "changesetd/delivered"
	// MetaOnWorkingTree set to true on an annotation a client sets says
	// that its range is on the working tree as it is now, not on the
	// version its turn left: a comment written on the working tree
	// between turns, on lines the baseline does not have. The server takes
	// a snapshot of the working tree and records it in MetaSnapshot in
	// its place.
	MetaOnWorkingTree = "changesetd/onWorkingTree"
	// MetaSnapshot on an Annotation is the id of the snapshot of the
	// working tree its range is on (see MetaOnWorkingTree); its current
	// place is mapped from that version rather than from its turn's.
	MetaSnapshot = "changesetd/snapshot"
	// MetaAuthor on an AnnotationEntry is "agent" for entries written
	// from the agent's side.
	MetaAuthor = "changesetd/author"
	// MetaCreatedAt on an AnnotationEntry is when the server first saw
	// it (ISO-8601).
	MetaCreatedAt = "changesetd/createdAt"
)

// Values of AnnotationPlace.Status.
const (
	PlaceSame   = "same"   // the lines are unchanged, where they were
	PlaceMoved  = "moved"  // the lines are unchanged, at Range now
	PlaceEdited = "edited" // some of the lines changed; Range spans them now
	PlaceGone   = "gone"   // the lines, or the file, were deleted
)

// AnnotationPlace is where an annotation's lines lie in the working tree
// now, mapped through the diff from the end of its turn.
type AnnotationPlace struct {
	Status string     `json:"status"`
	Range  *TextRange `json:"range,omitempty"`
}

// AnnotationDelivery records an annotation handed to the agent: when, at
// the start of which turn, and which entries it had.
type AnnotationDelivery struct {
	At      string   `json:"at"`
	TurnID  string   `json:"turnId,omitempty"`
	Entries []string `json:"entries"`
}

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
	TurnID   string            `json:"turnId"`
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
	ID   string           `json:"id"`
	Text StringOrMarkdown `json:"text"`
	Meta Object           `json:"_meta,omitzero"`
}

// StringOrMarkdown is text that may ask to be rendered as Markdown: on
// the wire a bare string, or {"markdown": "..."} when Markdown is set.
type StringOrMarkdown struct {
	Text     string
	Markdown bool
}

// PlainText is a StringOrMarkdown rendered as it is.
func PlainText(s string) StringOrMarkdown { return StringOrMarkdown{Text: s} }

func (t StringOrMarkdown) MarshalJSON() ([]byte, error) {
	if t.Markdown {
		return json.Marshal(struct {
			Markdown string `json:"markdown"`
		}{t.Text})
	}
	return json.Marshal(t.Text)
}

func (t *StringOrMarkdown) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*t = StringOrMarkdown{}
		return json.Unmarshal(b, &t.Text)
	}
	var m struct {
		Markdown *string `json:"markdown"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("text: want a string or {\"markdown\": string}: %w", err)
	}
	if m.Markdown == nil {
		return errors.New(`text: want a string or {"markdown": string}`)
	}
	*t = StringOrMarkdown{Text: *m.Markdown, Markdown: true}
	return nil
}

// AnnotationsSummary is the summary of a session's annotations channel
// on SessionSummary and SessionState.
type AnnotationsSummary struct {
	Resource        string `json:"resource"`
	AnnotationCount int    `json:"annotationCount"`
	EntryCount      int    `json:"entryCount"`
}

// AnnotationsSet inserts Annotation, or replaces the one with its id.
type AnnotationsSet struct {
	Annotation Annotation `json:"annotation"`
	// Meta carries, from a client, the versions of the file it showed
	// when the annotation's lines were selected (view, and versions: file
	// id -> {before, after} content nonces); the server reads them and
	// does not echo them.
	Meta Object `json:"_meta,omitzero"`
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
	// Meta carries, from a client that moves the annotation to Range,
	// the versions of the file it showed (as on AnnotationsSet); the
	// server reads them and does not echo them.
	Meta Object `json:"_meta,omitzero"`
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
