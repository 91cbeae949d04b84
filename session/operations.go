package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/uritemplate"
)

// Editor is the write side of a workspace: it carries out the changeset
// operations. The session validates an invocation (the operation is
// offered, the target is a file of the changeset, a range's lines were
// picked on the content last published), queues it behind others on the
// same working tree and publishes its outcome; the Editor changes the
// tree. Paths are slash-separated and relative to the workspace root;
// implementations refuse paths that leave the root, including through
// symbolic links, with a protocol PermissionDenied error.
type Editor interface {
	// Revert restores each file of e to its Old side (removing it when
	// Old is nil), or for a range only the hunks that intersect it; a
	// range's file must still hold the New side's content. With e.Index
	// the index entries go back to HEAD as well. It returns what it
	// replaced.
	Revert(ctx context.Context, e Edit) (Undo, error)
	// Stage adds the files of e, or only the lines of e.Range, to the
	// index.
	Stage(ctx context.Context, e Edit) error
	// Unstage resets the files' index entries to HEAD, or only the staged
	// lines of e.Range (numbered as in the staged version).
	Unstage(ctx context.Context, e Edit) error
	// Commit commits what is staged, or every change under the session's
	// directory when nothing is. An empty message is replaced by
	// fallback(), called once the tree is settled. It returns the commit
	// id and the message used.
	Commit(ctx context.Context, message string, fallback func() string) (id, used string, err error)
	// Undo puts back what a revert replaced, refusing when the files
	// changed since.
	Undo(ctx context.Context, u Undo) error
}

// Edit is the target of an operation as an Editor gets it.
type Edit struct {
	Files []EditFile
	// Range, when set, limits the operation to the hunks of the one file
	// that intersect these 0-based lines of Side ("before" or "after").
	Range *protocol.TextRange
	Side  string
	// Index: the revert is of the uncommitted changeset, so the index
	// entries go back to HEAD too.
	Index bool
}

// EditFile is one file of an Edit with its sides as the changeset last
// published them; nil when absent on that side.
type EditFile struct {
	Old, New *FileVersion
}

// Path is the file's current path, or its old path when it was deleted.
func (f EditFile) Path() string {
	if f.New != nil {
		return f.New.Path
	}
	return f.Old.Path
}

// OldPath is the path a renamed file had, else "".
func (f EditFile) OldPath() string {
	if f.Old != nil && f.New != nil && f.Old.Path != f.New.Path {
		return f.Old.Path
	}
	return ""
}

// Undo is what a revert replaced, as its Editor recorded it. The session
// keeps the last one of a changeset and offers to put it back while it is
// Current.
type Undo interface {
	// Current reports whether the files are still as the revert left
	// them; once they are not, putting back the old content would lose a
	// change.
	Current() bool
}

// Operation ids.
const (
	OpRevert  = "revert"
	OpStage   = "stage"
	OpUnstage = "unstage"
	OpCommit  = "commit"
	OpUndo    = "undo"
)

// opState is an operation's status as last reported.
type opState struct {
	status string
	err    *protocol.ErrorInfo
}

// undoRecord is the last revert of a changeset, while it can be undone.
type undoRecord struct {
	ws   int // the workspace it wrote
	edit Undo
}

// operations lists the operations the changeset offers now. Every one of
// them writes, so all are disabled while a turn runs.
func (cs *csChannel) operations(s *Session) []protocol.ChangesetOperation {
	if !s.editable() {
		return nil
	}
	confirm := func(text string) json.RawMessage { b, _ := json.Marshal(text); return b }
	ops := []protocol.ChangesetOperation{{
		ID: OpRevert, Label: "Revert", Icon: "discard", Group: "file",
		Description:  "Restore the file, or the selected lines, to the changeset's original version",
		Scopes:       []string{protocol.ScopeResource, protocol.ScopeRange},
		Confirmation: confirm(revertConfirmation(cs.ref.Kind)),
	}}
	if cs.ref.Kind == protocol.KindUncommitted {
		ops = append(ops,
			protocol.ChangesetOperation{ID: OpStage, Label: "Stage", Icon: "add", Group: "index", Description: "Add the file, or the selected lines, to the index", Scopes: []string{protocol.ScopeResource, protocol.ScopeRange}},
			protocol.ChangesetOperation{ID: OpUnstage, Label: "Unstage", Icon: "remove", Group: "index", Description: "Reset the file's index entry, or the selected lines, to HEAD", Scopes: []string{protocol.ScopeResource, protocol.ScopeRange}},
			protocol.ChangesetOperation{ID: OpCommit, Label: "Commit", Icon: "check", Group: "commit", Description: "Commit what is staged, or every change when nothing is", Scopes: []string{protocol.ScopeChangeset}},
		)
	}
	if cs.undo != nil {
		ops = append(ops, protocol.ChangesetOperation{ID: OpUndo, Label: "Undo Revert", Icon: "undo", Group: "file", Description: "Put back exactly what the last revert replaced", Scopes: []string{protocol.ScopeChangeset}})
	}
	running := s.activeTurn() != nil
	for i := range ops {
		ops[i].Status = protocol.OpIdle
		if st, ok := cs.opStatus[ops[i].ID]; ok {
			ops[i].Status, ops[i].Error = st.status, st.err
		}
		if running {
			ops[i].Status, ops[i].Error = protocol.OpDisabled, nil
		}
	}
	return ops
}

func revertConfirmation(kind string) string {
	switch kind {
	case protocol.KindUncommitted:
		return "Discard these uncommitted changes? The file returns to its committed version."
	case protocol.KindBranch:
		return "Discard these changes? The file returns to its version at the branch point."
	case protocol.KindSession:
		return "Discard this session's changes to the file? It returns to its version when the session started."
	}
	return "Restore the file to this changeset's original version? Later changes to it are discarded too."
}

// editable reports whether the session's workspaces can be written.
func (s *Session) editable() bool {
	for _, e := range s.workspaces {
		if _, ok := e.ws.(Editor); ok {
			return true
		}
	}
	return false
}

// syncOperations publishes the operation list when it changed.
func (cs *csChannel) syncOperations(s *Session) {
	if !cs.loaded {
		return
	}
	want := cs.operations(s)
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(cs.state.Operations)
	if !bytes.Equal(a, b) {
		cs.commit(s, protocol.ChangesetOperationsChanged{Operations: want}, nil)
	}
}

// setOpStatus records and publishes an operation's status.
func (cs *csChannel) setOpStatus(s *Session, id, status string, info *protocol.ErrorInfo) {
	if cs.opStatus == nil {
		cs.opStatus = map[string]opState{}
	}
	cs.opStatus[id] = opState{status: status, err: info}
	cs.commit(s, protocol.ChangesetOperationStatusChanged{OperationID: id, Status: status, Error: info}, nil)
}

// opTarget is a validated invocation.
type opTarget struct {
	op    string
	scope string
	files []fileOrigin // the target's files (several for a directory)
	rng   *protocol.TextRange
	side  string
	meta  protocol.Object
}

// flight is an invocation in progress; identical ones wait for it.
type flight struct {
	done chan struct{}
	res  *protocol.InvokeChangesetOperationResult
	err  error
}

// Invoke runs a changeset operation: it validates the invocation against
// the changeset's current operations, reports running → idle or error
// through operationStatusChanged, and runs the work off the actor,
// serialised per working tree. An identical invocation already running is
// joined rather than run twice.
func (m *Manager) Invoke(ctx context.Context, p protocol.InvokeChangesetOperationParams) (*protocol.InvokeChangesetOperationResult, error) {
	ref, err := uritemplate.ParseChangesetURI(p.Channel)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeNotFound, "invokeChangesetOperation %s: %v", p.Channel, err)
	}
	s, ok := m.Session(protocol.SessionScheme + "/" + ref.SessionID)
	if !ok {
		return nil, protocol.Errorf(protocol.CodeNotFound, "invokeChangesetOperation %s: session %s does not exist", p.Channel, ref.SessionID)
	}
	if err := m.enter("invokeChangesetOperation"); err != nil {
		return nil, err
	}
	// A command: the actor joins the invocation to an identical flight or
	// starts one, and a flight it starts runs and publishes its outcome
	// whether or not this caller still waits. The Drain registration goes
	// with it: to the flight when one starts, else it ends on the actor.
	key := flightKey(p)
	f, err := command(ctx, s, func() (*flight, error) {
		f, started, err := s.joinOp(key, p)
		if !started {
			m.inflight.Done()
		}
		return f, err
	})
	if errors.Is(err, ErrClosed) {
		m.inflight.Done() // never reached the actor
		return nil, protocol.Errorf(protocol.CodeNotFound, "invokeChangesetOperation %s: session %s was disposed", p.Channel, ref.SessionID)
	}
	if err != nil {
		return nil, err
	}
	select {
	case <-f.done:
		return f.res, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// joinOp returns the flight of an identical invocation in progress, or
// validates p and starts its flight; started says which. The flight is
// the session's: its work runs on a goroutine the Manager owns, which
// publishes the outcome, forgets the flight and ends the Drain
// registration the invocation made. On the actor.
func (s *Session) joinOp(key string, p protocol.InvokeChangesetOperationParams) (f *flight, started bool, err error) {
	if s.disposed {
		return nil, false, protocol.Errorf(protocol.CodeNotFound, "invokeChangesetOperation %s: session %s was disposed", p.Channel, s.uri)
	}
	if f := s.flights[key]; f != nil {
		return f, false, nil
	}
	run, err := s.prepareOp(p)
	if err != nil {
		return nil, false, err
	}
	f = &flight{done: make(chan struct{})}
	if s.flights == nil {
		s.flights = map[string]*flight{}
	}
	s.flights[key] = f
	m := s.m
	m.spawn("changeset operation", func() {
		defer m.inflight.Done()
		f.res, f.err = run()
		close(f.done)
		s.do(func() {
			if s.flights[key] == f {
				delete(s.flights, key)
			}
		})
		outcome := "ok"
		if f.err != nil {
			outcome = "error"
		}
		m.opts.Metrics.Operation(p.OperationID, outcome)
	})
	return f, true, nil
}

func flightKey(p protocol.InvokeChangesetOperationParams) string {
	b, _ := json.Marshal(struct {
		C, O string
		T    *protocol.ChangesetOperationTarget
		M    protocol.Object
	}{p.Channel, p.OperationID, p.Target, p.Meta})
	return string(b)
}

// prepareOp validates an invocation on the actor, marks the operation
// running and returns the work to run off the actor.
func (s *Session) prepareOp(p protocol.InvokeChangesetOperationParams) (func() (*protocol.InvokeChangesetOperationResult, error), error) {
	cs := s.changesets[p.Channel]
	if cs != nil && cs.loaded && !cs.active {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: no one is subscribed to %s, so its files are not kept current; subscribe to it first", p.Channel)
	}
	if cs == nil || !cs.loaded {
		ref, _ := uritemplate.ParseChangesetURI(p.Channel)
		if err := s.checkRef(ref); err != nil {
			return nil, protocol.Errorf(protocol.CodeNotFound, "invokeChangesetOperation %s: %v", p.Channel, err)
		}
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: %s is not computed yet; subscribe to it to see its operations", p.Channel)
	}
	var op *protocol.ChangesetOperation
	var offered []string
	for i := range cs.state.Operations {
		offered = append(offered, cs.state.Operations[i].ID)
		if cs.state.Operations[i].ID == p.OperationID {
			op = &cs.state.Operations[i]
		}
	}
	if op == nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: operation %q is not offered by %s (it offers: %s)", p.OperationID, p.Channel, strings.Join(offered, ", "))
	}
	if op.Status == protocol.OpDisabled {
		reason := "it is disabled"
		if t := s.activeTurn(); t != nil {
			reason = fmt.Sprintf("it is disabled while turn %q runs", t.id)
		}
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: operation %q cannot run now: %s", p.OperationID, reason)
	}
	t := opTarget{op: op.ID, scope: protocol.ScopeChangeset, meta: p.Meta}
	if p.Target != nil {
		t.scope = p.Target.Kind
	}
	if !slices.Contains(op.Scopes, t.scope) {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: operation %q does not apply to a %q target (its scopes: %s)", op.ID, t.scope, strings.Join(op.Scopes, ", "))
	}
	if t.scope != protocol.ScopeChangeset {
		files, err := s.targetFiles(cs, p.Target.Resource)
		if err != nil {
			return nil, err
		}
		t.files = files
		t.side = p.Target.Side
		if t.side == "" {
			t.side = "after"
		}
		if t.side != "after" && t.side != "before" {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: target.side must be \"before\" or \"after\", not %q", t.side)
		}
	}
	if t.scope == protocol.ScopeRange {
		r := p.Target.Range
		if r == nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: a range target needs target.range")
		}
		if r.Start.Line < 0 || r.End.Line < 0 || r.Start.Character < 0 || r.End.Character < 0 || r.End.Line < r.Start.Line {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: target.range must have non-negative positions and end at or after its start")
		}
		if len(t.files) != 1 {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: a range target must name one file")
		}
		t.rng = r
		if err := checkExpectedNonce(p.Meta, t.files[0], t.side); err != nil {
			return nil, err
		}
	}
	var ed Editor
	var ws int
	if len(t.files) > 0 {
		ws = t.files[0].ws
	} else {
		for i, e := range s.workspaces {
			if _, ok := e.ws.(Editor); ok {
				ws = i
				break
			}
		}
	}
	ed, _ = s.workspaces[ws].ws.(Editor)
	if ed == nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: %s cannot be written", s.workspaces[ws].dir)
	}
	if t.op == OpUndo && (cs.undo == nil || cs.undo.ws != ws) {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: there is no revert to undo")
	}
	undo := cs.undo
	kind := cs.ref.Kind
	// Invocations on one working tree queue on its lock; only identical
	// ones (joined in Invoke) are not run twice.
	if cs.opRunning == nil {
		cs.opRunning = map[string]int{}
	}
	if cs.opRunning[op.ID] == 0 {
		cs.setOpStatus(s, op.ID, protocol.OpRunning, nil)
	}
	cs.opRunning[op.ID]++
	lock := s.m.treeLock(s.workspaces[ws].dir)
	ctx := s.ctx
	return func() (*protocol.InvokeChangesetOperationResult, error) {
		lock.Lock()
		res, newUndo, err := runOp(ctx, ed, kind, t, undo, s)
		lock.Unlock()
		done := make(chan struct{})
		if !s.do(func() {
			defer close(done)
			s.finishOp(cs, t, ws, newUndo, err)
		}) {
			// Disposed meanwhile: nothing to publish to, and no actor
			// to wait for.
			return nil, protocol.Errorf(protocol.CodeSessionNotFound, "invokeChangesetOperation: the session was disposed while %s ran (%v); what it wrote stays", t.op, errOr(err, "it had finished"))
		}
		<-done
		return res, err
	}, nil
}

func errOr(err error, otherwise string) any {
	if err != nil {
		return err
	}
	return otherwise
}

// finishOp publishes an operation's outcome on the actor.
func (s *Session) finishOp(cs *csChannel, t opTarget, ws int, newUndo *undoRecord, err error) {
	cs.opRunning[t.op]--
	if err != nil {
		cs.setOpStatus(s, t.op, protocol.OpError, &protocol.ErrorInfo{ErrorType: errorType(err), Message: err.Error()})
	} else {
		if cs.opRunning[t.op] == 0 {
			cs.setOpStatus(s, t.op, protocol.OpIdle, nil)
		}
		switch t.op {
		case OpRevert:
			cs.undo = newUndo
		case OpUndo:
			cs.undo = nil
		}
	}
	cs.syncOperations(s)
	// The file watcher reports the writes too; asking now makes the
	// result visible without waiting for it.
	for _, c := range s.changesets {
		if c.active {
			c.changed(s, ws, nil, true)
		}
	}
}

func errorType(err error) string {
	switch protocol.CodeOf(err) {
	case protocol.CodePermissionDenied:
		return "PermissionDenied"
	case protocol.CodeConflict:
		return "Conflict"
	}
	return "OperationFailed"
}

// targetFiles resolves a target resource to files of the changeset: a
// file (by id, before URI or after URI) or a directory holding only
// additions (an untracked directory).
func (s *Session) targetFiles(cs *csChannel, resource string) ([]fileOrigin, error) {
	if resource == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: target.resource is required")
	}
	if path, err := confine.PathFromFileURI(resource); err == nil && !s.contains(path) {
		return nil, protocol.Errorf(protocol.CodePermissionDenied, "invokeChangesetOperation: %s is outside the session's working directories", resource)
	}
	for _, f := range cs.state.Files {
		if f.ID == resource || (f.Edit.Before != nil && f.Edit.Before.URI == resource) || (f.Edit.After != nil && f.Edit.After.URI == resource) {
			if o, ok := cs.origin[f.ID]; ok {
				return []fileOrigin{o}, nil
			}
		}
	}
	prefix := strings.TrimSuffix(resource, "/") + "/"
	var files []fileOrigin
	for _, f := range cs.state.Files {
		if strings.HasPrefix(f.ID, prefix) {
			o := cs.origin[f.ID]
			if o.from != nil {
				return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: %s is a directory with changes other than new files; target its files one by one", resource)
			}
			files = append(files, o)
		}
	}
	if len(files) == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: %s is not a file of this changeset", resource)
	}
	return files, nil
}

// treeLock returns the lock that serialises operations on a working tree.
func (m *Manager) treeLock(dir string) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.treeLocks == nil {
		m.treeLocks = map[string]*sync.Mutex{}
	}
	l := m.treeLocks[dir]
	if l == nil {
		l = &sync.Mutex{}
		m.treeLocks[dir] = l
	}
	return l
}

// runOp has the Editor do an operation's work. It runs off the actor,
// holding the working tree's lock.
func runOp(ctx context.Context, ed Editor, kind string, t opTarget, undo *undoRecord, s *Session) (*protocol.InvokeChangesetOperationResult, *undoRecord, error) {
	e := Edit{Range: t.rng, Side: t.side}
	for _, f := range t.files {
		e.Files = append(e.Files, EditFile{Old: f.from, New: f.to})
	}
	switch t.op {
	case OpRevert:
		e.Index = kind == protocol.KindUncommitted
		u, err := ed.Revert(ctx, e)
		if err != nil {
			return nil, nil, err
		}
		return message(fmt.Sprintf("Reverted %d file(s)", len(t.files))), &undoRecord{ws: t.files[0].ws, edit: u}, nil
	case OpStage:
		return nil, nil, ed.Stage(ctx, e)
	case OpUnstage:
		return nil, nil, ed.Unstage(ctx, e)
	case OpCommit:
		id, msg, err := ed.Commit(ctx, metaMessage(t.meta), s.commitMessage)
		if err != nil {
			return nil, nil, err
		}
		subject, _, _ := strings.Cut(msg, "\n")
		return message(fmt.Sprintf("Committed %.7s: %s", id, subject)), nil, nil
	case OpUndo:
		if err := ed.Undo(ctx, undo.edit); err != nil {
			return nil, nil, err
		}
		return message("Restored what the revert replaced"), nil, nil
	}
	return nil, nil, protocol.Errorf(protocol.CodeInvalidParams, "operation %q is not implemented", t.op)
}

func message(text string) *protocol.InvokeChangesetOperationResult {
	b, _ := json.Marshal(text)
	return &protocol.InvokeChangesetOperationResult{Message: b}
}

// MetaExpectedNonce is the optional _meta key of a range invocation
// naming the content its lines were picked on: the content.nonce of the
// target's side (after, unless target.side is "before") as the client
// saw it. When it is not the version last published the invocation is
// refused, since the lines may no longer be the ones the reviewer chose.
const MetaExpectedNonce = "expectedNonce"

// checkExpectedNonce refuses a range invocation whose _meta.expectedNonce
// is not the published nonce of the side its lines refer to.
func checkExpectedNonce(meta protocol.Object, f fileOrigin, side string) error {
	v, ok := meta[MetaExpectedNonce]
	if !ok {
		return nil
	}
	want, _ := v.(string)
	sd := f.to
	if side == "before" {
		sd = f.from
	}
	got := ""
	if sd != nil {
		got = sd.OID
	}
	if want == "" || want != got {
		return protocol.Errorf(protocol.CodeConflict, "invokeChangesetOperation: %s: _meta.expectedNonce %q is not the %s side's current content (%q); the file changed since the lines were chosen: select them again on the current version", f.path(), want, side, got)
	}
	return nil
}

func metaMessage(meta protocol.Object) string {
	if m, ok := meta["message"].(string); ok {
		return m
	}
	if own, ok := meta["changesetd"].(map[string]any); ok {
		if m, ok := own["message"].(string); ok {
			return m
		}
	}
	return ""
}

// commitMessage describes the uncommitted changeset: a subject with the
// counts and one line per file. It is read under no lock: the snapshot of
// the files is copied by the caller's closure.
func (s *Session) commitMessage() string {
	files, _ := query(context.Background(), s, func() ([]protocol.ChangesetFile, error) {
		for _, cs := range s.changesets {
			if cs.ref.Kind == protocol.KindUncommitted {
				return slices.Clone(cs.state.Files), nil
			}
		}
		return nil, nil
	})
	var add, del int
	var lines []string
	for _, f := range files {
		a, d := 0, 0
		if f.Edit.Diff != nil && f.Edit.Diff.Added != nil {
			a, d = *f.Edit.Diff.Added, *f.Edit.Diff.Removed
		}
		add, del = add+a, del+d
		own, _ := f.Meta["changesetd"].(map[string]any)
		op, _ := own["operation"].(string)
		name := f.ID
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		lines = append(lines, fmt.Sprintf("- %s %s (+%d -%d)", op, name, a, d))
	}
	return fmt.Sprintf("Update %d file(s) (+%d -%d)\n\n%s\n", len(files), add, del, strings.Join(lines, "\n"))
}

// contains reports whether path lies inside one of the session's working
// directories, both lexically and once symbolic links in it are resolved
// (the deepest existing ancestor is resolved for a path that does not
// exist yet).
func (s *Session) contains(path string) bool {
	return slices.ContainsFunc(s.dirs, func(d string) bool { return confine.Under(d, path) })
}
