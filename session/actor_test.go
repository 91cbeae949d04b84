package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/uritemplate"
)

// hold keeps the session's actor busy until the returned release is
// called (at the latest when the test ends).
func hold(t *testing.T, s *Session) (release func()) {
	t.Helper()
	gate, in := make(chan struct{}), make(chan struct{})
	if !s.do(func() { close(in); <-gate }) {
		t.Fatal("the session's actor has stopped")
	}
	<-in
	done := false
	release = func() {
		if !done {
			done = true
			close(gate)
		}
	}
	t.Cleanup(release)
	return release
}

// awaitQueued waits until n closures wait in the session's mailbox
// behind the one it runs.
func awaitQueued(t *testing.T, s *Session, n int) {
	t.Helper()
	limit := time.Now().Add(waitLimit)
	for {
		s.mb.mu.Lock()
		got := len(s.mb.queue)
		s.mb.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(limit) {
			t.Fatalf("%d closures queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond) // polling a condition, not timing a race
	}
}

func (r *rig) session(t *testing.T) *Session {
	t.Helper()
	s, ok := r.m.Session(r.uri)
	if !ok {
		t.Fatalf("no session %s", r.uri)
	}
	return s
}

// An invocation whose caller left while the actor was busy is still
// carried out to its end: the operation does not stay "running", an
// identical invocation after it is answered, and a shutdown does not wait
// for an orphan.
func TestInvokeAbandonedWhileActorBusyFinishes(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt")
	c.await(t, "revert idle", func() bool { return opStatus(c.stateLocked(uri), OpRevert) == protocol.OpIdle })
	s := r.session(t)

	n := c.count()
	release := hold(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := r.m.Invoke(ctx, protocol.InvokeChangesetOperationParams{
			BaseParams: protocol.BaseParams{Channel: uri}, OperationID: OpStage,
			Target: &protocol.ChangesetOperationTarget{Kind: protocol.ScopeResource, Resource: r.fileURI("a.txt")},
		})
		errc <- err
	}()
	awaitQueued(t, s, 1)
	cancel() // the client disconnects
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned Invoke = %v, want context.Canceled", err)
	}
	release()

	c.await(t, "the abandoned stage run and back to idle", func() bool {
		seenRunning := false
		for _, e := range c.envs[n:] {
			if a, ok := e.Action.Action.(protocol.ChangesetOperationStatusChanged); ok && a.OperationID == OpStage {
				seenRunning = seenRunning || a.Status == protocol.OpRunning
				if seenRunning && a.Status == protocol.OpIdle {
					return true
				}
			}
		}
		return false
	})
	if got, ok := r.ws.staged("a.txt"); !ok || got != "two\n" {
		t.Errorf("a.txt staged %q, want the abandoned stage carried out", got)
	}
	// An identical invocation is answered (joined or run anew), not hung
	// on a flight nobody runs.
	if _, err := r.invoke(OpStage, uri, &protocol.ChangesetOperationTarget{Kind: protocol.ScopeResource, Resource: r.fileURI("a.txt")}, nil); err != nil {
		t.Fatalf("identical invocation after the abandoned one: %v", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), waitLimit)
	defer dcancel()
	if err := r.m.Drain(dctx); err != nil {
		t.Fatalf("Drain: %v (an invocation was never finished)", err)
	}
}

// Annotations are marked delivered only for a caller still waiting for
// the answer: a hook whose deadline passed while the actor was busy
// printed nothing, so the agent must be offered them again.
func TestAnnotationsDeliveredAbandonedMarksNothing(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "one\n"})
	w := newClient("w")
	cs := r.watchUncommitted(t, w)
	_ = cs
	ctx := context.Background()
	if _, err := r.m.TurnStart(ctx, r.uri, "t1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.TurnEnd(ctx, r.uri, "t1"); err != nil {
		t.Fatal(err)
	}
	uri := protocol.AnnotationsURI(r.uri)
	c := newClient("c1")
	c.subscribe(t, r.m, uri)
	r.m.Dispatch(c, uri, 1, protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "n1", TurnID: "t1", Resource: r.fileURI("a.txt"), Entries: []protocol.AnnotationEntry{{ID: "e1", Text: protocol.PlainText("why?")}}}})
	c.await(t, "the annotation's echo", func() bool {
		for _, e := range c.envs {
			if e.Channel == uri && e.RejectionReason == "" {
				return true
			}
		}
		return false
	})
	s := r.session(t)

	release := hold(t, s)
	hctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.m.AnnotationsDelivered(hctx, uri, []string{"n1"}, "t2") }()
	awaitQueued(t, s, 1)
	cancel() // the hook's deadline passes
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned AnnotationsDelivered = %v, want context.Canceled", err)
	}
	release()

	raw, _ := attachRaw(t, r.m, newClient("check"), uri)
	var st protocol.AnnotationsState
	if err := jsonUnmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Annotations {
		if _, ok := a.Meta[protocol.MetaDelivered]; ok {
			t.Fatalf("annotation %s marked delivered by a call nobody got the answer of: %v", a.ID, a.Meta[protocol.MetaDelivered])
		}
	}
	// A caller that waits gets them marked.
	if err := r.m.AnnotationsDelivered(ctx, uri, []string{"n1"}, "t2"); err != nil {
		t.Fatal(err)
	}
	raw, _ = attachRaw(t, r.m, newClient("check2"), uri)
	st = protocol.AnnotationsState{}
	if err := jsonUnmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Annotations[0].Meta[protocol.MetaDelivered]; !ok {
		t.Fatal("a delivery the caller waited for was not marked")
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// A session created again with the id of one being disposed keeps its
// record, and root subscribers hear of the removal before the addition.
func TestDisposeThenCreateSameID(t *testing.T) {
	db := newMemStore()
	r := newRig(t, Options{Store: db}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := r.session(t).awaitStarted(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	root := newClient("root")
	root.subscribe(t, r.m, protocol.RootURI)

	gate, entered := make(chan struct{}), make(chan struct{})
	db.mu.Lock()
	db.recordGate, db.recordEntered = gate, entered
	db.mu.Unlock()
	disposed := make(chan error, 1)
	go func() { disposed <- r.m.Dispose(r.uri) }()
	<-entered // the dispose is writing the old record

	created := make(chan error, 1)
	go func() {
		_, err := r.m.Create(CreateParams{URI: r.uri, WorkingDirectories: []string{FileURI(r.ws.root)}})
		created <- err
	}()
	select {
	case err := <-created:
		// Created at once: it must not lose its record to the old dispose.
		if err != nil {
			t.Fatal(err)
		}
		if err := r.session(t).awaitStarted(ctx, "test"); err != nil {
			t.Fatal(err)
		}
		close(gate)
	case <-time.After(50 * time.Millisecond):
		// Waiting for the tombstone, as it should: let the dispose end.
		close(gate)
		if err := <-created; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-disposed; err != nil {
		t.Fatal(err)
	}
	if err := r.session(t).awaitStarted(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	rec, recorded := db.sessions[r.id]
	db.mu.Unlock()
	if !recorded || !rec.DisposedAt.IsZero() {
		t.Errorf("the new session's record was deleted or marked disposed by the dispose of the old one (%v, %+v)", recorded, rec)
	}
	root.await(t, "sessionRemoved then sessionAdded", func() bool {
		var last string
		for _, n := range root.notes {
			if n == protocol.NotifySessionAdded || n == protocol.NotifySessionRemoved {
				last = n
			}
		}
		return last == protocol.NotifySessionAdded && len(root.notes) >= 2
	})
	root.mu.Lock()
	defer root.mu.Unlock()
	var order []string
	for _, n := range root.notes {
		if n == protocol.NotifySessionAdded || n == protocol.NotifySessionRemoved {
			order = append(order, n)
		}
	}
	if len(order) != 2 || order[0] != protocol.NotifySessionRemoved {
		t.Errorf("root heard %v, want [sessionRemoved sessionAdded]", order)
	}
}

// An annotations subscriber that leaves while its attachment waits for
// the places being computed is not subscribed once they are.
func TestAnnotationsDetachWhileAttachPending(t *testing.T) {
	ws := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "one\ntwo\n"}, map[string]string{"a.txt": "one\ntwo\n"})
	r := newRigOn(t, Options{}, ws)
	w := newClient("w")
	r.watchUncommitted(t, w)
	ctx := context.Background()
	if _, err := r.m.TurnStart(ctx, r.uri, "t1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.TurnEnd(ctx, r.uri, "t1"); err != nil {
		t.Fatal(err)
	}
	uri := protocol.AnnotationsURI(r.uri)
	c := newClient("c1")
	c.subscribe(t, r.m, uri)
	rg := rng(0, 0, 1, 0)
	r.m.Dispatch(c, uri, 1, protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "n1", TurnID: "t1", Resource: r.fileURI("a.txt"), Range: &rg, Entries: []protocol.AnnotationEntry{{ID: "e1", Text: protocol.PlainText("why?")}}}})
	s := r.session(t)
	// Wait until the placement the set started is through.
	attachRaw(t, r.m, newClient("sync"), uri)

	// Hold the next placement in Changes.
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	ws.mu.Lock()
	ws.gate, ws.entered = gate, entered
	ws.mu.Unlock()
	leaver := newClient("leaver")
	answered := make(chan error, 1)
	r.m.Attach(leaver, uri, -1, func(_ Attachment, err error) { answered <- err })
	<-entered // the placement the attach waits for runs
	r.m.Detach(leaver, uri)
	ws.mu.Lock()
	ws.gate, ws.entered = nil, nil
	ws.mu.Unlock()
	close(gate)
	<-answered
	// A later attach queues behind everything above on the actor.
	attachRaw(t, r.m, newClient("sync2"), uri)
	still := s.notes.ch.Has(leaver)
	if still {
		t.Fatal("a subscriber that left while its attach waited is subscribed")
	}
}

// Arming the watches reads nothing the actor owns: a plain directory
// whose baseline failed is dropped (on the actor) while a git directory's
// watch is still being armed, and the changeset still comes up.
func TestArmWatchesWhileBaselineDropsPlainDir(t *testing.T) {
	gitWS := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	plainWS := newFakeWorkspace(t.TempDir(), nil, map[string]string{"p.txt": "x\n"})
	plainWS.plain = true
	plainWS.snapErr = errors.New("unreadable directory")
	plainWS.snapGate = make(chan struct{})
	gitWS.watchGate, gitWS.watchEntered = make(chan struct{}), make(chan struct{}, 1)
	m := NewManager(Options{OpenWorkspace: func(dir string) (Workspace, error) {
		if dir == plainWS.root {
			return plainWS, nil
		}
		return gitWS, nil
	}})
	t.Cleanup(m.Close)
	uri := protocol.SessionScheme + "/s1"
	if _, err := m.Create(CreateParams{URI: uri, WorkingDirectories: []string{FileURI(gitWS.root), FileURI(plainWS.root)}}); err != nil {
		t.Fatal(err)
	}
	cs, _ := uritemplate.SessionChangesetTemplates("s1")[protocol.KindUncommitted].Expand(nil)
	c := newClient("c1")
	c.subscribe(t, m, cs)
	<-gitWS.watchEntered // arming the git directory's watch
	close(plainWS.snapGate)
	s, _ := m.Session(uri)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.awaitStarted(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	close(gitWS.watchGate)
	// Computed, with the git directory's change (the dropped directory
	// makes it report an error beside it).
	c.await(t, "the changeset computed with a.txt", func() bool {
		st := c.stateLocked(cs)
		return (st.Status == protocol.StatusReady || st.Status == protocol.StatusError) && slices.Equal(filePaths(st, gitWS.root), []string{"a.txt"})
	})
	if n := plainWS.watching(); n != 0 {
		t.Errorf("the dropped plain directory has %d watches armed", n)
	}
}

// A changeset nobody watched for a while is not handed to a new
// subscriber as ready with what it held when the last one left: it says
// recomputing until it has caught up with the tree.
func TestResubscribeAfterIdleIsNotStaleReady(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "v1\n"})
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt")
	r.m.Detach(c, uri)
	// A later subscribe queues behind the detach on the actor.
	sync := newClient("sync")
	sync.subscribe(t, r.m, r.uri)
	r.ws.edit("a.txt", "v2\n", false) // nobody watches: no refresh

	c2 := newClient("c2")
	snapc := make(chan protocol.ChangesetState, 1)
	r.m.Attach(c2, uri, -1, func(at Attachment, err error) {
		if err != nil {
			t.Error(err)
		}
		var st protocol.ChangesetState
		if err := json.Unmarshal(mustJSON(at.Snapshot.State), &st); err != nil {
			t.Error(err)
		}
		// Before any later action reaches c2: it mirrors from here.
		c2.mu.Lock()
		c2.cs[uri] = st.Clone()
		c2.mu.Unlock()
		snapc <- st
	})
	snap := <-snapc
	if snap.Status == protocol.StatusReady {
		f := fileByPath(t, snap, r.ws.root, "a.txt")
		if f.Edit.After == nil || f.Edit.After.Content.Nonce != changeset.BlobOID([]byte("v2\n")) {
			t.Fatalf("the snapshot is ready with a.txt at %v, not its current content", f.Edit.After)
		}
	}
	st := c2.awaitFiles(t, uri, r.ws.root, "a.txt")
	if f := fileByPath(t, st, r.ws.root, "a.txt"); f.Edit.After == nil || f.Edit.After.Content.Nonce != changeset.BlobOID([]byte("v2\n")) {
		t.Fatalf("ready with a.txt at %v, want its current content", f.Edit.After)
	}
}

// Each comment writes one annotation, not the session's whole state: the
// bytes stored per comment do not grow with the number of annotations.
func TestAnnotationWritesDoNotGrow(t *testing.T) {
	db := newMemStore()
	r := newRig(t, Options{Store: db}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "one\n"})
	w := newClient("w")
	r.watchUncommitted(t, w)
	uri := protocol.AnnotationsURI(r.uri)
	c := newClient("c1")
	c.subscribe(t, r.m, uri)
	const n = 300
	for i := range n {
		r.m.Dispatch(c, uri, int64(i+1), protocol.AnnotationsSet{Annotation: protocol.Annotation{
			ID: fmt.Sprintf("n%03d", i), TurnID: BaselineTurnID, Resource: r.fileURI("a.txt"),
			Entries: []protocol.AnnotationEntry{{ID: "e1", Text: protocol.PlainText("a comment of some length")}},
		}})
	}
	raw, _ := attachRaw(t, r.m, newClient("sync"), uri)
	var st protocol.AnnotationsState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Annotations) != n {
		t.Fatalf("%d annotations, want %d", len(st.Annotations), n)
	}
	db.mu.Lock()
	written := slices.Clone(db.written)
	db.mu.Unlock()
	if len(written) < n {
		t.Fatalf("%d writes for %d comments", len(written), n)
	}
	total := 0
	for _, b := range written {
		total += b
	}
	first, last := written[0], written[len(written)-1]
	if last > 2*first {
		t.Errorf("the last comment wrote %d bytes, the first %d: each write holds every annotation", last, first)
	}
	if total > 4*n*first {
		t.Errorf("%d comments wrote %d bytes, more than linear (first: %d)", n, total, first)
	}
	// What is stored is what the channel holds.
	if got := db.storedAnnotations(r.id); !reflect.DeepEqual(withoutPlaces(t, got), withoutPlaces(t, st)) {
		t.Errorf("the store holds another state than the channel")
	}
}

// Listing sessions does not wait for a session whose actor is busy.
func TestListWhileSessionBusy(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	w := newClient("w")
	r.watchUncommitted(t, w, "a.txt")
	hold(t, r.session(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := r.m.List(ctx)
	if err != nil {
		t.Fatalf("List while a session is busy: %v", err)
	}
	if len(list) != 1 || list[0].Resource != r.uri {
		t.Fatalf("List = %+v", list)
	}
}

// An annotations subscriber waiting for the places is let through when
// the round it waited for ends, even though more changes queued another
// round meanwhile.
func TestAnnotationsAttachNotStarvedByPlacementRounds(t *testing.T) {
	ws := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "one\ntwo\n"}, map[string]string{"a.txt": "one\ntwo\n"})
	r := newRigOn(t, Options{}, ws)
	w := newClient("w")
	r.watchUncommitted(t, w)
	ctx := context.Background()
	if _, err := r.m.TurnStart(ctx, r.uri, "t1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.TurnEnd(ctx, r.uri, "t1"); err != nil {
		t.Fatal(err)
	}
	uri := protocol.AnnotationsURI(r.uri)
	c := newClient("c1")
	c.subscribe(t, r.m, uri)
	rg := rng(0, 0, 1, 0)
	r.m.Dispatch(c, uri, 1, protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "n1", TurnID: "t1", Resource: r.fileURI("a.txt"), Range: &rg, Entries: []protocol.AnnotationEntry{{ID: "e1", Text: protocol.PlainText("why?")}}}})
	attachRaw(t, r.m, newClient("sync"), uri) // the set's placement is through

	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	ws.mu.Lock()
	ws.gate, ws.entered = gate, entered
	ws.mu.Unlock()
	answered := make(chan error, 1)
	r.m.Attach(newClient("late"), uri, -1, func(_ Attachment, err error) { answered <- err })
	<-entered // round 1, which the attach waits for, is computing
	// A change arrives meanwhile: another round is queued behind it.
	rg2 := rng(1, 0, 2, 0)
	r.m.Dispatch(c, uri, 2, protocol.AnnotationsUpdated{AnnotationID: "n1", Range: &rg2})
	c.await(t, "the update's echo", func() bool {
		for _, e := range c.envs {
			if e.Origin != nil && e.Origin.ClientSeq == 2 {
				return true
			}
		}
		return false
	})
	gate <- struct{}{} // round 1 ends
	<-entered          // round 2 is computing, held
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Error("the attachment still waits after the round it waited for ended")
	}
	ws.mu.Lock()
	ws.gate, ws.entered = nil, nil
	ws.mu.Unlock()
	close(gate)
	if t.Failed() {
		<-answered
	}
}

// The snapshot handed out under the hub's lock never encodes the state (that
// would hold every session's publish for as long as megabytes take to
// encode): attachChangeset encodes first, outside the lock.
func TestChangesetSnapshotDoesNotEncodeUnderLock(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt")
	s := r.session(t)
	got, err := query(context.Background(), s, func() (bool, error) {
		cs := s.changesets[uri]
		cs.encoded = nil
		_ = cs.snapshot()
		return cs.encoded == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !got {
		t.Error("snapshot encoded the state (it runs under the hub's lock)")
	}
	// A subscriber still gets the encoded state, made before the lock.
	raw, _ := attachRaw(t, r.m, newClient("c2"), uri)
	var st protocol.ChangesetState
	if err := json.Unmarshal(raw, &st); err != nil || len(st.Files) != 1 {
		t.Fatalf("snapshot %s: %v", raw, err)
	}
	if enc, _ := query(context.Background(), s, func() (bool, error) { return s.changesets[uri].encoded != nil, nil }); !enc {
		t.Error("attaching did not leave the encoded state for the next subscriber")
	}
}

// A disposed session's turns and annotations are kept for
// DisposedRetention: creating it again on the same directory brings them
// back; once the retention has passed it starts clean.
func TestDisposeKeepsWhatCreatingAgainRecovers(t *testing.T) {
	db := newMemStore()
	var days atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(days.Load()) * 24 * time.Hour) }
	r := newRig(t, Options{Store: db, Now: now}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	w := newClient("w")
	r.watchUncommitted(t, w, "a.txt")
	ctx := context.Background()
	if _, err := r.m.TurnStart(ctx, r.uri, "t1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.TurnEnd(ctx, r.uri, "t1"); err != nil {
		t.Fatal(err)
	}
	uri := protocol.AnnotationsURI(r.uri)
	c := newClient("c1")
	c.subscribe(t, r.m, uri)
	r.m.Dispatch(c, uri, 1, protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "n1", TurnID: "t1", Resource: r.fileURI("a.txt"), Entries: []protocol.AnnotationEntry{{ID: "e1", Text: protocol.PlainText("keep me")}}}})
	attachRaw(t, r.m, newClient("sync"), uri)

	recreate := func(after int64) (turns int, notes int) {
		t.Helper()
		if err := r.m.Dispose(r.uri); err != nil {
			t.Fatal(err)
		}
		days.Add(after)
		if _, err := r.m.Create(CreateParams{URI: r.uri, WorkingDirectories: []string{FileURI(r.ws.root)}}); err != nil {
			t.Fatal(err)
		}
		s := r.session(t)
		wctx, cancel := context.WithTimeout(ctx, waitLimit)
		defer cancel()
		if err := s.awaitStarted(wctx, "test"); err != nil {
			t.Fatal(err)
		}
		turns, _ = query(wctx, s, func() (int, error) { return len(s.turns), nil })
		raw, _ := attachRaw(t, r.m, newClient("check"), uri)
		var st protocol.AnnotationsState
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		return turns, len(st.Annotations)
	}
	if turns, notes := recreate(6); turns != 1 || notes != 1 {
		t.Fatalf("created again 6 days after the dispose: %d turns and %d annotations, want the turn and the annotation back", turns, notes)
	}
	if turns, notes := recreate(8); turns != 0 || notes != 0 {
		t.Fatalf("created again 8 days after the dispose: %d turns and %d annotations, want a clean session", turns, notes)
	}
}

// All of a session's annotations are capped, with a rejection that names
// the sizes; what was stored before stays.
func TestAnnotationsSessionSizeCap(t *testing.T) {
	// Lowered before the actor starts, put back after it stopped.
	defaultCap := maxSessionAnnotationBytes
	t.Cleanup(func() { maxSessionAnnotationBytes = defaultCap })
	maxSessionAnnotationBytes = 64 << 10
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "one\n"})
	w := newClient("w")
	r.watchUncommitted(t, w)
	uri := protocol.AnnotationsURI(r.uri)
	c := newClient("c1")
	c.subscribe(t, r.m, uri)
	text := strings.Repeat("x", 1000)
	var entries []protocol.AnnotationEntry
	for i := range 4 {
		entries = append(entries, protocol.AnnotationEntry{ID: fmt.Sprint("e", i), Text: protocol.PlainText(text)})
	}
	per := len(mustJSON(entries))
	n := maxSessionAnnotationBytes/per + 2
	for i := range n {
		r.m.Dispatch(c, uri, int64(i+1), protocol.AnnotationsSet{Annotation: protocol.Annotation{
			ID: fmt.Sprint("big", i), TurnID: BaselineTurnID, Resource: r.fileURI("a.txt"), Entries: entries,
		}})
	}
	c.awaitRejection(t, int64(n), fmt.Sprintf("at most %d are kept", maxSessionAnnotationBytes))
	raw, _ := attachRaw(t, r.m, newClient("check"), uri)
	var st protocol.AnnotationsState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Annotations) == 0 || len(st.Annotations) >= n || len(raw) > maxSessionAnnotationBytes+per {
		t.Fatalf("%d annotations kept (%d bytes) of %d sent", len(st.Annotations), len(raw), n)
	}
}
