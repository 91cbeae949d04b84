package protocol

import "encoding/json"

// Changeset statuses. ChangesetStatus is an open string: unknown values
// decode and round-trip.
const (
	StatusComputing   = "computing"
	StatusRecomputing = "recomputing" // since 1.0.0
	StatusReady       = "ready"
	StatusError       = "error"
)

// Changeset kinds published in catalogues. Open string.
const (
	KindUncommitted  = "uncommitted"
	KindBranch       = "branch"
	KindSession      = "session"
	KindTurn         = "turn"
	KindCompareTurns = "compare-turns"
)

// Operation statuses.
const (
	OpIdle     = "idle"
	OpRunning  = "running"
	OpError    = "error"
	OpDisabled = "disabled"
)

// Operation scopes and target kinds.
const (
	ScopeChangeset = "changeset"
	ScopeResource  = "resource"
	ScopeRange     = "range"
)

// Changeset is a catalogue entry in SessionState.changesets.
type Changeset struct {
	Label        string                 `json:"label"`
	URITemplate  string                 `json:"uriTemplate"`
	Description  string                 `json:"description,omitempty"`
	ChangeKind   string                 `json:"changeKind"`
	Capabilities *ChangesetCapabilities `json:"capabilities,omitempty"`
}

// ChangesetCapabilities flags optional features; a present, empty object
// means supported.
type ChangesetCapabilities struct {
	Review *struct{} `json:"review,omitempty"`
}

// HasReview reports whether the entry advertises review.
func (c Changeset) HasReview() bool { return c.Capabilities != nil && c.Capabilities.Review != nil }

// ChangesetState is the state of an ahp-changeset: channel.
type ChangesetState struct {
	Status     string               `json:"status"`
	Error      *ErrorInfo           `json:"error,omitempty"`
	Files      []ChangesetFile      `json:"files"`
	Operations []ChangesetOperation `json:"operations,omitzero"`
	// Meta is implementation data; treated as immutable once published.
	Meta Object `json:"_meta,omitzero"`
}

// MarshalJSON writes files as [] rather than null when empty.
func (s ChangesetState) MarshalJSON() ([]byte, error) {
	return s.AppendJSON(make([]byte, 0, filesCap(len(s.Files), 256)), nil)
}

// AppendFileJSON appends f as encoding/json encodes it.
func AppendFileJSON(b []byte, f *ChangesetFile) ([]byte, error) { return f.appendEncoded(b) }

// AppendJSON appends MarshalJSON's bytes to b, written as encoding/json
// would write them; the files through appendFiles (fastjson.go), or,
// when file is set, the i-th by file: a caller that kept a file's
// encoding from an earlier state appends those bytes again instead of
// encoding it (AppendFileJSON).
func (s ChangesetState) AppendJSON(b []byte, file func(b []byte, i int) ([]byte, error)) ([]byte, error) {
	b = append(b, `{"status":`...)
	b = appendJSONString(b, s.Status)
	var err error
	if s.Error != nil {
		if b, err = appendField(b, `,"error":`, s.Error); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"files":`...)
	if file == nil {
		b, err = appendFiles(b, s.Files)
	} else {
		b, err = appendEach(b, len(s.Files), file)
	}
	if err != nil {
		return nil, err
	}
	if s.Operations != nil {
		if b, err = appendField(b, `,"operations":`, s.Operations); err != nil {
			return nil, err
		}
	}
	if s.Meta != nil {
		b = append(b, `,"_meta":`...)
		if b, err = appendJSONObject(b, s.Meta); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendField appends name and v, encoded by encoding/json.
func appendField(b []byte, name string, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b = append(b, name...)
	return append(b, out...), nil
}

// Clone returns a deep copy suitable for handing to another goroutine.
func (s ChangesetState) Clone() ChangesetState {
	c := s
	if s.Error != nil {
		e := *s.Error
		c.Error = &e
	}
	if s.Files != nil {
		c.Files = make([]ChangesetFile, len(s.Files))
		for i, f := range s.Files {
			c.Files[i] = f.Clone()
		}
	}
	if s.Operations != nil {
		c.Operations = make([]ChangesetOperation, len(s.Operations))
		for i, op := range s.Operations {
			c.Operations[i] = op.Clone()
		}
	}
	return c
}

// ChangesetFile is one file of a changeset, keyed by ID.
type ChangesetFile struct {
	ID       string   `json:"id"`
	Edit     FileEdit `json:"edit"`
	Reviewed *bool    `json:"reviewed,omitempty"`
	Meta     Object   `json:"_meta,omitzero"`
}

// IsReviewed reports whether reviewed is present and true.
func (f ChangesetFile) IsReviewed() bool { return f.Reviewed != nil && *f.Reviewed }

// Clone returns a copy whose pointers are not shared. Meta is treated as
// immutable once published and is shared.
func (f ChangesetFile) Clone() ChangesetFile {
	c := f
	if f.Reviewed != nil {
		r := *f.Reviewed
		c.Reviewed = &r
	}
	c.Edit = f.Edit.Clone()
	return c
}

// FileEdit describes one file change. Only After: created; only Before:
// deleted; both with different URIs: renamed; both with the same URI:
// modified.
type FileEdit struct {
	Before *FileEditSide      `json:"before,omitempty"`
	After  *FileEditSide      `json:"after,omitempty"`
	Diff   *FileEditDiffStats `json:"diff,omitempty"`
}

// Clone deep-copies the edit.
func (e FileEdit) Clone() FileEdit {
	c := e
	if e.Before != nil {
		b := *e.Before
		c.Before = &b
	}
	if e.After != nil {
		a := *e.After
		c.After = &a
	}
	if e.Diff != nil {
		d := e.Diff.Clone()
		c.Diff = &d
	}
	return c
}

// FileEditSide is one side of an edit.
type FileEditSide struct {
	URI     string     `json:"uri"`
	Content ContentRef `json:"content"`
}

// FileEditDiffStats counts added and removed lines.
type FileEditDiffStats struct {
	Added   *int `json:"added,omitempty"`
	Removed *int `json:"removed,omitempty"`
}

// Clone deep-copies the stats.
func (d FileEditDiffStats) Clone() FileEditDiffStats {
	c := d
	if d.Added != nil {
		v := *d.Added
		c.Added = &v
	}
	if d.Removed != nil {
		v := *d.Removed
		c.Removed = &v
	}
	return c
}

// ContentRef points at content readable with resourceRead.
type ContentRef struct {
	URI         string `json:"uri"`
	SizeHint    *int64 `json:"sizeHint,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Nonce       string `json:"nonce,omitempty"`
}

// ErrorInfo describes a failure.
type ErrorInfo struct {
	ErrorType string `json:"errorType"`
	Message   string `json:"message"`
	Stack     string `json:"stack,omitempty"`
	Meta      Object `json:"_meta,omitzero"`
}

// ChangesetOperation is an operation a changeset offers.
type ChangesetOperation struct {
	ID           string          `json:"id"`
	Label        string          `json:"label"`
	Description  string          `json:"description,omitempty"`
	Scopes       []string        `json:"scopes"`
	Confirmation json.RawMessage `json:"confirmation,omitempty"` // StringOrMarkdown
	Icon         string          `json:"icon,omitempty"`
	Group        string          `json:"group,omitempty"`
	Status       string          `json:"status"`
	Error        *ErrorInfo      `json:"error,omitempty"`
}

// Clone copies the operation.
func (o ChangesetOperation) Clone() ChangesetOperation {
	c := o
	c.Scopes = append([]string(nil), o.Scopes...)
	if o.Error != nil {
		e := *o.Error
		c.Error = &e
	}
	return c
}

// TextPosition is a zero-based line and character.
type TextPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// TextRange is a range of text.
type TextRange struct {
	Start TextPosition `json:"start"`
	End   TextPosition `json:"end"`
}

// ChangesetOperationTarget says what an invocation applies to. Kind is
// open: unknown kinds round-trip.
type ChangesetOperationTarget struct {
	Kind     string     `json:"kind"`
	Resource string     `json:"resource,omitempty"`
	Side     string     `json:"side,omitempty"`
	Range    *TextRange `json:"range,omitempty"`
}

// Object is an untyped JSON object, used for _meta and for state the
// changeset host carries without interpreting.
type Object = map[string]any

// Ptr returns a pointer to v, for optional scalar fields.
func Ptr[T any](v T) *T { return &v }
