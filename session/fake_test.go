package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/changesetd/changesetd/session/ops"
	"github.com/changesetd/changesetd/store"
	"github.com/changesetd/changesetd/uritemplate"
)

// fakeWorkspace is a working tree held in memory: HEAD, the index and the
// working files as maps of path to content. It implements Workspace and
// Editor the way the real one does as far as the actor can tell, so the
// actor's scenarios run without git, a file system or a watcher. Changes
// are reported only when the test says so (edit), the way a watcher
// reports a write.
type fakeWorkspace struct {
	root string

	mu       sync.Mutex
	head     map[string]string
	index    map[string]string
	work     map[string]string
	blobs    map[string][]byte // every content handed out, by oid
	snaps    map[string]map[string]string
	watchers map[*fakeWatcher]bool
	queries  []Query
	commits  []string // messages
	edits    []Edit   // what operations were asked to do
	closed   int

	// gate, when set, is received from at the start of Changes (the test
	// closes or feeds it), so a computation can be held in flight.
	gate    chan struct{}
	entered chan struct{} // when set, Changes sends to it once it is in
	// writeGate, likewise, holds Revert.
	writeGate    chan struct{}
	writeEntered chan struct{}
	// snapGate, likewise, holds Snapshot; snapErr, when set, is what it
	// then returns.
	snapGate chan struct{}
	snapErr  error
	// snapPanic, when set, makes Snapshot panic.
	snapPanic atomic.Bool
	// snapEntered, when set, is sent to once Snapshot is in, before
	// snapGate holds it.
	snapEntered chan struct{}
	// watchGate, likewise, holds Watch; watchEntered is sent to once it
	// is in.
	watchGate, watchEntered chan struct{}
	// plain makes it a directory without a repository (Plain).
	plain bool
	// blobReads counts ReadBlob calls.
	blobReads int
	// shown, when set, is sent the query of each list the session says
	// it published (ChangeList.Shown).
	shown chan Query
}

func (w *fakeWorkspace) Plain() bool { return w.plain }

func newFakeWorkspace(root string, head, work map[string]string) *fakeWorkspace {
	return &fakeWorkspace{
		root:     root,
		head:     maps.Clone(head),
		index:    maps.Clone(head),
		work:     maps.Clone(work),
		blobs:    map[string][]byte{},
		snaps:    map[string]map[string]string{},
		watchers: map[*fakeWatcher]bool{},
	}
}

var (
	_ Workspace = (*fakeWorkspace)(nil)
	_ Editor    = (*fakeWorkspace)(nil)
)

func (w *fakeWorkspace) Root() string { return w.root }

func (w *fakeWorkspace) Changes(ctx context.Context, q Query) (list *ChangeList, err error) {
	w.mu.Lock()
	gate, entered := w.gate, w.entered
	w.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queries = append(w.queries, q)
	if w.shown != nil {
		shown := w.shown
		defer func() {
			if list != nil {
				list.Shown = func() { shown <- q }
			}
		}()
	}
	base, cur, live := w.head, w.work, true
	if q.View == ViewTrees {
		base = w.snaps[q.From]
		if base == nil {
			return nil, fmt.Errorf("no snapshot %q", q.From)
		}
		if q.To != "" {
			cur, live = w.snaps[q.To], false
		}
	}
	paths := slices.Sorted(maps.Keys(base))
	for p := range cur {
		if _, ok := base[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out ChangeList
	for _, p := range paths {
		if q.Paths != nil && !slices.ContainsFunc(q.Paths, func(x string) bool { return x == p || strings.HasPrefix(p, x+"/") }) {
			continue
		}
		b, inBase := base[p]
		c, inCur := cur[p]
		if inBase == inCur && b == c {
			continue
		}
		fc := FileChange{Precise: true}
		var old, new *changeset.Side
		if inBase {
			fc.Old = w.sideLocked(p, b, false)
			old = &changeset.Side{Path: p, Content: []byte(b)}
		}
		if inCur {
			fc.New = w.sideLocked(p, c, live)
			new = &changeset.Side{Path: p, Content: []byte(c)}
		}
		r := changeset.Compare(old, new, changeset.Options{})
		fc.Added, fc.Removed, fc.Patch = r.Added, r.Removed, r.Patch
		out.Files = append(out.Files, fc)
	}
	return &out, nil
}

func (w *fakeWorkspace) sideLocked(path, content string, live bool) *FileVersion {
	oid := changeset.BlobOID([]byte(content))
	w.blobs[oid] = []byte(content)
	return &FileVersion{Path: path, OID: oid, Mode: 0o100644, Size: int64(len(content)), Live: live}
}

func (w *fakeWorkspace) ReadBlob(oid string) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.blobReads++
	b, ok := w.blobs[oid]
	if !ok {
		return nil, fmt.Errorf("no object %s", oid)
	}
	return b, nil
}

func (w *fakeWorkspace) BlobSize(oid string) (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.blobs[oid]
	return int64(len(b)), ok
}

type fakeWatcher struct {
	w        *fakeWorkspace
	onChange func(paths []string, all bool)
}

func (f *fakeWatcher) Mode() (string, string) { return "fake", "" }

func (f *fakeWatcher) Stop() {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	delete(f.w.watchers, f)
}

func (w *fakeWorkspace) Watch(onChange func(paths []string, all bool)) (Watch, error) {
	if w.watchEntered != nil {
		w.watchEntered <- struct{}{}
	}
	if w.watchGate != nil {
		<-w.watchGate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	f := &fakeWatcher{w: w, onChange: onChange}
	w.watchers[f] = true
	return f, nil
}

// watching returns how many watches are armed and not stopped.
// queriesMade returns the queries Changes was asked, in order.
func (w *fakeWorkspace) queriesMade() []Query {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.queries)
}

func (w *fakeWorkspace) watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watchers)
}

func (w *fakeWorkspace) Snapshot(ctx context.Context, track bool) (string, error) {
	if w.snapPanic.Load() {
		panic("snapshot")
	}
	if w.snapEntered != nil {
		select {
		case w.snapEntered <- struct{}{}:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if w.snapGate != nil {
		select {
		case <-w.snapGate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if w.snapErr != nil {
		return "", w.snapErr
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	id := fmt.Sprintf("snap-%d", len(w.snaps)+1)
	w.snaps[id] = maps.Clone(w.work)
	return id, nil
}

func (w *fakeWorkspace) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed++
	return nil
}

// edit changes a working file (content "" with del removes it) and
// reports the path to every watch, as a file-system watcher would.
func (w *fakeWorkspace) edit(path, content string, del bool) {
	w.mu.Lock()
	if del {
		delete(w.work, path)
	} else {
		w.work[path] = content
	}
	var fs []*fakeWatcher
	for f := range w.watchers {
		fs = append(fs, f)
	}
	w.mu.Unlock()
	for _, f := range fs {
		f.onChange([]string{path}, false)
	}
}

func (w *fakeWorkspace) file(path string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.work[path]
	return c, ok
}

// Editor. The work is the simplest that shows the effect: a range
// reverts or stages its whole file (the hunk arithmetic is the real
// workspace's, tested in package source). edits records every Edit.

// fakePrepared is a revert the fake planned: the Edit, carried out at
// once by ApplyRevert. It has no pending undo: the session stores the
// undo once the revert is over.
type fakePrepared struct{ e Edit }

func (fakePrepared) Pending() *Undo { return nil }

func (w *fakeWorkspace) PrepareRevert(ctx context.Context, e Edit) (PreparedRevert, error) {
	return fakePrepared{e}, nil
}

func (w *fakeWorkspace) ApplyRevert(ctx context.Context, p PreparedRevert) (*Undo, error) {
	e := p.(fakePrepared).e
	w.mu.Lock()
	gate, entered := w.writeGate, w.writeEntered
	w.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if gate != nil {
		<-gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.edits = append(w.edits, e)
	u := &Undo{}
	var paths []string
	for _, f := range e.Files {
		for _, p := range []string{f.Path(), f.OldPath()} {
			if p != "" {
				paths = append(paths, p)
				u.Files = append(u.Files, w.savedLocked(p))
			}
		}
	}
	for _, f := range e.Files {
		if e.Index {
			for _, p := range []string{f.Path(), f.OldPath()} {
				if c, ok := w.head[p]; ok {
					w.index[p] = c
				} else {
					delete(w.index, p)
				}
			}
		}
		if f.New != nil {
			delete(w.work, f.New.Path)
		}
		if f.Old != nil {
			w.work[f.Old.Path] = string(w.blobs[f.Old.OID])
		}
	}
	for _, p := range paths {
		u.After = append(u.After, w.savedLocked(p))
	}
	return u, nil
}

func (w *fakeWorkspace) savedLocked(p string) SavedFile {
	if c, ok := w.work[p]; ok {
		return SavedFile{Path: p, Exists: true, Content: []byte(c)}
	}
	return SavedFile{Path: p}
}

func (w *fakeWorkspace) UndoCurrent(u *Undo) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.currentLocked(u)
}

func (w *fakeWorkspace) currentLocked(u *Undo) bool {
	for _, want := range u.After {
		got := w.savedLocked(want.Path)
		if got.Exists != want.Exists || string(got.Content) != string(want.Content) {
			return false
		}
	}
	return true
}

func (w *fakeWorkspace) Undo(ctx context.Context, u *Undo) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.currentLocked(u) {
		return protocol.Errorf(protocol.CodeInvalidParams, "changed since the revert")
	}
	for _, f := range u.Files {
		if !f.Exists {
			delete(w.work, f.Path)
		} else {
			w.work[f.Path] = string(f.Content)
		}
	}
	return nil
}

func (w *fakeWorkspace) Stage(ctx context.Context, e Edit) (*Undo, error) {
	return nil, w.setIndex(e, false)
}

func (w *fakeWorkspace) Unstage(ctx context.Context, e Edit) (*Undo, error) {
	return nil, w.setIndex(e, true)
}

// setIndex records e and sets the index entry of each of its files to the
// file's working content, or its HEAD content for an unstage.
func (w *fakeWorkspace) setIndex(e Edit, fromHead bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.edits = append(w.edits, e)
	from := w.work
	if fromHead {
		from = w.head
	}
	for _, f := range e.Files {
		if c, ok := from[f.Path()]; ok {
			w.index[f.Path()] = c
		} else {
			delete(w.index, f.Path())
		}
	}
	return nil
}

func (w *fakeWorkspace) Commit(ctx context.Context, _ Edit, message string) (string, string, error) {
	w.mu.Lock()
	if maps.Equal(w.index, w.head) {
		w.index = maps.Clone(w.work)
	}
	w.mu.Unlock()
	if message == "" {
		var entries []CommitEntry
		w.mu.Lock()
		for p, c := range w.index {
			if h, ok := w.head[p]; !ok {
				entries = append(entries, CommitEntry{Path: p, Operation: "add", Added: strings.Count(c, "\n")})
			} else if h != c {
				entries = append(entries, CommitEntry{Path: p, Operation: "modify"})
			}
		}
		w.mu.Unlock()
		message = ops.CommitMessage(entries)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if maps.Equal(w.index, w.head) {
		return "", "", errors.New("nothing to commit")
	}
	w.head = maps.Clone(w.index)
	w.commits = append(w.commits, message)
	return fmt.Sprintf("%040d", len(w.commits)), message, nil
}

func (w *fakeWorkspace) staged(path string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.index[path]
	return c, ok
}

// client is a subscriber that keeps what it was sent and, per changeset
// channel, the state a client reducing the stream would hold.
type client struct {
	id string

	mu    sync.Mutex
	wake  chan struct{}
	envs  []protocol.ActionEnvelope
	notes []string // notification methods
	cs    map[string]protocol.ChangesetState
}

func newClient(id string) *client {
	return &client{id: id, wake: make(chan struct{}, 1), cs: map[string]protocol.ChangesetState{}}
}

func (c *client) ClientID() string { return c.id }
func (c *client) Version() string  { return "1.0.0" }

func (c *client) Send(env *Envelope) {
	c.mu.Lock()
	e := env.ActionEnvelope
	c.envs = append(c.envs, e)
	if st, ok := c.cs[e.Channel]; ok && e.RejectionReason == "" {
		next, _ := reducer.ApplyChangeset(st, e.Action.Action, reducer.Env{})
		c.cs[e.Channel] = next
	}
	c.mu.Unlock()
	c.poke()
}

func (c *client) Notify(method string, params any) {
	c.mu.Lock()
	c.notes = append(c.notes, method)
	c.mu.Unlock()
	c.poke()
}

func (c *client) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// waitLimit only keeps a broken scenario from hanging the run; no
// assertion depends on how long anything takes.
const waitLimit = 30 * time.Second

// await blocks until cond, evaluated under the client's lock, holds.
func (c *client) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	limit := time.After(waitLimit)
	for {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.wake:
		case <-limit:
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("never saw %s; received:\n%s", what, c.dumpLocked())
		}
	}
}

func (c *client) dumpLocked() string {
	var b strings.Builder
	for _, e := range c.envs {
		fmt.Fprintf(&b, "  %d %s %s %s\n", e.ServerSeq, e.Channel, e.Action.Action.ActionType(), e.RejectionReason)
	}
	return b.String()
}

// subscribe attaches c to uri and waits for the snapshot.
func (c *client) subscribe(t *testing.T, m *Manager, uri string) {
	t.Helper()
	done := make(chan error, 1)
	m.Attach(c, uri, -1, func(at Attachment, err error) {
		if err == nil {
			// A changeset snapshot comes as a ChangesetState or, once
			// encoded for sharing, as its JSON: read it as a client would.
			var st protocol.ChangesetState
			b, _ := json.Marshal(at.Snapshot.State)
			if protocol.ChannelOf(uri) == protocol.ChannelChangeset && json.Unmarshal(b, &st) == nil {
				c.mu.Lock()
				c.cs[uri] = st
				c.mu.Unlock()
			}
		}
		done <- err
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("subscribe %s: no answer", uri)
	}
}

// state is the changeset state the client holds. c.mu must be held.
func (c *client) stateLocked(uri string) protocol.ChangesetState { return c.cs[uri] }

// awaitFiles waits until the changeset is ready with exactly these files
// (by path under the workspace root) and returns its state.
func (c *client) awaitFiles(t *testing.T, uri, root string, paths ...string) protocol.ChangesetState {
	t.Helper()
	var st protocol.ChangesetState
	c.await(t, fmt.Sprintf("%s ready with %v", uri, paths), func() bool {
		st = c.stateLocked(uri).Clone()
		return st.Status == protocol.StatusReady && slices.Equal(filePaths(st, root), paths)
	})
	return st
}

func filePaths(st protocol.ChangesetState, root string) []string {
	var out []string
	for _, f := range st.Files {
		out = append(out, strings.TrimPrefix(f.ID, FileURI(root)+"/"))
	}
	slices.Sort(out)
	return out
}

func fileByPath(t *testing.T, st protocol.ChangesetState, root, path string) protocol.ChangesetFile {
	t.Helper()
	for _, f := range st.Files {
		if f.ID == FileURI(root)+"/"+path {
			return f
		}
	}
	t.Fatalf("no file %s in %v", path, filePaths(st, root))
	return protocol.ChangesetFile{}
}

// sent returns the action types the client received on uri after the
// first n envelopes.
func (c *client) sent(uri string, n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.envs[min(n, len(c.envs)):] {
		if e.Channel == uri {
			out = append(out, e.Action.Action.ActionType())
		}
	}
	return out
}

func (c *client) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.envs)
}

// rig is a Manager serving one session on one fake workspace.
type rig struct {
	m   *Manager
	ws  *fakeWorkspace
	uri string // the session
	id  string
}

func newRig(t *testing.T, opts Options, head, work map[string]string) *rig {
	t.Helper()
	return newRigOn(t, opts, newFakeWorkspace(t.TempDir(), head, work))
}

// newRigOn is newRig on a workspace the test prepared (gated, say).
func newRigOn(t *testing.T, opts Options, ws *fakeWorkspace) *rig {
	t.Helper()
	dir := ws.root
	r := &rig{ws: ws, id: "s1", uri: protocol.SessionScheme + "/s1"}
	if opts.OpenWorkspace == nil {
		opts.OpenWorkspace = func(string) (Workspace, error) { return r.ws, nil }
	}
	r.m = NewManager(opts)
	t.Cleanup(r.m.Close)
	if _, err := r.m.Create(CreateParams{URI: r.uri, WorkingDirectories: []string{FileURI(dir)}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// watchUncommitted subscribes c to the session's uncommitted changeset
// and waits until it is ready with exactly paths; it returns its URI.
func (r *rig) watchUncommitted(t *testing.T, c *client, paths ...string) string {
	t.Helper()
	uri := r.changeset(t, protocol.KindUncommitted, nil)
	c.subscribe(t, r.m, uri)
	c.awaitFiles(t, uri, r.ws.root, paths...)
	return uri
}

// changeset returns the URI of a changeset of the session.
func (r *rig) changeset(t *testing.T, kind string, vars uritemplate.Values) string {
	t.Helper()
	u, err := uritemplate.SessionChangesetTemplates(r.id)[kind].Expand(vars)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (r *rig) invoke(op string, uri string, target *protocol.ChangesetOperationTarget, meta protocol.Object) (*protocol.InvokeChangesetOperationResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	return r.m.Invoke(ctx, protocol.InvokeChangesetOperationParams{
		BaseParams:  protocol.BaseParams{Channel: uri, Meta: meta},
		OperationID: op,
		Target:      target,
	})
}

func (r *rig) fileURI(path string) string { return FileURI(r.ws.root) + "/" + path }

func opStatus(st protocol.ChangesetState, id string) string {
	for _, o := range st.Operations {
		if o.ID == id {
			return o.Status
		}
	}
	return ""
}

// memStore is a Store in memory that records every write. fail, when
// set, is returned by PutReviews.
type memStore struct {
	mu       sync.Mutex
	sessions map[string]store.Session
	turns    map[string][]store.Turn
	reviews  map[string]map[string]string
	notes    map[string][]byte
	slots    map[string]map[uint64][]byte
	// written counts the bytes of annotations written, by call.
	written []int
	deleted []string
	fail    error
	// recordGate, when set, holds the next PutSession or DeleteSession
	// until it is closed; recordEntered is closed once that call is in.
	recordGate, recordEntered chan struct{}
}

var _ Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{sessions: map[string]store.Session{}, turns: map[string][]store.Turn{}, reviews: map[string]map[string]string{}}
}

// awaitRecordGate holds the call while a recordGate is set.
func (s *memStore) awaitRecordGate() {
	s.mu.Lock()
	gate, entered := s.recordGate, s.recordEntered
	s.recordGate, s.recordEntered = nil, nil
	s.mu.Unlock()
	if gate != nil {
		close(entered)
		<-gate
	}
}

func (s *memStore) PutSession(r store.Session) error {
	s.awaitRecordGate()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[r.ID] = r
	return nil
}

func (s *memStore) Sessions() ([]store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Session
	for _, k := range slices.Sorted(maps.Keys(s.sessions)) {
		out = append(out, s.sessions[k])
	}
	return out, nil
}

// Turns returns the turns as the real store does: the last write of each
// seq, in seq order.
func (s *memStore) Turns(id string) ([]store.Turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bySeq := map[uint64]store.Turn{}
	for _, t := range s.turns[id] {
		bySeq[t.Seq] = t
	}
	var out []store.Turn
	for _, k := range slices.Sorted(maps.Keys(bySeq)) {
		out = append(out, bySeq[k])
	}
	return out, nil
}

func (s *memStore) DeleteSession(id, prefix string) error {
	s.awaitRecordGate()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
	delete(s.turns, id)
	delete(s.notes, id)
	delete(s.slots, id)
	for k := range s.reviews {
		if strings.HasPrefix(k, prefix) {
			delete(s.reviews, k)
		}
	}
	s.deleted = append(s.deleted, id)
	return nil
}

func (s *memStore) PutTurn(id string, t store.Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns[id] = append(s.turns[id], t)
	return nil
}

func (s *memStore) PutReviews(uri string, r map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.reviews[uri] = maps.Clone(r)
	return nil
}

func (s *memStore) Reviews(uri string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.reviews[uri]), nil
}

func (s *memStore) PutAnnotations(id string, state []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notes == nil {
		s.notes = map[string][]byte{}
	}
	s.written = append(s.written, len(state))
	if len(state) == 0 {
		delete(s.notes, id)
		return nil
	}
	s.notes[id] = slices.Clone(state)
	return nil
}

func (s *memStore) PutAnnotation(id string, slot uint64, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written = append(s.written, len(v))
	if s.slots == nil {
		s.slots = map[string]map[uint64][]byte{}
	}
	if s.slots[id] == nil {
		s.slots[id] = map[uint64][]byte{}
	}
	if len(v) == 0 {
		delete(s.slots[id], slot)
		return nil
	}
	s.slots[id][slot] = slices.Clone(v)
	return nil
}

func (s *memStore) AnnotationSlots(id string) ([]store.AnnotationSlot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.AnnotationSlot
	for _, k := range slices.Sorted(maps.Keys(s.slots[id])) {
		out = append(out, store.AnnotationSlot{Slot: k, Value: slices.Clone(s.slots[id][k])})
	}
	return out, nil
}

// storedAnnotations returns the annotations state the slots of session id
// make up.
func (s *memStore) storedAnnotations(id string) protocol.AnnotationsState {
	slots, _ := s.AnnotationSlots(id)
	st := protocol.AnnotationsState{Annotations: []protocol.Annotation{}}
	for _, sl := range slots {
		var a protocol.Annotation
		_ = json.Unmarshal(sl.Value, &a)
		st.Annotations = append(st.Annotations, a)
	}
	return st
}

func (s *memStore) Annotations(id string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.notes[id]), nil
}

// countMetrics is a Metrics that counts.
type countMetrics struct {
	mu         sync.Mutex
	actions    map[string]int
	rejected   int
	operations map[string]int // "id outcome"
	boundaries map[string]int
	channels   int
}

var _ Metrics = (*countMetrics)(nil)

func newCountMetrics() *countMetrics {
	return &countMetrics{actions: map[string]int{}, operations: map[string]int{}, boundaries: map[string]int{}}
}

func (c *countMetrics) Action(t string) { c.mu.Lock(); c.actions[t]++; c.mu.Unlock() }
func (c *countMetrics) Rejected()       { c.mu.Lock(); c.rejected++; c.mu.Unlock() }
func (c *countMetrics) Operation(id, outcome string) {
	c.mu.Lock()
	c.operations[id+" "+outcome]++
	c.mu.Unlock()
}
func (c *countMetrics) ChangesetChannels(delta int) {
	c.mu.Lock()
	c.channels += delta
	c.mu.Unlock()
}
func (c *countMetrics) TurnBoundary(edge string, _ time.Duration) {
	c.mu.Lock()
	c.boundaries[edge]++
	c.mu.Unlock()
}

// awaitFilesState waits until the changeset is ready and returns it.
func (c *client) awaitFilesState(t *testing.T, uri string) protocol.ChangesetState {
	t.Helper()
	var st protocol.ChangesetState
	c.await(t, uri+" ready", func() bool {
		st = c.stateLocked(uri).Clone()
		return st.Status == protocol.StatusReady
	})
	return st
}

// awaitRejection waits for the rejection of the client's dispatch with
// clientSeq seq, whose reason contains want.
func (c *client) awaitRejection(t *testing.T, seq int64, want string) {
	t.Helper()
	c.await(t, fmt.Sprintf("the rejection of dispatch %d", seq), func() bool {
		for _, e := range c.envs {
			if e.RejectionReason != "" && e.Origin != nil && e.Origin.ClientSeq == seq && strings.Contains(e.RejectionReason, want) {
				return true
			}
		}
		return false
	})
}
