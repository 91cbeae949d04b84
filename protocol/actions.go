package protocol

import (
	"encoding/json"
	"fmt"
)

// Action is one state action. Concrete types carry only their payload; the
// "type" discriminator comes from ActionType and is added when encoding.
type Action interface {
	ActionType() string
}

// actionTypes maps a type discriminator to a constructor of its payload.
// It is filled by init functions and read-only afterwards.
var actionTypes = map[string]func() Action{}

func register(fs ...func() Action) {
	for _, f := range fs {
		actionTypes[f().ActionType()] = f
	}
}

// UnknownAction is an action whose type this build does not know. It keeps
// its raw JSON so it re-encodes unchanged; reducers treat it as a no-op.
type UnknownAction struct {
	Type string
	Raw  json.RawMessage
}

func (a UnknownAction) ActionType() string { return a.Type }

// DecodeAction decodes a StateAction from JSON. Unknown types decode into
// UnknownAction; a missing or non-string type is an error.
func DecodeAction(data []byte) (Action, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("action: %w", err)
	}
	if head.Type == nil || *head.Type == "" {
		return nil, fmt.Errorf("action: missing type")
	}
	mk, ok := actionTypes[*head.Type]
	if !ok {
		return UnknownAction{Type: *head.Type, Raw: append(json.RawMessage(nil), data...)}, nil
	}
	a := mk()
	if err := json.Unmarshal(data, a); err != nil {
		return nil, fmt.Errorf("action %s: %w", *head.Type, err)
	}
	// Constructors return pointers so Unmarshal can fill them; hand out values.
	return deref(a), nil
}

// EncodeAction encodes an action with its "type" discriminator first.
func EncodeAction(a Action) ([]byte, error) {
	if u, ok := a.(UnknownAction); ok {
		return u.Raw, nil
	}
	// An action whose own MarshalJSON only normalises its fields is
	// encoded in its plain form: encoding/json would otherwise scan and
	// copy a Marshaler's output once more, which for a changeset's file
	// list is megabytes.
	typ, body, err := actionParts(a)
	if err != nil {
		return nil, err
	}
	return appendAction(make([]byte, 0, actionLen(typ, body)), typ, body), nil
}

// actionParts are a known action's encoded type and its encoded fields
// (an object, whose braces appendAction replaces).
func actionParts(a Action) (typ, body []byte, err error) {
	if e, ok := a.(encodedAppender); ok {
		body, err = e.appendEncoded(nil)
	} else {
		var v any = a
		if p, ok := a.(plainer); ok {
			v = p.plain()
		}
		body, err = json.Marshal(v)
	}
	if err != nil {
		return nil, nil, err
	}
	typ, err = json.Marshal(a.ActionType())
	return typ, body, err
}

// actionLen is the length of appendAction's output.
func actionLen(typ, body []byte) int { return len(`{"type":`) + len(typ) + len(body) }

// appendAction appends the action of typ and body to dst, "type" first:
// a changeset's file list is megabytes, copied once here rather than
// into a buffer grown on the way and then into the envelope.
func appendAction(dst, typ, body []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = append(dst, typ...)
	if len(body) > 2 {
		dst = append(dst, ',')
		return append(dst, body[1:]...)
	}
	return append(dst, '}')
}

// plainer is an action whose MarshalJSON is json.Marshal of plain().
type plainer interface{ plain() any }

// StateAction wraps an Action so it can sit in a struct field and encode
// with its discriminator.
type StateAction struct{ Action }

func (s StateAction) MarshalJSON() ([]byte, error) {
	if s.Action == nil {
		return []byte("null"), nil
	}
	return EncodeAction(s.Action)
}

func (s *StateAction) UnmarshalJSON(data []byte) error {
	a, err := DecodeAction(data)
	if err != nil {
		return err
	}
	s.Action = a
	return nil
}

// ActionOrigin identifies the client dispatch an envelope echoes.
type ActionOrigin struct {
	ClientID  string `json:"clientId"`
	ClientSeq int64  `json:"clientSeq"`
}

// ActionEnvelope is the params of an "action" notification.
type ActionEnvelope struct {
	Channel         string        `json:"channel"`
	Action          StateAction   `json:"action"`
	ServerSeq       int64         `json:"serverSeq"`
	Origin          *ActionOrigin `json:"origin,omitempty"`
	RejectionReason string        `json:"rejectionReason,omitempty"`
}

// UnmarshalJSON rejects an envelope without an action: it could not be
// applied, and would re-encode as "action":null.
func (e *ActionEnvelope) UnmarshalJSON(data []byte) error {
	type plain ActionEnvelope
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if p.Action.Action == nil {
		return fmt.Errorf("action envelope: action is missing")
	}
	*e = ActionEnvelope(p)
	return nil
}

// Changeset channel actions.

type ChangesetStatusChanged struct {
	Status string     `json:"status"`
	Error  *ErrorInfo `json:"error,omitempty"`
	// Meta, when it carries changesetd.view, publishes the view stamp the
	// changeset's files were computed on; the reducer keeps it in the
	// state's _meta.changesetd.view.
	Meta Object `json:"_meta,omitzero"`
}

type ChangesetFileSet struct {
	File ChangesetFile `json:"file"`
}

func (a ChangesetFileSet) appendEncoded(b []byte) ([]byte, error) {
	b = append(b, `{"file":`...)
	b, err := a.File.appendEncoded(b)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

type ChangesetFileRemoved struct {
	FileID string `json:"fileId"`
}

type ChangesetFilesReviewChanged struct {
	Files    []string `json:"files"`
	Reviewed bool     `json:"reviewed"`
	// Meta carries, from a client, the versions of the files it showed
	// (versions: file id -> {before, after} content nonces).
	Meta Object `json:"_meta,omitzero"`
}

// MarshalJSON writes files as [] rather than null: a rejected toggle
// that named no files is echoed to its sender, and files is a required
// array.
func (a ChangesetFilesReviewChanged) MarshalJSON() ([]byte, error) { return json.Marshal(a.plain()) }

func (a ChangesetFilesReviewChanged) plain() any {
	type plain ChangesetFilesReviewChanged
	if a.Files == nil {
		a.Files = []string{}
	}
	return plain(a)
}

// ChangesetContentChanged replaces the file list. Operations nil means
// "keep"; non-nil (even empty) replaces. Error is only sent to 0.6/0.7
// clients and only applied by their reducer (see reducer.Env).
type ChangesetContentChanged struct {
	Files      []ChangesetFile      `json:"files"`
	Operations []ChangesetOperation `json:"operations,omitzero"`
	Error      *ErrorInfo           `json:"error,omitempty"`
}

// MarshalJSON writes files as [] rather than null.
func (a ChangesetContentChanged) MarshalJSON() ([]byte, error) { return a.appendEncoded(nil) }

// appendEncoded writes the fields as encoding/json would, the files
// through appendFiles (fastjson.go); a nil b gets a buffer sized for
// them.
func (a ChangesetContentChanged) appendEncoded(b []byte) ([]byte, error) {
	if b == nil {
		b = make([]byte, 0, filesCap(len(a.Files), 64))
	}
	b = append(b, `{"files":`...)
	b, err := appendFiles(b, a.Files)
	if err != nil {
		return nil, err
	}
	if a.Operations != nil {
		if b, err = appendField(b, `,"operations":`, a.Operations); err != nil {
			return nil, err
		}
	}
	if a.Error != nil {
		if b, err = appendField(b, `,"error":`, a.Error); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// ChangesetOperationsChanged sets the operations; nil clears them.
type ChangesetOperationsChanged struct {
	Operations []ChangesetOperation `json:"operations,omitzero"`
}

type ChangesetOperationStatusChanged struct {
	OperationID string     `json:"operationId"`
	Status      string     `json:"status"`
	Error       *ErrorInfo `json:"error,omitempty"`
}

type ChangesetCleared struct{}

func (ChangesetStatusChanged) ActionType() string          { return "changeset/statusChanged" }
func (ChangesetFileSet) ActionType() string                { return "changeset/fileSet" }
func (ChangesetFileRemoved) ActionType() string            { return "changeset/fileRemoved" }
func (ChangesetFilesReviewChanged) ActionType() string     { return "changeset/filesReviewChanged" }
func (ChangesetContentChanged) ActionType() string         { return "changeset/contentChanged" }
func (ChangesetOperationsChanged) ActionType() string      { return "changeset/operationsChanged" }
func (ChangesetOperationStatusChanged) ActionType() string { return "changeset/operationStatusChanged" }
func (ChangesetCleared) ActionType() string                { return "changeset/cleared" }

func init() {
	register(
		func() Action { return &ChangesetStatusChanged{} },
		func() Action { return &ChangesetFileSet{} },
		func() Action { return &ChangesetFileRemoved{} },
		func() Action { return &ChangesetFilesReviewChanged{} },
		func() Action { return &ChangesetContentChanged{} },
		func() Action { return &ChangesetOperationsChanged{} },
		func() Action { return &ChangesetOperationStatusChanged{} },
		func() Action { return &ChangesetCleared{} },
	)
}
