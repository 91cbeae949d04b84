package session

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/uritemplate"
)

// Editor is the write side of a workspace, used by changeset operations.
// Paths are slash-separated and relative to the workspace root;
// implementations refuse paths that leave the root, including through
// symbolic links, with a protocol PermissionDenied error.
type Editor interface {
	// ReadWorktree returns a file's content and git mode; an error
	// wrapping fs.ErrNotExist when it is absent.
	ReadWorktree(path string) ([]byte, uint32, error)
	WriteWorktree(path string, content []byte, mode uint32) error
	RemoveWorktree(path string) error
	StagePath(ctx context.Context, path string) error
	StageContent(ctx context.Context, path string, content []byte, mode uint32) error
	UnstagePath(ctx context.Context, path string) error
	// IndexContent returns the staged content of a path; ok is false when
	// the index has no entry.
	IndexContent(path string) (content []byte, mode uint32, ok bool, err error)
	// HeadContent returns HEAD's content of a path.
	HeadContent(path string) (content []byte, mode uint32, ok bool, err error)
	HasStaged(ctx context.Context) (bool, error)
	StageAll(ctx context.Context) error
	// Commit commits what is staged and returns the commit id.
	Commit(ctx context.Context, message string) (string, error)
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

// undoRecord is what the last revert replaced, to put it back.
type undoRecord struct {
	ws    int
	files []savedFile // as they were before the revert
	after []savedFile // as the revert left them
}

type savedFile struct {
	path    string
	exists  bool
	content []byte
	mode    uint32
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
	defer m.inflight.Done()
	key := flightKey(p)
	type start struct {
		f   *flight
		own bool
		run func() (*protocol.InvokeChangesetOperationResult, error)
	}
	st, err := call(ctx, s, func() (start, error) {
		if f := s.flights[key]; f != nil {
			return start{f: f}, nil
		}
		run, err := s.prepareOp(p)
		if err != nil {
			return start{}, err
		}
		f := &flight{done: make(chan struct{})}
		if s.flights == nil {
			s.flights = map[string]*flight{}
		}
		s.flights[key] = f
		return start{f: f, own: true, run: run}, nil
	})
	if err != nil {
		return nil, err
	}
	if st.own {
		res, err := st.run()
		st.f.res, st.f.err = res, err
		close(st.f.done)
		s.do(func() { delete(s.flights, key) })
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		m.opts.Metrics.Operation(p.OperationID, outcome)
	}
	select {
	case <-st.f.done:
		return st.f.res, st.f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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
	if path, err := pathFromFileURI(resource); err == nil && !s.contains(path) {
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

// runOp does an operation's work. It runs off the actor, holding the
// working tree's lock.
func runOp(ctx context.Context, ed Editor, kind string, t opTarget, undo *undoRecord, s *Session) (*protocol.InvokeChangesetOperationResult, *undoRecord, error) {
	switch t.op {
	case OpRevert:
		u, err := revert(ctx, ed, kind, t, s)
		if err != nil {
			return nil, nil, err
		}
		return message(fmt.Sprintf("Reverted %d file(s)", len(t.files))), u, nil
	case OpStage:
		return nil, nil, stage(ctx, ed, t, s)
	case OpUnstage:
		return nil, nil, unstage(ctx, ed, t)
	case OpCommit:
		id, subject, err := commit(ctx, ed, t, s)
		if err != nil {
			return nil, nil, err
		}
		return message(fmt.Sprintf("Committed %.7s: %s", id, subject)), nil, nil
	case OpUndo:
		if err := undoRevert(ed, undo); err != nil {
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

// readBlob reads a side's stored content through the session.
func (s *Session) blob(ctx context.Context, sd *Side) ([]byte, error) {
	if sd.Mode == changeset.ModeGitlink {
		return nil, errors.New("submodules are not rewritten by operations")
	}
	return s.ReadBlob(ctx, sd.OID)
}

// save reads a path's current state for undo.
func save(ed Editor, path string) (savedFile, error) {
	b, mode, err := ed.ReadWorktree(path)
	if errors.Is(err, fs.ErrNotExist) {
		return savedFile{path: path}, nil
	}
	if err != nil {
		return savedFile{}, err
	}
	return savedFile{path: path, exists: true, content: b, mode: mode}, nil
}

func restore(ed Editor, f savedFile) error {
	if !f.exists {
		err := ed.RemoveWorktree(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return ed.WriteWorktree(f.path, f.content, f.mode)
}

// revert restores each target file to the changeset's before side, or for
// a range only the hunks that intersect it. For the uncommitted changeset
// the index entries go back to HEAD as well. It returns what it replaced.
func revert(ctx context.Context, ed Editor, kind string, t opTarget, s *Session) (*undoRecord, error) {
	u := &undoRecord{ws: t.files[0].ws}
	var paths []string
	for _, f := range t.files {
		for _, p := range []string{f.path(), f.old()} {
			if p != "" && !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	for _, p := range paths {
		sf, err := save(ed, p)
		if err != nil {
			return nil, err
		}
		u.files = append(u.files, sf)
	}
	for _, f := range t.files {
		if t.scope == protocol.ScopeRange {
			if err := revertRange(ctx, ed, t, f, s); err != nil {
				return nil, err
			}
			continue
		}
		if kind == protocol.KindUncommitted {
			if err := eachPath(f, func(p string) error { return ed.UnstagePath(ctx, p) }); err != nil {
				return nil, err
			}
		}
		if f.to != nil && (f.from == nil || f.from.Path != f.to.Path) {
			if err := ed.RemoveWorktree(f.to.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		if f.from != nil {
			b, err := s.blob(ctx, f.from)
			if err != nil {
				return nil, err
			}
			if err := ed.WriteWorktree(f.from.Path, b, f.from.Mode); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range paths {
		sf, err := save(ed, p)
		if err != nil {
			return nil, err
		}
		u.after = append(u.after, sf)
	}
	return u, nil
}

// selectHunks splits hunks into those intersecting r (0-based lines on the
// given side) and the rest.
func selectHunks(hunks []changeset.Hunk, r protocol.TextRange, side string) (in, out []changeset.Hunk) {
	for _, h := range hunks {
		start, n := h.NewStart, h.NewLines
		if side == "before" {
			start, n = h.OldStart, h.OldLines
		}
		// 0-based [lo, hi]; a side with no lines sits between two lines.
		lo, hi := start-1, start-1+n-1
		if n == 0 {
			lo, hi = start-1, start
		}
		if lo <= r.End.Line && hi >= r.Start.Line {
			in = append(in, h)
		} else {
			out = append(out, h)
		}
	}
	return in, out
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

// gitBlobID is the git object id of a blob with content b (SHA-1, or
// SHA-256 when like is a 64-digit id).
func gitBlobID(b []byte, like string) string {
	hdr := "blob " + strconv.Itoa(len(b)) + "\x00"
	if len(like) == 64 {
		h := sha256.New()
		h.Write([]byte(hdr))
		h.Write(b)
		return hex.EncodeToString(h.Sum(nil))
	}
	h := sha1.New()
	h.Write([]byte(hdr))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func revertRange(ctx context.Context, ed Editor, t opTarget, f fileOrigin, s *Session) error {
	if f.from == nil || f.to == nil || f.from.Path != f.to.Path {
		return protocol.Errorf(protocol.CodeInvalidParams, "a range revert needs a file modified in place; revert %s as a whole", f.path())
	}
	old, err := s.blob(ctx, f.from)
	if err != nil {
		return err
	}
	cur, mode, err := ed.ReadWorktree(f.to.Path)
	if err != nil {
		return err
	}
	// The range was picked on the version last published; lines of any
	// other version are other lines. The check is on the very bytes the
	// edit is computed from.
	if id := gitBlobID(cur, f.to.OID); id != f.to.OID {
		return protocol.Errorf(protocol.CodeConflict, "%s changed on disk since the version the range refers to was published (%.12s, now %.12s); nothing was reverted: wait for the changeset to update and select the lines again", f.path(), f.to.OID, id)
	}
	next, err := rangeEdit(old, cur, *t.rng, t.side, false, "change of "+f.path())
	if err != nil {
		return err
	}
	return ed.WriteWorktree(f.to.Path, next, mode)
}

// rangeEdit diffs from against to and returns from with either only the
// hunks that intersect r applied (keepSelected) or all the others: the
// first stages a range, the second reverts one. what names the change for
// the error when no hunk intersects.
func rangeEdit(from, to []byte, r protocol.TextRange, side string, keepSelected bool, what string) ([]byte, error) {
	d := changeset.Compare(&changeset.Side{Path: "f", Content: from}, &changeset.Side{Path: "f", Content: to}, changeset.Options{})
	in, out := selectHunks(d.Hunks, r, side)
	if len(in) == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "no %s intersects lines %d-%d", what, r.Start.Line, r.End.Line)
	}
	if keepSelected {
		return changeset.Apply(from, in)
	}
	return changeset.Apply(from, out)
}

// eachPath calls fn for a file's old path (renames) and its path.
func eachPath(f fileOrigin, fn func(string) error) error {
	for _, p := range []string{f.old(), f.path()} {
		if p == "" {
			continue
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

func stage(ctx context.Context, ed Editor, t opTarget, s *Session) error {
	for _, f := range t.files {
		if t.scope != protocol.ScopeRange {
			if err := eachPath(f, func(p string) error { return ed.StagePath(ctx, p) }); err != nil {
				return err
			}
			continue
		}
		idx, _, _, err := ed.IndexContent(f.path())
		if err != nil {
			return err
		}
		cur, mode, err := ed.ReadWorktree(f.path())
		if err != nil {
			return err
		}
		next, err := rangeEdit(idx, cur, *t.rng, "after", true, "unstaged change of "+f.path())
		if err != nil {
			return err
		}
		if err := ed.StageContent(ctx, f.path(), next, mode); err != nil {
			return err
		}
	}
	return nil
}

// unstage resets index entries to HEAD; for a range, the lines are those
// of the staged version.
func unstage(ctx context.Context, ed Editor, t opTarget) error {
	for _, f := range t.files {
		if t.scope != protocol.ScopeRange {
			if err := eachPath(f, func(p string) error { return ed.UnstagePath(ctx, p) }); err != nil {
				return err
			}
			continue
		}
		head, _, _, err := ed.HeadContent(f.path())
		if err != nil {
			return err
		}
		idx, mode, ok, err := ed.IndexContent(f.path())
		if err != nil {
			return err
		}
		if !ok {
			return protocol.Errorf(protocol.CodeInvalidParams, "%s has nothing staged", f.path())
		}
		next, err := rangeEdit(head, idx, *t.rng, "after", false, "staged change of "+f.path()+" (lines of the staged version)")
		if err != nil {
			return err
		}
		if err := ed.StageContent(ctx, f.path(), next, mode); err != nil {
			return err
		}
	}
	return nil
}

// commit commits what is staged, or everything when nothing is. The
// message comes from the request's _meta ("message", or
// "changesetd.message") or is built from the changeset's files.
func commit(ctx context.Context, ed Editor, t opTarget, s *Session) (id, subject string, err error) {
	msg := metaMessage(t.meta)
	staged, err := ed.HasStaged(ctx)
	if err != nil {
		return "", "", err
	}
	if !staged {
		if err := ed.StageAll(ctx); err != nil {
			return "", "", err
		}
	}
	if msg == "" {
		msg = s.commitMessage()
	}
	id, err = ed.Commit(ctx, msg)
	if err != nil {
		return "", "", err
	}
	subject, _, _ = strings.Cut(msg, "\n")
	return id, subject, nil
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
	files, _ := call(context.Background(), s, func() ([]protocol.ChangesetFile, error) {
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
		op, _ := f.Meta["changesetd"].(map[string]any)["operation"].(string)
		name := f.ID
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		lines = append(lines, fmt.Sprintf("- %s %s (+%d -%d)", op, name, a, d))
	}
	return fmt.Sprintf("Update %d file(s) (+%d -%d)\n\n%s\n", len(files), add, del, strings.Join(lines, "\n"))
}

// undoRevert puts back what a revert replaced, if nothing changed since.
func undoRevert(ed Editor, u *undoRecord) error {
	for _, want := range u.after {
		got, err := save(ed, want.path)
		if err != nil {
			return err
		}
		if got.exists != want.exists || !bytes.Equal(got.content, want.content) || got.mode != want.mode {
			return protocol.Errorf(protocol.CodeInvalidParams, "%s changed since the revert; undo would lose that change", want.path)
		}
	}
	for _, f := range u.files {
		if err := restore(ed, f); err != nil {
			return err
		}
	}
	return nil
}

// undoStillValid reports whether the files are as the revert left them.
func undoStillValid(ed Editor, u *undoRecord) bool {
	for _, want := range u.after {
		got, err := save(ed, want.path)
		if err != nil || got.exists != want.exists || !bytes.Equal(got.content, want.content) || got.mode != want.mode {
			return false
		}
	}
	return true
}

// contains reports whether path lies inside one of the session's working
// directories, both lexically and once symbolic links in it are resolved
// (the deepest existing ancestor is resolved for a path that does not
// exist yet).
func (s *Session) contains(path string) bool {
	real := resolveExisting(path)
	for _, d := range s.dirs {
		if rel, err := filepath.Rel(d, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		if Contains(d, real) {
			return true
		}
	}
	return false
}

// resolveExisting resolves symbolic links in the deepest existing
// ancestor of path and appends the rest.
func resolveExisting(path string) string {
	rest := ""
	for p := path; ; {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
