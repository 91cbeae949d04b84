package view

import (
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

// Model is one changeset as its subscribers hold it, with what binds
// review to content. The zero value is not usable: see New.
type Model struct {
	// State is the changeset's state as published. Change it through
	// Apply, Publish or SetFiles, which keep the index of positions in
	// step; reading it is free.
	State protocol.ChangesetState
	// Reviews maps a file id to the content key (ContentKey) it was
	// reviewed at. A file is shown reviewed only while its content has
	// that key, so an edit clears the flag and undoing the edit brings it
	// back.
	Reviews map[string]string
	// HunkReviews maps a file id to the ids of its hunks marked reviewed.
	HunkReviews map[string][]string
	// Kept maps a file id to the content key of its reviewed version the
	// daemon keeps; while the file's flag is for that version and its
	// content is another, it offers what changed since (SinceReview).
	Kept map[string]string
	// Views is the stamp of HEAD and the index each workspace's files
	// were last computed on, published as the changeset's view stamp.
	Views map[int]string

	byID map[string]int // file id -> index in State.Files; nil: rebuild
}

// New is a changeset being computed for the first time, with the state's
// _meta and the review marks kept from before.
func New(meta protocol.Object, reviews map[string]string, hunkReviews map[string][]string) *Model {
	if reviews == nil {
		reviews = map[string]string{}
	}
	if hunkReviews == nil {
		hunkReviews = map[string][]string{}
	}
	return &Model{
		State:       protocol.ChangesetState{Status: protocol.StatusComputing, Files: []protocol.ChangesetFile{}, Meta: meta},
		Reviews:     reviews,
		HunkReviews: hunkReviews,
		Kept:        map[string]string{},
	}
}

// Apply reduces a on the state. It returns the action to publish (a
// contentChanged carries the state's error for 0.6/0.7 clients, see
// protocol.Adapt) and whether the state changed.
func (m *Model) Apply(a protocol.Action) (protocol.Action, bool) {
	next, out := reducer.ApplyChangeset(m.State, a, reducer.Env{})
	changed := out == reducer.Applied
	if changed {
		m.State = next
		switch a := a.(type) {
		case protocol.ChangesetFilesReviewChanged, protocol.ChangesetStatusChanged,
			protocol.ChangesetOperationsChanged, protocol.ChangesetOperationStatusChanged:
			// The files keep their places: a reviewer marking one file of
			// tens of thousands does not index them all again.
		case protocol.ChangesetFileSet:
			// A file set keeps its place, a new one is appended (the
			// reducer's changesetFileSet): a file saved again, or a
			// review offer updated, does not index every file again.
			if m.byID != nil {
				if _, ok := m.byID[a.File.ID]; !ok {
					m.byID[a.File.ID] = len(m.State.Files) - 1
				}
			}
		default:
			m.byID = nil // positions may have moved
		}
	}
	if cc, ok := a.(protocol.ChangesetContentChanged); ok {
		cc.Error = m.State.Error
		a = cc
	}
	return a, changed
}

// SetFiles replaces the file list without publishing; the caller
// publishes the actions that lead to it.
func (m *Model) SetFiles(files []protocol.ChangesetFile) {
	m.State.Files = files
	m.byID = nil
}

// Find returns the published file with the id, or nil. A refresh looks up
// every file it computed, so the positions are indexed once per state.
func (m *Model) Find(id string) *protocol.ChangesetFile {
	if m.byID == nil {
		m.byID = make(map[string]int, len(m.State.Files))
		for i, f := range m.State.Files {
			m.byID[f.ID] = i
		}
	}
	if i, ok := m.byID[id]; ok {
		return &m.State.Files[i]
	}
	return nil
}

// ViewStamp is the published view stamp: each of n workspaces' stamp, in
// order, one a line; "" when none is known.
func (m *Model) ViewStamp(n int) string {
	if len(m.Views) == 0 {
		return ""
	}
	parts := make([]string, n)
	for i := range parts {
		parts[i] = m.Views[i]
	}
	return joinLines(parts)
}

// Published is the view stamp the state carries now.
func (m *Model) Published() string {
	v, _ := reducer.ViewOf(m.State.Meta)
	return v
}
