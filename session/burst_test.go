package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// editAll changes many working files at once and reports them to every
// watch in one event, as a watcher's quiet window would.
func (w *fakeWorkspace) editAll(files map[string]string) {
	w.mu.Lock()
	var paths []string
	for p, c := range files {
		w.work[p] = c
		paths = append(paths, p)
	}
	var fs []*fakeWatcher
	for f := range w.watchers {
		fs = append(fs, f)
	}
	w.mu.Unlock()
	for _, f := range fs {
		f.onChange(paths, false)
	}
}

// filesCarried counts the files the actions after the first n envelopes
// on uri carry: one per fileSet or fileRemoved, the list of a
// contentChanged.
func (c *client) filesCarried(uri string, n int) (files int, types map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	types = map[string]int{}
	for _, e := range c.envs[min(n, len(c.envs)):] {
		if e.Channel != uri {
			continue
		}
		types[e.Action.Action.ActionType()]++
		switch a := e.Action.Action.(type) {
		case protocol.ChangesetFileSet, protocol.ChangesetFileRemoved:
			files++
		case protocol.ChangesetContentChanged:
			files += len(a.Files)
		}
	}
	return files, types
}

// awaitCount waits until the client's view of uri is ready with n files.
func awaitCount(t *testing.T, c *client, uri string, n int) {
	t.Helper()
	c.await(t, fmt.Sprintf("%d files, ready", n), func() bool {
		st := c.stateLocked(uri)
		return st.Status == protocol.StatusReady && len(st.Files) == n
	})
}

func burstTree(n, modified int) (head, work map[string]string, paths []string) {
	head, work = map[string]string{}, map[string]string{}
	for i := range n {
		p := fmt.Sprintf("d%02d/f%05d.go", i%50, i)
		head[p] = "package x\n"
		work[p] = head[p]
		if i < modified {
			work[p] += "// modified\n"
			paths = append(paths, p)
		}
	}
	return head, work, paths
}

// A burst spread over several refreshes, each a few hundred files in a
// list of more, reaches subscribers as the files that changed: fileSet
// actions, not the whole list again with every refresh. What the client
// ends with is what a fresh subscriber gets.
func TestBurstPublishesDeltasNotTheList(t *testing.T) {
	head, work, modified := burstTree(6000, 1500)
	r := newRig(t, Options{}, head, work)
	c := newClient("c")
	uri := r.changeset(t, protocol.KindUncommitted, nil)
	c.subscribe(t, r.m, uri)
	awaitCount(t, c, uri, len(modified))

	n0 := c.count()
	changed := 0
	for round := range 6 {
		files := map[string]string{}
		for i := range 300 {
			p := fmt.Sprintf("d%02d/f%05d.go", (1500+round*300+i)%50, 1500+round*300+i)
			files[p] = "package x\n// burst\n"
		}
		changed += len(files)
		r.ws.editAll(files)
		awaitCount(t, c, uri, 1500+changed)
	}
	carried, types := c.filesCarried(uri, n0)
	if types["changeset/contentChanged"] > 0 {
		t.Errorf("the burst sent %d contentChanged (the whole list); want fileSet deltas: %v", types["changeset/contentChanged"], types)
	}
	if carried > changed*12/10 {
		t.Errorf("the burst of %d files carried %d files to the subscriber (> 1.2×): %v", changed, carried, types)
	}
	fresh := newClient("fresh")
	fresh.subscribe(t, r.m, uri)
	c.mu.Lock()
	got, _ := json.Marshal(c.stateLocked(uri))
	c.mu.Unlock()
	fresh.mu.Lock()
	want, _ := json.Marshal(fresh.stateLocked(uri))
	fresh.mu.Unlock()
	if string(got) != string(want) {
		t.Errorf("the subscriber's state after the burst differs from a fresh snapshot")
	}
}

// When most of the list changes at once (a checkout), one contentChanged
// with the new list is smaller than the deltas and is what goes out.
func TestCheckoutPublishesTheList(t *testing.T) {
	head, work, modified := burstTree(2000, 100)
	r := newRig(t, Options{}, head, work)
	c := newClient("c")
	uri := r.changeset(t, protocol.KindUncommitted, nil)
	c.subscribe(t, r.m, uri)
	awaitCount(t, c, uri, len(modified))
	n0 := c.count()
	files := map[string]string{}
	for i := 100; i < 1100; i++ {
		files[fmt.Sprintf("d%02d/f%05d.go", i%50, i)] = "package y\n"
	}
	r.ws.editAll(files)
	awaitCount(t, c, uri, 1100)
	if _, types := c.filesCarried(uri, n0); types["changeset/contentChanged"] != 1 || types["changeset/fileSet"] != 0 {
		t.Errorf("a change of most of the list sent %v; want one contentChanged", types)
	}
}

// A series of checkouts, each changing a thousand files one way and then
// back, keeps each channel's replay ring within its byte budget (it kept
// 1024 envelopes whatever their size, up to 1024 file lists), and the
// ring still replays what fits.
func TestRingsStayWithinBytesUnderCheckouts(t *testing.T) {
	const budget = 256 << 10
	head, work, _ := burstTree(3000, 0)
	r := newRig(t, Options{ReplayBytes: budget}, head, work)
	c := newClient("c")
	uri := r.changeset(t, protocol.KindUncommitted, nil)
	c.subscribe(t, r.m, uri)
	awaitCount(t, c, uri, 0)
	s, _ := r.m.Session(r.uri)
	ringBytes := func() int64 {
		n, err := query(t.Context(), s, func() (int64, error) { return s.changesets[uri].ch.RingBytes(), nil })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var most int64
	for round := range 4 {
		files := map[string]string{}
		for i := range 1000 {
			files[fmt.Sprintf("d%02d/f%05d.go", i%50, i)] = fmt.Sprintf("package x\n// round %d\n", round)
		}
		r.ws.editAll(files)
		awaitCount(t, c, uri, 1000)
		most = max(most, ringBytes())
		back := map[string]string{}
		for p := range files {
			back[p] = head[p]
		}
		r.ws.editAll(back)
		awaitCount(t, c, uri, 0)
		most = max(most, ringBytes())
	}
	if most > budget {
		t.Errorf("a replay ring held %d bytes, over its budget of %d", most, budget)
	}
	if most == 0 {
		t.Error("the ring held nothing: the test publishes nothing it can keep")
	}
	// What fits is still replayed: a reconnect from the latest action.
	done := make(chan Attachment, 1)
	r.m.Attach(newClient("late"), uri, r.m.Seq()-1, func(at Attachment, err error) {
		if err != nil {
			t.Error(err)
		}
		done <- at
	})
	if at := <-done; !at.CanReplay || len(at.Replay) != 1 {
		t.Errorf("replay after the last but one action: %d envelopes, can replay %v; want the last", len(at.Replay), at.CanReplay)
	}
}

// patchingWorkspace is a fakeWorkspace whose changes have a patch text
// naming the file's new content.
type patchingWorkspace struct{ *fakeWorkspace }

func (w patchingWorkspace) Changes(ctx context.Context, q Query) (*ChangeList, error) {
	l, err := w.fakeWorkspace.Changes(ctx, q)
	if l != nil {
		for i := range l.Files {
			if fc := &l.Files[i]; fc.New != nil {
				fc.Patch = "patch of " + fc.New.Path + " at " + fc.New.OID + "\n"
			}
		}
	}
	return l, err
}

// A file rewritten again and again: a client holding the version before
// the current one can still read its patch (for a while), so a read that
// lands just after the next refresh does not get Conflict.
func TestPatchOneVersionBehindIsReadable(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ws := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "1\n"}, map[string]string{"a.txt": "2\n"})
	r := newRigOn(t, Options{Now: clock, OpenWorkspace: func(string) (Workspace, error) { return patchingWorkspace{ws}, nil }}, ws)
	c := newClient("c")
	uri := r.changeset(t, protocol.KindUncommitted, nil)
	c.subscribe(t, r.m, uri)
	patchURI := func() string {
		var u string
		c.await(t, "a.txt with a patch", func() bool {
			st := c.stateLocked(uri)
			if st.Status != protocol.StatusReady || len(st.Files) != 1 {
				return false
			}
			own, _ := st.Files[0].Meta["changesetd"].(protocol.Object)
			u, _ = own[metaPatchURI].(string)
			return u != ""
		})
		return u
	}
	read := func(u string) (string, error) {
		b, _, err := r.m.FilePatch(t.Context(), u)
		return string(b), err
	}
	next := func(prev, content string) string {
		r.ws.edit("a.txt", content, false)
		var u string
		c.await(t, "a new version of a.txt", func() bool {
			st := c.stateLocked(uri)
			if st.Status != protocol.StatusReady || len(st.Files) != 1 {
				return false
			}
			own, _ := st.Files[0].Meta["changesetd"].(protocol.Object)
			u, _ = own[metaPatchURI].(string)
			return u != "" && u != prev
		})
		return u
	}
	v1 := patchURI()
	p1, err := read(v1)
	if err != nil || !strings.HasPrefix(p1, "patch of a.txt") {
		t.Fatalf("the current patch: %q, %v", p1, err)
	}
	v2 := next(v1, "3\n")
	if got, err := read(v1); err != nil || got != p1 {
		t.Errorf("the patch one version behind: %q, %v; want %q", got, err, p1)
	}
	if got, err := read(v2); err != nil || got == p1 {
		t.Errorf("the current patch: %q, %v", got, err)
	}
	v3 := next(v2, "4\n")
	if _, err := read(v1); err == nil {
		t.Error("the patch two versions behind was served")
	}
	if _, err := read(v2); err != nil {
		t.Errorf("the patch one version behind: %v", err)
	}
	mu.Lock()
	now = now.Add(patchGrace + time.Second)
	mu.Unlock()
	if _, err := read(v2); err == nil {
		t.Error("the previous patch is still served after its grace period")
	}
	if _, err := read(v3); err != nil {
		t.Errorf("the current patch: %v", err)
	}
}

// pathSet.under answers as underAny does.
func TestPathSetIsUnderAny(t *testing.T) {
	paths := []string{"a", "b/c", "d/e/f.txt", "g.txt"}
	ps := newPathSet(paths)
	for _, o := range []fileOrigin{
		{to: &FileVersion{Path: "a"}}, {to: &FileVersion{Path: "a/x/y"}}, {to: &FileVersion{Path: "ab"}},
		{to: &FileVersion{Path: "b"}}, {to: &FileVersion{Path: "b/c/d"}}, {to: &FileVersion{Path: "b/cd"}},
		{to: &FileVersion{Path: "d/e/f.txt"}}, {to: &FileVersion{Path: "d/e"}}, {to: &FileVersion{Path: "g.txt"}},
		{from: &FileVersion{Path: "g.txt"}, to: &FileVersion{Path: "z/new.txt"}}, {from: &FileVersion{Path: "q.txt"}},
		{from: &FileVersion{Path: "a/old"}},
	} {
		if got, want := ps.under(o), underAny(o, paths); got != want {
			t.Errorf("%s (old %q): under %v, underAny %v", o.path(), o.old(), got, want)
		}
	}
}

// gatedPatchWorkspace holds every whole-changeset patch computation
// (a query with MaxPatchBytes) until its gate is closed, counting those
// that entered.
type gatedPatchWorkspace struct {
	*fakeWorkspace
	gate    chan struct{}
	entered *atomic.Int32
}

func (w gatedPatchWorkspace) Changes(ctx context.Context, q Query) (*ChangeList, error) {
	if q.MaxPatchBytes > 0 {
		w.entered.Add(1)
		select {
		case <-w.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return w.fakeWorkspace.Changes(ctx, q)
}

// Whole-changeset patches are computed one at a time: each may hold its
// limit in patches, so four readers at once must not hold four times it.
func TestWholePatchesTakeTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ws := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "1\n"}, map[string]string{"a.txt": "2\n"})
		var entered atomic.Int32
		gw := gatedPatchWorkspace{ws, make(chan struct{}), &entered}
		r := newRigOn(t, Options{OpenWorkspace: func(string) (Workspace, error) { return gw, nil }}, ws)
		uri := r.changeset(t, protocol.KindUncommitted, nil)
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				_, err := r.m.ChangesetPatch(t.Context(), uri, MaxChangesetPatchBytes)
				errs <- err
			}()
		}
		synctest.Wait() // every reader is in, or waiting its turn
		if n := entered.Load(); n != 1 {
			t.Errorf("%d whole-patch computations at once, want 1", n)
		}
		close(gw.gate)
		for range 4 {
			if err := <-errs; err != nil {
				t.Errorf("a whole patch: %v", err)
			}
		}
		if n := entered.Load(); n != 4 {
			t.Errorf("%d computations in all, want 4", n)
		}
	})
}
