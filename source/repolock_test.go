package source

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/changesetd/changesetd/scm/snapstore"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/store"
)

// A session on a repository and sessions on directories inside it write
// one index and one tree: they have one key, and a linked worktree, with
// an index of its own, has another.
func TestIndexDirIsPerRepository(t *testing.T) {
	dir := newRepo(t)
	top := openGit(t, dir).IndexDir()
	if sub := openGit(t, filepath.Join(dir, "dir", "sub")).IndexDir(); sub != top {
		t.Errorf("a session on dir/sub locks %q, the repository's top %q", sub, top)
	}
	if top != filepath.Join(dir, ".git") {
		t.Errorf("IndexDir = %q, want the repository's .git", top)
	}
	linked := filepath.Join(t.TempDir(), "linked")
	gitRun(t, dir, "worktree", "add", "-q", "-b", "side", linked)
	if l := openGit(t, linked).IndexDir(); l == top {
		t.Errorf("a linked worktree shares its main worktree's key %q", l)
	}
}

// gatedUndos is a store whose PutUndo of a pending undo, which a revert
// makes while it holds its repository's lock and before its first write,
// names the revert's file and waits for the test.
type gatedUndos struct {
	*store.DB
	arrived chan string
	release chan struct{}
}

func (g *gatedUndos) PutUndo(sessionID string, u store.Undo) error {
	if u.Pending && len(u.Before) > 0 {
		g.arrived <- u.Before[0].Path
		<-g.release
	}
	return g.DB.PutUndo(sessionID, u)
}

// mirrors subscribes to changesets and keeps their states.
type mirrors struct {
	mu      sync.Mutex
	st      map[string]protocol.ChangesetState
	changed chan struct{}
}

func (w *mirrors) ClientID() string            { return "lock-test" }
func (w *mirrors) Version() string             { return "1.0.0" }
func (w *mirrors) Notify(method string, _ any) {}
func (w *mirrors) Send(env *session.Envelope) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, _ := reducer.ApplyChangeset(w.st[env.Channel], env.Action.Action, reducer.Env{})
	w.st[env.Channel] = st
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *mirrors) attach(t *testing.T, m *session.Manager, uri string) {
	t.Helper()
	errc := make(chan error, 1)
	m.Attach(w, uri, -1, func(at session.Attachment, err error) {
		if err == nil {
			w.mu.Lock()
			w.st[uri], _ = at.Snapshot.State.(protocol.ChangesetState)
			w.mu.Unlock()
		}
		errc <- err
	})
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func (w *mirrors) await(ctx context.Context, t *testing.T, what, uri string, cond func(protocol.ChangesetState) bool) {
	t.Helper()
	for {
		w.mu.Lock()
		ok, ch := cond(w.st[uri]), w.changed
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

func revertStatus(st protocol.ChangesetState) string {
	for _, o := range st.Operations {
		if o.ID == "revert" {
			return o.Status
		}
	}
	return ""
}

// Operations of sessions on one repository, on its top and on
// directories inside it, run one at a time in the order they reached
// their sessions: three reverts, the first held while it holds the lock
// and the others sent meanwhile, each start only once the one before
// finished.
func TestOperationsOfOneRepositoryRunInArrivalOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "alpha edited\n")
	writeFile(t, dir, "dir/c.txt", "charlie edited\n")
	writeFile(t, dir, "dir/sub/d.txt", "delta edited\n")

	db, err := store.Open(filepath.Join(t.TempDir(), "state.db"))
	must(t, err)
	defer db.Close()
	snaps, err := snapstore.Open(t.TempDir())
	must(t, err)
	defer snaps.Close()
	g := &gatedUndos{DB: db, arrived: make(chan string, 3), release: make(chan struct{})}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := session.NewManager(session.Options{Logger: log, OpenWorkspace: Opener(log, snaps), Store: g})
	defer m.Close()
	// On a failure, reverts still held at the gate go on, so that Close
	// does not wait for them forever.
	defer close(g.release)

	w := &mirrors{st: map[string]protocol.ChangesetState{}, changed: make(chan struct{})}
	type op struct {
		session, dir, file string
		uri                string
	}
	ops := []*op{
		{session: "top", dir: dir, file: "a.txt"},
		{session: "sub", dir: filepath.Join(dir, "dir"), file: "dir/c.txt"},
		{session: "subsub", dir: filepath.Join(dir, "dir", "sub"), file: "dir/sub/d.txt"},
	}
	for _, o := range ops {
		if _, err := m.Create(session.CreateParams{URI: "ahp-session:/" + o.session, WorkingDirectories: []string{session.FileURI(o.dir)}}); err != nil {
			t.Fatal(err)
		}
		o.uri = "ahp-changeset:/" + o.session + "/changeset/uncommitted"
	}
	for _, o := range ops {
		w.attach(t, m, o.uri)
		id := session.FileURI(filepath.Join(dir, filepath.FromSlash(o.file)))
		w.await(ctx, t, o.file+" offered for revert", o.uri, func(st protocol.ChangesetState) bool {
			has := false
			for _, f := range st.Files {
				has = has || f.ID == id
			}
			return st.Status == protocol.StatusReady && has && revertStatus(st) == protocol.OpIdle
		})
	}

	results := make([]chan error, len(ops))
	invoke := func(i int) {
		o := ops[i]
		results[i] = make(chan error, 1)
		id := session.FileURI(filepath.Join(dir, filepath.FromSlash(o.file)))
		go func() {
			_, err := m.Invoke(ctx, protocol.InvokeChangesetOperationParams{
				BaseParams:  protocol.BaseParams{Channel: o.uri},
				OperationID: "revert",
				Target:      &protocol.ChangesetOperationTarget{Kind: protocol.ScopeResource, Resource: id},
			})
			results[i] <- err
		}()
	}
	next := func() string {
		t.Helper()
		select {
		case p := <-g.arrived:
			return p
		case <-ctx.Done():
			t.Fatal("no revert reached its first write")
			return ""
		}
	}

	invoke(0)
	if p := next(); p != "a.txt" {
		t.Fatalf("first revert kept %s", p)
	}
	// The others reach their sessions while the first holds the lock:
	// each is running (queued) once its status says so.
	for i := 1; i < len(ops); i++ {
		invoke(i)
		w.await(ctx, t, ops[i].file+" revert running", ops[i].uri, func(st protocol.ChangesetState) bool {
			return revertStatus(st) == protocol.OpRunning
		})
	}
	for i, o := range ops {
		if i > 0 {
			if p := next(); p != o.file {
				t.Fatalf("revert %d kept %s, want %s: the lock is not granted in arrival order", i, p, o.file)
			}
		}
		// Nothing else started while this one holds the lock.
		select {
		case p := <-g.arrived:
			t.Fatalf("the revert of %s started while the one of %s held the repository", p, o.file)
		default:
		}
		g.release <- struct{}{}
		if err := <-results[i]; err != nil {
			t.Fatalf("revert %s: %v", o.file, err)
		}
	}
	if out := gitRun(t, dir, "status", "--porcelain"); out != "" {
		t.Errorf("after the reverts git status says:\n%s", out)
	}
}
