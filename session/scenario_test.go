package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/uritemplate"
)

// The scenarios drive a Manager through its public API over a fake
// workspace (fake_test.go) and check what it publishes, the way a client
// reducing the stream sees it.

func TestScenarioRefreshFollowsEdits(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "one\ntwo\n"})
	c := newClient("c1")
	uri := r.changeset(t, protocol.KindUncommitted, nil)
	c.subscribe(t, r.m, uri)
	st := c.awaitFiles(t, uri, r.ws.root, "a.txt")
	if d := fileByPath(t, st, r.ws.root, "a.txt").Edit.Diff; d == nil || *d.Added != 1 || *d.Removed != 0 {
		t.Fatalf("a.txt diff = %+v, want +1 -0", d)
	}

	r.ws.edit("b.txt", "new\n", false)
	c.awaitFiles(t, uri, r.ws.root, "a.txt", "b.txt")
	// The watcher named one path: the refresh asks for it (and the
	// additions a rename could pair with), not the whole tree.
	r.ws.mu.Lock()
	last := r.ws.queries[len(r.ws.queries)-1]
	r.ws.mu.Unlock()
	if last.Paths == nil || !slices.Contains(last.Paths, "b.txt") {
		t.Errorf("refresh after an edit of b.txt asked for %v, want a path-scoped query naming b.txt", last.Paths)
	}

	n := c.count()
	r.ws.edit("a.txt", "one\n", false) // back to HEAD: no longer a change
	c.awaitFiles(t, uri, r.ws.root, "b.txt")
	if got := c.sent(uri, n); !slices.Contains(got, "changeset/fileRemoved") {
		t.Errorf("after a.txt went back to HEAD the changeset sent %v, want a fileRemoved", got)
	}
	r.ws.edit("b.txt", "", true)
	c.awaitFiles(t, uri, r.ws.root)
}

func TestScenarioReviewFlagFollowsContent(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	c, other := newClient("c1"), newClient("c2")
	uri := r.changeset(t, protocol.KindUncommitted, nil)
	c.subscribe(t, r.m, uri)
	other.subscribe(t, r.m, uri)
	c.awaitFiles(t, uri, r.ws.root, "a.txt")
	id := r.fileURI("a.txt")

	r.m.Dispatch(c, uri, 7, protocol.ChangesetFilesReviewChanged{Files: []string{id}, Reviewed: true})
	for _, cl := range []*client{c, other} {
		cl.await(t, "the review echo with its origin", func() bool {
			for _, e := range cl.envs {
				if e.Action.Action.ActionType() == "changeset/filesReviewChanged" && e.Origin != nil && e.Origin.ClientID == "c1" && e.Origin.ClientSeq == 7 {
					return true
				}
			}
			return false
		})
	}
	reviewed := func(cl *client, want bool) {
		t.Helper()
		cl.await(t, "a.txt reviewed="+map[bool]string{true: "true", false: "false"}[want], func() bool {
			st := cl.stateLocked(uri)
			for _, f := range st.Files {
				if f.ID == id {
					return st.Status == protocol.StatusReady && f.IsReviewed() == want
				}
			}
			return false
		})
	}
	reviewed(other, true)

	// An edit makes it a different change: the flag no longer applies.
	r.ws.edit("a.txt", "three\n", false)
	reviewed(c, false)
	// Back to the reviewed content: the flag applies again.
	r.ws.edit("a.txt", "two\n", false)
	reviewed(c, true)

	// An invalid toggle goes back to its sender only.
	n := other.count()
	r.m.Dispatch(c, uri, 8, protocol.ChangesetFilesReviewChanged{Reviewed: true})
	c.awaitRejection(t, 8, "")
	// other is subscribed to the same channel; a later action proves
	// the rejection did not reach it in between.
	r.ws.edit("b.txt", "b\n", false)
	other.awaitFiles(t, uri, r.ws.root, "a.txt", "b.txt")
	other.mu.Lock()
	for _, e := range other.envs[n:] {
		if e.RejectionReason != "" {
			t.Errorf("another subscriber got the rejection %q", e.RejectionReason)
		}
	}
	other.mu.Unlock()
}

func TestScenarioTurns(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt")
	c.await(t, "revert idle", func() bool { return opStatus(c.stateLocked(uri), OpRevert) == protocol.OpIdle })

	ctx := context.Background()
	if _, err := r.m.TurnStart(ctx, r.uri, "t1", "write c"); err != nil {
		t.Fatal(err)
	}
	// Every operation writes: none may run while the agent works.
	c.await(t, "operations disabled during the turn", func() bool {
		st := c.stateLocked(uri)
		return len(st.Operations) > 0 && !slices.ContainsFunc(st.Operations, func(o protocol.ChangesetOperation) bool { return o.Status != protocol.OpDisabled })
	})
	if _, err := r.invoke(OpRevert, uri, &protocol.ChangesetOperationTarget{Kind: protocol.ScopeResource, Resource: r.fileURI("a.txt")}, nil); err == nil || !strings.Contains(err.Error(), `while turn "t1" runs`) {
		t.Errorf("revert during a turn: err = %v, want a refusal naming the turn", err)
	}
	if got, _ := r.ws.file("a.txt"); got != "two\n" {
		t.Errorf("a.txt = %q after a refused revert", got)
	}

	turn := r.changeset(t, protocol.KindTurn, uritemplate.Values{"turnId": "t1"})
	tc := newClient("c2")
	tc.subscribe(t, r.m, turn)
	tc.awaitFiles(t, turn, r.ws.root) // nothing yet
	r.ws.edit("c.txt", "c\n", false)
	tc.awaitFiles(t, turn, r.ws.root, "c.txt") // live while it runs

	if _, err := r.m.TurnEnd(ctx, r.uri, "t1"); err != nil {
		t.Fatal(err)
	}
	c.await(t, "operations idle after the turn", func() bool { return opStatus(c.stateLocked(uri), OpRevert) == protocol.OpIdle })
	// Ended: the turn is its two snapshots, later edits are not in it.
	r.ws.edit("d.txt", "d\n", false)
	c.awaitFiles(t, uri, r.ws.root, "a.txt", "c.txt", "d.txt")
	tc.awaitFiles(t, turn, r.ws.root, "c.txt")
	if _, err := r.m.TurnEnd(ctx, r.uri, "t1"); protocol.CodeOf(err) != protocol.CodeInvalidParams {
		t.Errorf("ending an ended turn: err = %v, want InvalidParams", err)
	}
}

func TestScenarioOperations(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\ntwo\n", "b.txt": "b\n"}, map[string]string{"a.txt": "one\nTWO\n", "b.txt": "b\n", "n.txt": "new\n"})
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt", "n.txt")
	res := func(target string) *protocol.ChangesetOperationTarget {
		return &protocol.ChangesetOperationTarget{Kind: protocol.ScopeResource, Resource: r.fileURI(target)}
	}

	n := c.count()
	if _, err := r.invoke(OpRevert, uri, res("a.txt"), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.ws.file("a.txt"); got != "one\ntwo\n" {
		t.Errorf("after revert a.txt = %q, want HEAD's", got)
	}
	c.awaitFiles(t, uri, r.ws.root, "n.txt")
	c.await(t, "undo offered", func() bool { return opStatus(c.stateLocked(uri), OpUndo) == protocol.OpIdle })
	var statuses []string
	c.mu.Lock()
	for _, e := range c.envs[n:] {
		if a, ok := e.Action.Action.(protocol.ChangesetOperationStatusChanged); ok && a.OperationID == OpRevert {
			statuses = append(statuses, a.Status)
		}
	}
	c.mu.Unlock()
	if !slices.Equal(statuses, []string{protocol.OpRunning, protocol.OpIdle}) {
		t.Errorf("revert reported %v, want running then idle", statuses)
	}

	if _, err := r.invoke(OpUndo, uri, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.ws.file("a.txt"); got != "one\nTWO\n" {
		t.Errorf("after undo a.txt = %q, want what the revert replaced", got)
	}
	c.awaitFiles(t, uri, r.ws.root, "a.txt", "n.txt")
	c.await(t, "undo withdrawn", func() bool { return opStatus(c.stateLocked(uri), OpUndo) == "" })

	// A range picked on content that is no longer current is refused
	// before anything is written.
	rng := &protocol.TextRange{Start: protocol.TextPosition{Line: 1}, End: protocol.TextPosition{Line: 1}}
	_, err := r.invoke(OpRevert, uri, &protocol.ChangesetOperationTarget{Kind: protocol.ScopeRange, Resource: r.fileURI("a.txt"), Range: rng}, protocol.Object{MetaExpectedNonce: "0000"})
	if protocol.CodeOf(err) != protocol.CodeConflict {
		t.Errorf("range revert on a stale nonce: err = %v, want Conflict", err)
	}
	if got, _ := r.ws.file("a.txt"); got != "one\nTWO\n" {
		t.Errorf("a refused range revert wrote a.txt = %q", got)
	}
	// On the current content it reverts the hunk the lines touch.
	c.mu.Lock()
	nonce := fileByPath(t, c.stateLocked(uri), r.ws.root, "a.txt").Edit.After.Content.Nonce
	c.mu.Unlock()
	if _, err := r.invoke(OpRevert, uri, &protocol.ChangesetOperationTarget{Kind: protocol.ScopeRange, Resource: r.fileURI("a.txt"), Range: rng}, protocol.Object{MetaExpectedNonce: nonce}); err != nil {
		t.Fatal(err)
	}
	r.ws.mu.Lock()
	e := r.ws.edits[len(r.ws.edits)-1]
	r.ws.mu.Unlock()
	if e.Range == nil || *e.Range != *rng || e.Side != "after" || !e.Index || len(e.Files) != 1 || e.Files[0].Path() != "a.txt" || e.Files[0].New.OID != nonce {
		t.Errorf("the editor was asked for %+v, want the range on a.txt's published after side", e)
	}
	c.awaitFiles(t, uri, r.ws.root, "n.txt")

	if _, err := r.invoke(OpStage, uri, res("n.txt"), nil); err != nil {
		t.Fatal(err)
	}
	if got, ok := r.ws.staged("n.txt"); !ok || got != "new\n" {
		t.Errorf("after stage the index has n.txt = %q, %v", got, ok)
	}
	if _, err := r.invoke(OpUnstage, uri, res("n.txt"), nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.ws.staged("n.txt"); ok {
		t.Error("after unstage the index still has n.txt")
	}
	out, err := r.invoke(OpCommit, uri, nil, protocol.Object{"message": "Add n"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out.Message), "Add n") || len(r.ws.commits) != 1 || r.ws.commits[0] != "Add n" {
		t.Errorf("commit answered %s and committed %q", out.Message, r.ws.commits)
	}
	// Nothing was staged, so the commit took everything; the operation
	// refreshes the changeset when it ends.
	c.awaitFiles(t, uri, r.ws.root)

	// Without a message the commit describes the changeset.
	r.ws.edit("x.txt", "x\n", false)
	c.awaitFiles(t, uri, r.ws.root, "x.txt")
	out, err = r.invoke(OpCommit, uri, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Update 1 file(s) (+1 -0)"; !strings.Contains(string(out.Message), want) || !strings.HasPrefix(r.ws.commits[1], want+"\n\n- ") {
		t.Errorf("commit answered %s and committed %q, want the subject %q", out.Message, r.ws.commits[1], want)
	}
	c.awaitFiles(t, uri, r.ws.root)

	// A revert can be undone only while its files are as it left them:
	// an edit since withdraws the offer. The range revert of a.txt above
	// is kept too, and is what undo then puts back.
	r.ws.edit("y.txt", "y\n", false)
	c.awaitFiles(t, uri, r.ws.root, "y.txt")
	if _, err := r.invoke(OpRevert, uri, res("y.txt"), nil); err != nil {
		t.Fatal(err)
	}
	undoDesc := func() string {
		for _, o := range c.stateLocked(uri).Operations {
			if o.ID == OpUndo {
				return o.Description
			}
		}
		return ""
	}
	c.await(t, "undo of y.txt offered", func() bool { return strings.Contains(undoDesc(), "deleted y.txt") })
	r.ws.edit("y.txt", "other\n", false)
	c.await(t, "undo of y.txt withdrawn after an edit", func() bool {
		return opStatus(c.stateLocked(uri), OpUndo) == protocol.OpIdle && !strings.Contains(undoDesc(), "y.txt")
	})
	if _, err := r.invoke(OpUndo, uri, nil, nil); err != nil {
		t.Errorf("undo of the range revert: %v", err)
	}
	if got, _ := r.ws.file("y.txt"); got != "other\n" {
		t.Errorf("y.txt = %q after undoing the other revert", got)
	}
	c.await(t, "undo withdrawn", func() bool { return opStatus(c.stateLocked(uri), OpUndo) == "" })
	if _, err := r.invoke(OpUndo, uri, nil, nil); protocol.CodeOf(err) != protocol.CodeInvalidParams {
		t.Errorf("undo after an edit: err = %v, want InvalidParams", err)
	}

	if _, err := r.invoke("frobnicate", uri, nil, nil); protocol.CodeOf(err) != protocol.CodeInvalidParams {
		t.Errorf("an unknown operation: err = %v, want InvalidParams", err)
	}
}

// Disposing a session must win every race with work still in flight:
// opening its workspaces, computing a changeset, running an operation.
// What it holds is released exactly once and nothing is published after
// changeset/cleared (goleak in TestMain checks that nothing is left
// running).
func TestScenarioDisposeWhileOpening(t *testing.T) {
	ws := newFakeWorkspace(t.TempDir(), nil, nil)
	opening, release := make(chan struct{}), make(chan struct{})
	m := NewManager(Options{OpenWorkspace: func(string) (Workspace, error) {
		close(opening)
		<-release
		return ws, nil
	}})
	uri := protocol.SessionScheme + "/s1"
	if _, err := m.Create(CreateParams{URI: uri, WorkingDirectories: []string{FileURI(ws.root)}}); err != nil {
		t.Fatal(err)
	}
	<-opening
	if err := m.Dispose(uri); err != nil {
		t.Fatal(err)
	}
	close(release)
	m.Close()
	if ws.closed != 1 {
		t.Errorf("a workspace opened after its session was disposed was closed %d times, want 1", ws.closed)
	}
}

// TestScenarioUncommittedBeforeBaseline: the uncommitted changeset is
// served while the session still takes its baseline; what needs the
// baseline (the session changeset, a turn) waits for it or is refused
// with sessionStarting, and starts once it is taken.
func TestScenarioUncommittedBeforeBaseline(t *testing.T) {
	ws := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	ws.snapGate = make(chan struct{})
	r := newRigOn(t, Options{}, ws)
	m := r.m
	c := newClient("c1")
	uncommitted := r.watchUncommitted(t, c, "a.txt")

	session := r.changeset(t, protocol.KindSession, nil)
	c.subscribe(t, m, session)
	// A turn boundary waits for the baseline; one whose caller gives up
	// first is told to retry.
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := m.TurnStart(short, r.uri, "t0", "given up")
	cancel()
	if protocol.ReasonOf(err) != protocol.ReasonSessionStarting {
		t.Errorf("turnStart given up before the baseline: err = %v, want reason %s", err, protocol.ReasonSessionStarting)
	}
	started := make(chan error, 1)
	go func() {
		_, err := m.TurnStart(context.Background(), r.uri, "t1", "waits for the baseline")
		started <- err
	}()
	// A round trip through the actor: had the session changeset started,
	// its computation would have been queried by now.
	c.subscribe(t, m, uncommitted)
	c.mu.Lock()
	st := c.stateLocked(session)
	c.mu.Unlock()
	if st.Status != protocol.StatusComputing {
		t.Errorf("session changeset before the baseline: status %q, want %q", st.Status, protocol.StatusComputing)
	}
	for _, q := range ws.queriesMade() {
		if q.View == ViewTrees {
			t.Errorf("a snapshot changeset was computed before the baseline: %+v", q)
		}
	}

	select {
	case err := <-started:
		t.Fatalf("turnStart returned before the baseline: %v", err)
	default:
	}

	close(ws.snapGate)
	if err := <-started; err != nil {
		t.Errorf("turnStart waiting for the baseline: %v", err)
	}
	c.awaitFiles(t, session, ws.root) // the baseline is the tree as it was
	ws.edit("b.txt", "b\n", false)
	c.awaitFiles(t, session, ws.root, "b.txt")
	c.awaitFiles(t, uncommitted, ws.root, "a.txt", "b.txt")
}

// TestScenarioDisposeWhileTakingBaseline: a session disposed after its
// workspaces were opened, while its baseline is taken, closes them once.
func TestScenarioDisposeWhileTakingBaseline(t *testing.T) {
	ws := newFakeWorkspace(t.TempDir(), nil, map[string]string{"a.txt": "a\n"})
	ws.snapGate = make(chan struct{})
	r := newRigOn(t, Options{}, ws)
	m := r.m
	c := newClient("c1")
	r.watchUncommitted(t, c, "a.txt") // opened
	if err := m.Dispose(r.uri); err != nil {
		t.Fatal(err)
	}
	m.Close()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed != 1 {
		t.Errorf("workspace closed %d times, want 1", ws.closed)
	}
}

func TestScenarioDisposeWhileComputing(t *testing.T) {
	r := newRig(t, Options{}, nil, map[string]string{"a.txt": "a\n"})
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	r.ws.mu.Lock()
	r.ws.gate, r.ws.entered = gate, entered
	r.ws.mu.Unlock()
	c := newClient("c1")
	uri := r.changeset(t, protocol.KindUncommitted, nil)
	c.subscribe(t, r.m, uri)
	<-entered // the first computation is under way
	if err := r.m.Dispose(r.uri); err != nil {
		t.Fatal(err)
	}
	c.await(t, "changeset/cleared", func() bool {
		return len(c.envs) > 0 && c.envs[len(c.envs)-1].Action.Action.ActionType() == "changeset/cleared"
	})
	n := c.count()
	close(gate) // the computation ends after its session
	r.m.Close()
	if got := c.sent(uri, n); len(got) != 0 {
		t.Errorf("published %v after changeset/cleared", got)
	}
	if w := r.ws.watching(); w != 0 {
		t.Errorf("%d watches still armed after dispose", w)
	}
	if r.ws.closed != 1 {
		t.Errorf("workspace closed %d times, want 1", r.ws.closed)
	}
}

func TestScenarioDisposeWhileOperating(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt")
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	r.ws.mu.Lock()
	r.ws.writeGate, r.ws.writeEntered = gate, entered
	r.ws.mu.Unlock()
	errc := make(chan error, 1)
	go func() {
		_, err := r.invoke(OpRevert, uri, &protocol.ChangesetOperationTarget{Kind: protocol.ScopeResource, Resource: r.fileURI("a.txt")}, nil)
		errc <- err
	}()
	<-entered
	if err := r.m.Dispose(r.uri); err != nil {
		t.Fatal(err)
	}
	close(gate)
	err := <-errc
	if protocol.CodeOf(err) != protocol.CodeSessionNotFound || !strings.Contains(err.Error(), "disposed while revert ran") {
		t.Errorf("an operation outliving its session: err = %v, want SessionNotFound saying so", err)
	}
	if got, _ := r.ws.file("a.txt"); got != "one\n" {
		t.Errorf("a.txt = %q: what the operation wrote must stay", got)
	}
	if _, err := r.invoke(OpRevert, uri, nil, nil); protocol.CodeOf(err) != protocol.CodeNotFound {
		t.Errorf("an operation on a disposed session: err = %v, want NotFound", err)
	}
}

// What must survive a restart goes to the Store before the client sees
// it, and a Manager restored from it serves the same turns and flags.
func TestScenarioStoreAndRestore(t *testing.T) {
	db, met := newMemStore(), newCountMetrics()
	var clock atomic.Int64 // days added to the real time
	now := func() time.Time { return time.Now().Add(time.Duration(clock.Load()) * 24 * time.Hour) }
	r := newRig(t, Options{Store: db, Metrics: met, Now: now}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "two\n"})
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt")
	db.mu.Lock()
	rec, ok := db.sessions[r.id]
	db.mu.Unlock()
	if !ok || len(rec.Workspaces) != 1 || rec.Workspaces[0].Baseline == "" || rec.Workspaces[0].Dir != r.ws.root {
		t.Fatalf("session record = %+v, %v; want one workspace with its baseline", rec, ok)
	}

	id := r.fileURI("a.txt")
	r.m.Dispatch(c, uri, 1, protocol.ChangesetFilesReviewChanged{Files: []string{id}, Reviewed: true})
	c.await(t, "a.txt reviewed", func() bool { return len(c.stateLocked(uri).Files) == 1 && c.stateLocked(uri).Files[0].IsReviewed() })
	db.mu.Lock()
	if _, ok := db.reviews[uri][id]; !ok {
		t.Errorf("the review flag was echoed but not stored: %v", db.reviews)
	}
	db.fail = errors.New("disk full")
	db.mu.Unlock()
	r.m.Dispatch(c, uri, 2, protocol.ChangesetFilesReviewChanged{Files: []string{id}, Reviewed: false})
	c.awaitRejection(t, 2, "disk full")
	if !c.awaitFilesState(t, uri).Files[0].IsReviewed() {
		t.Error("a toggle that could not be saved changed the flag")
	}
	db.mu.Lock()
	db.fail = nil
	db.mu.Unlock()

	ctx := context.Background()
	if _, err := r.m.TurnStart(ctx, r.uri, "t1", ""); err != nil {
		t.Fatal(err)
	}
	r.ws.edit("c.txt", "c\n", false)
	if _, err := r.m.TurnEnd(ctx, r.uri, "t1"); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	turns := slices.Clone(db.turns[r.id])
	rec = db.sessions[r.id]
	db.mu.Unlock()
	if len(turns) != 2 || turns[0].End != nil || turns[1].End == nil {
		t.Fatalf("stored turns = %+v, want the start then the end of t1", turns)
	}
	met.mu.Lock()
	if met.boundaries["start"] != 1 || met.boundaries["end"] != 1 || met.rejected != 1 || met.actions["changeset/filesReviewChanged"] != 1 {
		t.Errorf("metrics: boundaries %v, rejected %d, actions %v", met.boundaries, met.rejected, met.actions)
	}
	met.mu.Unlock()

	// A second Manager on the same store: what a restart does.
	m2 := NewManager(Options{Store: db, OpenWorkspace: func(string) (Workspace, error) { return r.ws, nil }})
	defer m2.Close()
	if _, err := m2.Restore(rec, turns[1:]); err != nil {
		t.Fatal(err)
	}
	c2 := newClient("c2")
	c2.subscribe(t, m2, uri)
	st := c2.awaitFiles(t, uri, r.ws.root, "a.txt", "c.txt")
	if !fileByPath(t, st, r.ws.root, "a.txt").IsReviewed() {
		t.Error("the review flag did not survive the restart")
	}
	turn := r.changeset(t, protocol.KindTurn, uritemplate.Values{"turnId": "t1"})
	c2.subscribe(t, m2, turn)
	c2.awaitFiles(t, turn, r.ws.root, "c.txt")

	if err := r.m.Dispose(r.uri); err != nil {
		t.Fatal(err)
	}
	// Kept, marked disposed, for DisposedRetention.
	db.mu.Lock()
	kept, ok := db.sessions[r.id]
	reviews := len(db.reviews)
	db.mu.Unlock()
	if !ok || kept.DisposedAt.IsZero() || reviews == 0 {
		t.Errorf("after dispose the store holds the session %v (%+v) and %d reviews; want them kept, marked disposed", ok, kept, reviews)
	}
	clock.Store(8) // more than DisposedRetention later
	r.m.PurgeDisposed()
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.sessions[r.id]; ok || len(db.reviews) != 0 || !slices.Contains(db.deleted, r.id) {
		t.Errorf("once purged the store still holds the session (%v) or its reviews (%v)", ok, db.reviews)
	}
}

// A client that reconnects with its cursor gets exactly the actions it
// missed, and a cursor the replay buffer no longer reaches gets a
// snapshot instead.
func TestScenarioReconnectReplays(t *testing.T) {
	r := newRig(t, Options{ReplayBuffer: 16}, nil, map[string]string{"a.txt": "a\n"})
	uri := r.changeset(t, protocol.KindUncommitted, nil)
	keep := newClient("keep") // stays subscribed, so the channel keeps computing
	keep.subscribe(t, r.m, uri)
	c := newClient("c1")
	c.subscribe(t, r.m, uri)
	c.awaitFiles(t, uri, r.ws.root, "a.txt")
	r.m.Detach(c, uri)
	cursor := r.m.Seq()

	n := keep.count()
	r.ws.edit("b.txt", "b\n", false)
	keep.awaitFiles(t, uri, r.ws.root, "a.txt", "b.txt")
	missed := keep.sent(uri, n)

	attach := func(lastSeen int64) Attachment {
		t.Helper()
		got := make(chan Attachment, 1)
		r.m.Attach(newClient("c1"), uri, lastSeen, func(at Attachment, err error) {
			if err != nil {
				t.Error(err)
			}
			got <- at
		})
		return <-got
	}
	at := attach(cursor)
	var replayed []string
	for _, e := range at.Replay {
		replayed = append(replayed, e.Action.Action.ActionType())
	}
	if !at.CanReplay || !slices.Equal(replayed, missed) {
		t.Errorf("replay after %d = %v (can %v), want what was missed: %v", cursor, replayed, at.CanReplay, missed)
	}

	for i := range 20 { // more than the buffer holds
		r.ws.edit("c.txt", strings.Repeat("c\n", i+1), false)
		keep.await(t, "c.txt at its latest content", func() bool {
			st := keep.stateLocked(uri)
			for _, f := range st.Files {
				if f.ID == r.fileURI("c.txt") && f.Edit.Diff != nil && *f.Edit.Diff.Added == i+1 {
					return st.Status == protocol.StatusReady
				}
			}
			return false
		})
	}
	if at := attach(cursor); at.CanReplay {
		t.Errorf("a cursor %d actions back replayed from a buffer of 16", r.m.Seq()-cursor)
	}
}
