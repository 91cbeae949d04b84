package reducer

import (
	"slices"

	"github.com/changesetd/changesetd/protocol"
)

// ApplyChangeset reduces one action into the state of an ahp-changeset:
// channel. It never modifies s; see the package documentation.
func ApplyChangeset(s protocol.ChangesetState, a protocol.Action, env Env) (protocol.ChangesetState, Outcome) {
	switch a := a.(type) {
	case protocol.ChangesetStatusChanged:
		return changesetStatusChanged(s, a), Applied
	case protocol.ChangesetFileSet:
		return changesetFileSet(s, a), Applied
	case protocol.ChangesetFileRemoved:
		return changesetFileRemoved(s, a)
	case protocol.ChangesetFilesReviewChanged:
		return changesetFilesReviewChanged(s, a)
	case protocol.ChangesetContentChanged:
		return changesetContentChanged(s, a, env), Applied
	case protocol.ChangesetOperationsChanged:
		s.Operations = slices.Clone(a.Operations)
		return s, Applied
	case protocol.ChangesetOperationStatusChanged:
		return changesetOperationStatusChanged(s, a)
	case protocol.ChangesetCleared:
		if len(s.Files) == 0 {
			return s, NoOp
		}
		s.Files = []protocol.ChangesetFile{}
		return s, Applied
	}
	return s, NoOp
}

// changesetStatusChanged sets the status; the error is kept only while the
// status is "error".
func changesetStatusChanged(s protocol.ChangesetState, a protocol.ChangesetStatusChanged) protocol.ChangesetState {
	s.Status = a.Status
	s.Error = nil
	if a.Status == protocol.StatusError {
		s.Error = cloneError(a.Error)
	}
	if v, ok := ViewOf(a.Meta); ok {
		s.Meta = withView(s.Meta, v)
	}
	return s
}

// ViewOf reads _meta.changesetd.view, the view stamp a changeset's files
// were computed on, as a status action or a state carries it.
func ViewOf(meta protocol.Object) (string, bool) {
	own, _ := meta["changesetd"].(protocol.Object)
	v, ok := own["view"].(string)
	return v, ok
}

// withView is meta with _meta.changesetd.view set, copied: a published
// _meta is never modified.
func withView(meta protocol.Object, view string) protocol.Object {
	out := make(protocol.Object, len(meta)+1)
	for k, v := range meta {
		out[k] = v
	}
	own := protocol.Object{}
	if prev, ok := meta["changesetd"].(protocol.Object); ok {
		for k, v := range prev {
			own[k] = v
		}
	}
	own["view"] = view
	out["changesetd"] = own
	return out
}

// changesetFileSet replaces the file with the same id in place, or appends.
func changesetFileSet(s protocol.ChangesetState, a protocol.ChangesetFileSet) protocol.ChangesetState {
	f := a.File.Clone()
	i := fileIndex(s.Files, f.ID)
	if i < 0 {
		s.Files = append(slices.Clip(s.Files), f)
		return s
	}
	s.Files = slices.Clone(s.Files)
	s.Files[i] = f
	return s
}

func changesetFileRemoved(s protocol.ChangesetState, a protocol.ChangesetFileRemoved) (protocol.ChangesetState, Outcome) {
	i := fileIndex(s.Files, a.FileID)
	if i < 0 {
		return s, NoOp
	}
	s.Files = slices.Delete(slices.Clone(s.Files), i, i+1)
	return s, Applied
}

// changesetFilesReviewChanged writes reviewed (false explicitly) on every
// listed file whose flag differs; an absent flag differs from both values.
func changesetFilesReviewChanged(s protocol.ChangesetState, a protocol.ChangesetFilesReviewChanged) (protocol.ChangesetState, Outcome) {
	// A reviewer marks one file, or a few, of a list that may hold tens
	// of thousands: comparing each id with a few is cheaper than hashing
	// it for a set.
	listed := func(id string) bool { return slices.Contains(a.Files, id) }
	if len(a.Files) > 8 {
		ids := make(map[string]bool, len(a.Files))
		for _, id := range a.Files {
			ids[id] = true
		}
		listed = func(id string) bool { return ids[id] }
	}
	var files []protocol.ChangesetFile // copied on the first change
	for i, f := range s.Files {
		if !listed(f.ID) || (f.Reviewed != nil && *f.Reviewed == a.Reviewed) {
			continue
		}
		if files == nil {
			files = slices.Clone(s.Files)
		}
		files[i].Reviewed = protocol.Ptr(a.Reviewed)
	}
	if files == nil {
		return s, NoOp
	}
	s.Files = files
	return s, Applied
}

// changesetContentChanged replaces the files, and the operations when the
// action carries them. Only legacy clients apply its error field.
func changesetContentChanged(s protocol.ChangesetState, a protocol.ChangesetContentChanged, env Env) protocol.ChangesetState {
	s.Files = cloneFiles(a.Files)
	if a.Operations != nil {
		s.Operations = slices.Clone(a.Operations)
	}
	if env.legacy() {
		s.Error = cloneError(a.Error)
	}
	return s
}

// changesetOperationStatusChanged updates one operation's status; the error
// is kept only while the status is "error".
func changesetOperationStatusChanged(s protocol.ChangesetState, a protocol.ChangesetOperationStatusChanged) (protocol.ChangesetState, Outcome) {
	i := slices.IndexFunc(s.Operations, func(op protocol.ChangesetOperation) bool { return op.ID == a.OperationID })
	if i < 0 {
		return s, NoOp
	}
	ops := slices.Clone(s.Operations)
	ops[i].Status = a.Status
	ops[i].Error = nil
	if a.Status == protocol.OpError {
		ops[i].Error = cloneError(a.Error)
	}
	s.Operations = ops
	return s, Applied
}

func fileIndex(files []protocol.ChangesetFile, id string) int {
	return slices.IndexFunc(files, func(f protocol.ChangesetFile) bool { return f.ID == id })
}

// cloneFiles deep-copies files, turning nil into an empty list.
func cloneFiles(files []protocol.ChangesetFile) []protocol.ChangesetFile {
	out := make([]protocol.ChangesetFile, len(files))
	for i, f := range files {
		out[i] = f.Clone()
	}
	return out
}

func cloneError(e *protocol.ErrorInfo) *protocol.ErrorInfo {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}
