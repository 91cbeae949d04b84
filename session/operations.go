package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/ops"
	"github.com/changesetd/changesetd/session/view"
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
//
// Before it writes, every operation checks that it acts on the view it was
// chosen on: each file of the Edit still has the content the changeset
// published (its OID, or absence), and HEAD and the index are as they
// were when the changeset was computed (FileVersion.View). Otherwise it
// refuses with a protocol Conflict error whose data.reason is
// protocol.ReasonFileChanged or protocol.ReasonViewChanged, and writes
// nothing.
type Editor interface {
	// PrepareRevert plans the restoring of each file of e to its Old
	// side (removing it when Old is nil), as git checkout writes it, or
	// for a range only the hunks that intersect it; with e.Index the
	// index entries go back to HEAD as well. It reads what each path
	// holds and checks every target against the versions e names;
	// nothing is written. The plan's Pending undo is what the revert
	// will replace and leave, the index entries included.
	PrepareRevert(ctx context.Context, e Edit) (PreparedRevert, error)
	// ApplyRevert carries out a revert PrepareRevert planned, as one
	// unit: each file is written only if it still holds what was read
	// for the plan, checked right before its rename; one that changed is
	// left alone and named in a ReasonFileChanged error. It returns what
	// it replaced (the index entries included); when a write fails or a
	// file is left alone it returns the error together with an Undo of
	// what was done.
	ApplyRevert(ctx context.Context, p PreparedRevert) (*Undo, error)
	// Stage adds the files of e, or only the lines of e.Range, to the
	// index. It returns the undo of the index entries it changed (Op
	// "stage"), nil when it changed none.
	Stage(ctx context.Context, e Edit) (*Undo, error)
	// Unstage resets the files' index entries to HEAD, or only the staged
	// lines of e.Range (numbered as in the staged version), and returns
	// the undo of the entries it changed (Op "unstage").
	Unstage(ctx context.Context, e Edit) (*Undo, error)
	// Commit commits what is staged, whose view (e's files) must be
	// current; or, when nothing is, exactly what was shown: each path of
	// e.Shown (else of e's files as published) at its blob id, or absent,
	// refusing with reason protocol.ReasonFileChanged, naming them, when a
	// shown file changed or a change not shown appeared since. An empty
	// message is replaced by ops.CommitMessage of exactly what the commit
	// records. It returns the commit id and the message used.
	Commit(ctx context.Context, e Edit, message string) (id, used string, err error)
	// Undo puts back what a revert replaced (bytes, modes and the index
	// entries it changed), refusing when they changed since.
	Undo(ctx context.Context, u *Undo) error
	// UndoCurrent reports whether the files are still as the revert left
	// them; once they are not, putting back the old content would lose a
	// change.
	UndoCurrent(u *Undo) bool
}

// The vocabulary of an operation is package ops's; these names keep it
// where the session's callers have always found it.
type (
	FileVersion = ops.FileVersion
	Edit        = ops.Edit
	EditFile    = ops.EditFile
	CommitEntry = ops.CommitEntry
	Undo        = ops.Undo
	SavedFile   = ops.SavedFile
)

// PreparedRevert is a revert an Editor planned and has not written. The
// session makes its Pending undo durable before it hands the plan back to
// ApplyRevert, so a revert killed part-way can still be undone.
type PreparedRevert interface {
	Pending() *Undo
}

// Operation ids.
const (
	OpRevert      = "revert"
	OpStage       = "stage"
	OpUnstage     = "unstage"
	OpCommit      = "commit"
	OpUndo        = "undo"
	OpDismissUndo = "dismissUndo"
)

// MetaUndoID is the optional _meta key of an undo or dismissUndo
// invocation naming the revert (by the id its result gave) to put back or
// forget; without it the newest one that can be undone is meant.
const MetaUndoID = "undoId"

// opState is an operation's status as last reported.
type opState struct {
	status string
	err    *protocol.ErrorInfo
}

// operations lists the operations the changeset offers now. Every one of
// them writes, so all are disabled while a turn runs. The confirmations
// of revert and commit are computed from the files the changeset holds
// now: they name what the operation deletes or commits.
func (cs *csChannel) operations(s *Session) []protocol.ChangesetOperation {
	if !s.editable() {
		return nil
	}
	confirm := func(text string) json.RawMessage { b, _ := json.Marshal(text); return b }
	ops := []protocol.ChangesetOperation{{
		ID: OpRevert, Label: "Revert", Icon: "discard", Group: "file",
		Description:  "Restore the file, or the selected lines, to the changeset's original version",
		Scopes:       []string{protocol.ScopeResource, protocol.ScopeRange},
		Confirmation: confirm(cs.revertConfirmation()),
	}}
	if cs.rewindable() {
		ops[0].Description = "Restore the file, the selected lines, or every file of the changeset (rewind) to its version before the turn"
		ops[0].Scopes = []string{protocol.ScopeResource, protocol.ScopeRange, protocol.ScopeChangeset}
		ops[0].Confirmation = confirm(cs.rewindConfirmation())
	}
	if cs.ref.Kind == protocol.KindUncommitted {
		ops = append(ops,
			protocol.ChangesetOperation{ID: OpStage, Label: "Stage", Icon: "add", Group: "index", Description: "Add the file, or the selected lines, to the index", Scopes: []string{protocol.ScopeResource, protocol.ScopeRange}},
			protocol.ChangesetOperation{ID: OpUnstage, Label: "Unstage", Icon: "remove", Group: "index", Description: "Reset the file's index entry, or the selected lines, to HEAD", Scopes: []string{protocol.ScopeResource, protocol.ScopeRange}},
			protocol.ChangesetOperation{ID: OpCommit, Label: "Commit", Icon: "check", Group: "commit", Description: "Commit what is staged, or every change when nothing is", Scopes: []string{protocol.ScopeChangeset}, Confirmation: confirm(cs.commitConfirmation())},
		)
	}
	ops = append(ops, cs.authorOperations()...)
	if u := cs.offeredUndo(); u != nil {
		desc := "Put back exactly what the last " + u.edit.OpName() + " replaced"
		if u.summary != "" {
			desc += " (" + u.summary + ")"
		}
		if n := cs.undoable(); n > 1 {
			desc += fmt.Sprintf("; %d operations can be undone, newest first", n)
		}
		ops = append(ops, protocol.ChangesetOperation{ID: OpUndo, Label: undoLabel(u.edit), Icon: "history", Group: "file", Description: desc, Scopes: []string{protocol.ScopeChangeset}})
	}
	if n := len(cs.undos); n > 0 {
		last := cs.undos[n-1].edit.OpName()
		ops = append(ops, protocol.ChangesetOperation{ID: OpDismissUndo, Label: "Forget Undo", Icon: "close", Group: "file", Description: "Forget the newest operation kept for undo (a " + last + "), and what it replaced", Scopes: []string{protocol.ScopeChangeset},
			Confirmation: confirm("Forget what the last " + last + " replaced? It can no longer be undone.")})
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

// undoable counts the reverts that can be undone now.
func (cs *csChannel) undoable() int {
	n := 0
	for _, r := range cs.undos {
		if r.current {
			n++
		}
	}
	return n
}

// maxNamed bounds the file names a confirmation lists.
const maxNamed = 10

// nameList is "a, b and c", or the first maxNamed of them and how many
// more.
func nameList(names []string) string {
	if len(names) > maxNamed {
		return strings.Join(names[:maxNamed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNamed)
	}
	if len(names) > 1 {
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return strings.Join(names, "")
}

func files(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}

// namedPaths is what a confirmation says of a set of the changeset's
// files: how many there are, and the first maxNamed of their paths in
// order (all of them when there are no more).
type namedPaths struct {
	first []string
	n     int
}

// String is nameList of the paths: "a, b and c", or the first maxNamed
// and how many more.
func (np namedPaths) String() string {
	if np.n > len(np.first) {
		return strings.Join(np.first, ", ") + fmt.Sprintf(" and %d more", np.n-len(np.first))
	}
	return nameList(np.first)
}

// sortedPaths names the changeset's files that keep says yes to. Only the
// first maxNamed paths are kept, found in one pass: the operations'
// confirmations are made again after every change, and sorting the paths
// of a changeset of tens of thousands of files each time cost more than
// the change itself.
func (cs *csChannel) sortedPaths(keep func(fileOrigin) bool) namedPaths {
	var np namedPaths
	for _, o := range cs.origin {
		if !keep(o) {
			continue
		}
		np.n++
		np.first = insertFirst(np.first, o.path(), maxNamed)
	}
	return np
}

// insertFirst inserts p into first, sorted and at most k long, if it is
// among the k least.
func insertFirst(first []string, p string, k int) []string {
	if len(first) == k && p >= first[k-1] {
		return first
	}
	i, _ := slices.BinarySearch(first, p)
	if len(first) < k {
		first = append(first, "")
	}
	copy(first[i+1:], first[i:len(first)-1])
	first[i] = p
	return first
}

// revertConfirmation says what a revert does, and names the files of the
// changeset a revert would delete: those its original version does not
// have (created since, untracked or added).
func (cs *csChannel) revertConfirmation() string {
	var text string
	switch cs.ref.Kind {
	case protocol.KindUncommitted:
		text = "Discard these uncommitted changes? Each file returns to its committed version."
	case protocol.KindBranch:
		text = "Discard these changes? Each file returns to its version at the branch point."
	case protocol.KindSession:
		text = "Discard this session's changes? Each file returns to its version when the session started."
	default:
		text = "Restore these files to this changeset's original version? Later changes to them are discarded too."
	}
	created := cs.sortedPaths(func(o fileOrigin) bool { return o.from == nil })
	if created.n > 0 {
		text += fmt.Sprintf(" %s of this changeset did not exist in that version and would be deleted: %s.", capital(files(created.n)), created)
	}
	return text + " A revert can be undone with Undo Revert, also after a restart."
}

// commitConfirmation names what a commit records: the staged files when
// anything is staged, else every file of the changeset.
func (cs *csChannel) commitConfirmation() string {
	staged := cs.sortedPaths(func(o fileOrigin) bool {
		return (o.to != nil && o.to.Staged) || (o.from != nil && o.from.Staged)
	})
	if staged.n > 0 {
		text := fmt.Sprintf("Commit the %s staged: %s?", files(staged.n), staged)
		rest := cs.sortedPaths(func(o fileOrigin) bool {
			return !((o.to != nil && o.to.Staged) || (o.from != nil && o.from.Staged))
		})
		if rest.n > 0 {
			text += fmt.Sprintf(" Not committed (not staged): %s.", rest)
		}
		return text
	}
	all := cs.sortedPaths(func(fileOrigin) bool { return true })
	if all.n == 0 {
		return "Nothing is staged and nothing changed: there is nothing to commit."
	}
	return fmt.Sprintf("Nothing is staged: commit every change, %s: %s?", files(all.n), all)
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
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
	b, _ := json.Marshal(cs.v.State.Operations)
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
	// view is the state of HEAD and the index the client was shown (its
	// _meta.view), when it named one.
	view string
	// byAuthor: for stageAuthor and revertAuthor, whose hunks of each of
	// files they act on (byauthor.go).
	byAuthor *authorPick
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
// serialised per repository (repolock.go). An identical invocation
// already running is joined rather than run twice.
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
	// Joined or started on the actor, in the order invocations reached
	// it: a later request of the same client may go ahead.
	accepted(ctx)
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
	if cs != nil && cs.loaded && (!cs.active || cs.ch.Subscribers() == 0) {
		// Not watched, or watched only for a while after the last
		// subscriber left (Options.IdleLinger): nobody is shown it.
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: no one is subscribed to %s, so no one is shown its current files; subscribe to it first", p.Channel)
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
	for i := range cs.v.State.Operations {
		offered = append(offered, cs.v.State.Operations[i].ID)
		if cs.v.State.Operations[i].ID == p.OperationID {
			op = &cs.v.State.Operations[i]
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
	if t.op == OpStageAuthor || t.op == OpRevertAuthor {
		if err := cs.pickAuthor(&t); err != nil {
			return nil, err
		}
	}
	if t.op == OpStageTurn {
		if err := cs.pickTurn(&t); err != nil {
			return nil, err
		}
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
	if t.scope == protocol.ScopeChangeset && t.op == OpRevert {
		files, err := cs.rewindTargets(s)
		if err != nil {
			return nil, err
		}
		t.files = files
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
	}
	sh, err := view.ParseShown(p.Meta)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: %v", err)
	}
	if _, ok := p.Meta[MetaExpectedNonce]; t.scope == protocol.ScopeRange && sh == nil && !ok {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: a range operation must name the version its lines were picked on: _meta.%s (file id -> the content nonces shown) or _meta.%s; nothing was changed", MetaVersions, MetaExpectedNonce)
	}
	if t.scope != protocol.ScopeChangeset {
		if _, ok := p.Meta[MetaExpectedNonce]; ok && len(t.files) != 1 {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: _meta.expectedNonce names one file's content, and %s is a directory of %s", p.Target.Resource, files(len(t.files)))
		}
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
	var undo *undoRecord
	switch t.op {
	case OpUndo, OpDismissUndo:
		var err error
		if undo, err = cs.pickUndo(t.op, p.Meta); err != nil {
			return nil, err
		}
		ws = undo.ws
		if ed, _ = s.workspaces[ws].ws.(Editor); ed == nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: %s cannot be written", s.workspaces[ws].dir)
		}
	case OpCommit:
		// The view the commit acts on: every file of the changeset there.
		for _, o := range cs.origin {
			if o.ws == ws {
				t.files = append(t.files, o)
			}
		}
	}
	if err := cs.bindShown(s, &t, sh, ws); err != nil {
		return nil, err
	}
	kind := cs.ref.Kind
	uri := cs.uri
	// Invocations on one repository, from any session, queue on its lock
	// in the order they reach their actors; only identical ones (joined
	// in Invoke) are not run twice. The place is taken here, before
	// anything is published, and the work always runs to release it.
	turn := s.m.repoLocks.enqueue(repoKey(s.workspaces[ws]))
	if cs.opRunning == nil {
		cs.opRunning = map[string]int{}
	}
	if cs.opRunning[op.ID] == 0 {
		cs.setOpStatus(s, op.ID, protocol.OpRunning, nil)
	}
	cs.opRunning[op.ID]++
	ctx := s.ctx
	return func() (*protocol.InvokeChangesetOperationResult, error) {
		res, newUndo, err := func() (*protocol.InvokeChangesetOperationResult, *undoRecord, error) {
			turn.wait()
			defer turn.release()
			res, newUndo, err := runOp(ctx, ed, kind, t, undo, s, uri, ws)
			if err == nil && (t.op == OpUndo || t.op == OpDismissUndo) {
				s.forgetUndos([]string{undo.id})
			}
			return res, newUndo, err
		}()
		done := make(chan struct{})
		if !s.do(func() {
			defer close(done)
			s.finishOp(cs, t, newUndo, undo, err)
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

// finishOp publishes an operation's outcome on the actor. A revert that
// failed part-way still leaves its undo: the error says so.
func (s *Session) finishOp(cs *csChannel, t opTarget, newUndo, used *undoRecord, err error) {
	cs.opRunning[t.op]--
	if err != nil {
		cs.setOpStatus(s, t.op, protocol.OpError, &protocol.ErrorInfo{ErrorType: errorType(err), Message: err.Error()})
	} else if cs.opRunning[t.op] == 0 {
		cs.setOpStatus(s, t.op, protocol.OpIdle, nil)
	}
	if newUndo != nil {
		cs.undos = append(cs.undos, newUndo)
		var dropped []string
		cs.undos, dropped = boundUndos(cs.undos, s.m.opts.Now())
		s.forgetUndos(dropped)
	}
	if err == nil && used != nil {
		cs.dropUndo(used)
	}
	cs.syncOperations(s)
	// The file watcher reports the writes too; asking now makes the
	// result visible without waiting for it. A computation still running
	// may have read the tree half before the operation: it is redone.
	ws := 0
	if len(t.files) > 0 {
		ws = t.files[0].ws
	}
	if used != nil {
		ws = used.ws
	}
	for _, c := range s.changesets {
		if c.active {
			c.opGen++
			c.changed(s, ws, nil, true)
		}
	}
}

// pickUndo finds the revert an undo or dismissUndo invocation names
// (_meta.undoId), or else the newest one: for undo the newest that can be
// undone now.
func (cs *csChannel) pickUndo(op string, meta protocol.Object) (*undoRecord, error) {
	if id, ok := meta[MetaUndoID].(string); ok {
		r := cs.undoByID(id)
		if r == nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: no revert %q is kept for undo on this changeset", id)
		}
		if op == OpUndo && !r.current {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: revert %q cannot be undone: its files changed since, and putting the old bytes back would lose that change", id)
		}
		return r, nil
	}
	if op == OpDismissUndo {
		if len(cs.undos) == 0 {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: no revert is kept for undo")
		}
		return cs.undos[len(cs.undos)-1], nil
	}
	if r := cs.offeredUndo(); r != nil {
		return r, nil
	}
	return nil, protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: there is no revert to undo")
}

// pendUndo makes a revert's undo durable before the revert's first write,
// as pending: a crash during the writes still leaves it to undo. Nothing
// is kept for a revert that changes nothing. When it cannot be stored the
// revert is refused, since it could not be undone.
func (s *Session) pendUndo(uri string, ws int, u *Undo) (*undoRecord, error) {
	summary, changed := undoSummary(u)
	if !changed {
		return nil, nil
	}
	now := s.m.opts.Now()
	r := &undoRecord{id: newUndoID(now), ws: ws, at: now, summary: summary, current: true,
		edit: &Undo{Files: u.Files, After: u.After, Pending: true}}
	if us := s.m.undoStore(); us != nil {
		if err := us.PutUndo(s.id, r.record(uri)); err != nil {
			return nil, stateErr(fmt.Errorf("cannot store what the revert would replace (%w), so it could not be undone; nothing was changed", err))
		}
	}
	return r, nil
}

// settleUndo records what a revert left, once it is over: the pending
// record becomes the revert's undo, or is forgotten when nothing changed
// after all. It stays pending when what the revert left is not known. An
// Editor whose plan had no pending undo gets its undo stored only now. It returns
// the undo, if any, and the error of storing it.
func (s *Session) settleUndo(uri string, ws int, r *undoRecord, u *Undo) (*undoRecord, error) {
	us := s.m.undoStore()
	summary, changed := undoSummary(u)
	switch {
	case r == nil && !changed:
		return nil, nil
	case r == nil:
		now := s.m.opts.Now()
		r = &undoRecord{id: newUndoID(now), ws: ws, at: now, current: true}
	case u == nil || len(u.After) == 0:
		return r, nil
	case !changed:
		if us != nil {
			if err := us.DeleteUndo(s.id, r.id); err != nil {
				s.log.Error("cannot forget the undo of a revert that changed nothing", "err", err)
			}
		}
		return nil, nil
	}
	r.summary, r.edit = summary, &Undo{Files: u.Files, After: u.After, Op: u.Op}
	if us == nil {
		return r, nil
	}
	err := us.PutUndo(s.id, r.record(uri))
	if err != nil {
		s.log.Error("cannot store what a revert replaced", "err", err)
	}
	return r, err
}

// undoResult says in the result, or in the error of a revert that failed
// part-way, that the revert can be undone.
func undoResult(r *undoRecord, storeErr, opErr error) (*protocol.InvokeChangesetOperationResult, error) {
	kept := " " + undoLabel(r.edit) + " puts back what it replaced (undo id " + r.id + ")."
	if storeErr != nil {
		kept = " " + undoLabel(r.edit) + " puts back what it replaced (undo id " + r.id + "); what it left could not be stored (" + storeErr.Error() + "), so after a restart the undo is offered while each file is as before the " + r.edit.OpName() + " or as it left it."
	}
	if opErr != nil {
		var pe *protocol.Error
		code, data := int64(protocol.CodeInternalError), any(nil)
		if errors.As(opErr, &pe) {
			code, data = pe.Code, pe.Data
		}
		reason, _ := data.(map[string]any)
		d := map[string]any{MetaUndoID: r.id}
		for k, v := range reason {
			d[k] = v
		}
		return nil, &protocol.Error{Code: code, Message: opErr.Error() + "; " + r.summary + " before that." + kept, Data: d}
	}
	return message(r.summary + "." + kept), nil
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
	for _, f := range cs.v.State.Files {
		if f.ID == resource || (f.Edit.Before != nil && f.Edit.Before.URI == resource) || (f.Edit.After != nil && f.Edit.After.URI == resource) {
			if o, ok := cs.origin[f.ID]; ok {
				return []fileOrigin{o}, nil
			}
		}
	}
	prefix := strings.TrimSuffix(resource, "/") + "/"
	var files []fileOrigin
	for _, f := range cs.v.State.Files {
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

// runOp has the Editor do an operation's work. It runs off the actor,
// holding the repository's lock. A revert returns its undo record, also
// with an error when it failed part-way.
func runOp(ctx context.Context, ed Editor, kind string, t opTarget, undo *undoRecord, s *Session, uri string, ws int) (*protocol.InvokeChangesetOperationResult, *undoRecord, error) {
	if t.byAuthor != nil {
		return runByAuthor(ctx, ed, kind, t, s, uri, ws)
	}
	e := Edit{Range: t.rng, Side: t.side, View: t.view}
	for _, f := range t.files {
		ef := EditFile{Old: f.from, New: f.to}
		if t.view != "" {
			ef.Old, ef.New = withView(ef.Old, t.view), withView(ef.New, t.view)
		}
		e.Files = append(e.Files, ef)
	}
	switch t.op {
	case OpRevert:
		e.Index = kind == protocol.KindUncommitted
		if t.scope == protocol.ScopeChangeset {
			if err := checkRewind(ctx, ed, e); err != nil {
				return nil, nil, err
			}
		}
		rec, u, err := s.revert(ctx, ed, e, uri, ws)
		rec, storeErr := s.settleUndo(uri, ws, rec, u)
		if rec != nil {
			res, err := undoResult(rec, storeErr, err)
			return res, rec, err
		}
		if err != nil {
			return nil, nil, err
		}
		return message("Nothing to revert: the files already have their original content"), nil, nil
	case OpStage, OpUnstage:
		do := ed.Stage
		if t.op == OpUnstage {
			do = ed.Unstage
		}
		u, err := do(ctx, e)
		if err != nil {
			return nil, nil, err
		}
		return s.indexUndo(uri, ws, u)
	case OpCommit:
		id, msg, err := ed.Commit(ctx, e, metaMessage(t.meta))
		if err != nil {
			return nil, nil, err
		}
		subject, _, _ := strings.Cut(msg, "\n")
		return message(fmt.Sprintf("Committed %.7s: %s", id, subject)), nil, nil
	case OpUndo:
		if err := ed.Undo(ctx, undo.edit); err != nil {
			return nil, nil, err
		}
		return message("Restored what the " + undo.edit.OpName() + " replaced (" + undo.summary + ")"), nil, nil
	case OpDismissUndo:
		return message("Forgot the undo of: " + undo.summary), nil, nil
	}
	return nil, nil, protocol.Errorf(protocol.CodeInvalidParams, "operation %q is not implemented", t.op)
}

// revert has ed plan the revert, makes its pending undo durable, and only
// then has ed carry it out: a revert that is killed part-way leaves a
// pending undo that puts back everything it replaced. It returns the
// pending record (nil when the plan changes nothing) and what the revert
// did.
func (s *Session) revert(ctx context.Context, ed Editor, e Edit, uri string, ws int) (*undoRecord, *Undo, error) {
	p, err := ed.PrepareRevert(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	rec, err := s.pendUndo(uri, ws, p.Pending())
	if err != nil {
		return nil, nil, err
	}
	u, err := ed.ApplyRevert(ctx, p)
	return rec, u, err
}

// indexUndo keeps the undo of a stage or unstage, once it is over, and
// says in the result that it can be undone; a stage that changed no
// index entry has none and no result.
func (s *Session) indexUndo(uri string, ws int, u *Undo) (*protocol.InvokeChangesetOperationResult, *undoRecord, error) {
	rec, storeErr := s.settleUndo(uri, ws, nil, u)
	if rec == nil {
		return nil, nil, nil
	}
	res, err := undoResult(rec, storeErr, nil)
	return res, rec, err
}

// undoLabel is the label of the operation that undoes u.
func undoLabel(u *Undo) string {
	return "Undo " + capital(u.OpName())
}

// undoSummary describes what an operation with the undo u changed
// ("Reverted 2 files (deleted notes.txt)", "Staged a.txt") and reports
// whether it changed anything.
func undoSummary(u *Undo) (string, bool) {
	if u == nil {
		return "", false
	}
	if u.IndexOnly() {
		var changed []string
		for i, b := range u.Files {
			if i < len(u.After) && b.Index != nil && u.After[i].Index != nil && !b.Index.Same(*u.After[i].Index) {
				changed = append(changed, b.Path)
			}
		}
		if len(changed) == 0 {
			return "", false
		}
		verb := "Staged "
		if u.Op == OpUnstage {
			verb = "Unstaged "
		}
		return verb + nameList(changed), true
	}
	var changed, deleted []string
	for i, b := range u.Files {
		if i >= len(u.After) {
			break
		}
		a := u.After[i]
		indexSame := a.Index == nil || b.Index == nil || a.Index.Same(*b.Index)
		if a.Exists == b.Exists && a.Mode == b.Mode && bytes.Equal(a.Content, b.Content) && indexSame {
			continue
		}
		changed = append(changed, b.Path)
		if b.Exists && !a.Exists {
			deleted = append(deleted, b.Path)
		}
	}
	if len(changed) == 0 {
		return "", false
	}
	text := "Reverted " + files(len(changed))
	if len(deleted) > 0 {
		text += " (deleted " + nameList(deleted) + ")"
	}
	return text, true
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

// contains reports whether path lies inside one of the session's working
// directories, both lexically and once symbolic links in it are resolved
// (the deepest existing ancestor is resolved for a path that does not
// exist yet).
func (s *Session) contains(path string) bool {
	return slices.ContainsFunc(s.dirs, func(d string) bool { return confine.Under(d, path) })
}
