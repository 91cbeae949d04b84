package test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

// listMirror is a changeset as a client that indexes its list keeps it,
// applying each action as it arrives (a client re-reducing everything on
// every frame would measure itself, not the daemon).
type listMirror struct {
	mu     sync.Mutex
	uri    string
	files  []*protocol.ChangesetFile // nil: removed
	at     map[string]int
	live   int
	status string
	last   int64
}

func newListMirror(t *testing.T, c *fake.Client, uri string) *listMirror {
	t.Helper()
	raw, from := subscribe(t, c, uri)
	var st protocol.ChangesetState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	m := &listMirror{uri: uri, last: from}
	m.reset(st.Files)
	m.status = st.Status
	c.Listen(m.apply)
	return m
}

func (m *listMirror) reset(files []protocol.ChangesetFile) {
	m.files, m.at, m.live = nil, map[string]int{}, 0
	for i := range files {
		m.set(files[i])
	}
}

func (m *listMirror) set(f protocol.ChangesetFile) {
	if i, ok := m.at[f.ID]; ok {
		m.files[i] = &f
		return
	}
	m.at[f.ID] = len(m.files)
	m.files = append(m.files, &f)
	m.live++
}

func (m *listMirror) apply(n *fake.Message) {
	if n.Method != protocol.NotifyAction {
		return
	}
	var e protocol.ActionEnvelope
	if json.Unmarshal(n.Params, &e) != nil || e.Channel != m.uri || e.RejectionReason != "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.ServerSeq <= m.last {
		panic(fmt.Sprintf("serverSeq %d after %d", e.ServerSeq, m.last))
	}
	m.last = e.ServerSeq
	switch a := e.Action.Action.(type) {
	case protocol.ChangesetFileSet:
		m.set(a.File)
	case protocol.ChangesetFileRemoved:
		if i, ok := m.at[a.FileID]; ok {
			m.files[i] = nil
			delete(m.at, a.FileID)
			m.live--
		}
	case protocol.ChangesetContentChanged:
		m.reset(a.Files)
	case protocol.ChangesetStatusChanged:
		m.status = a.Status
	case protocol.ChangesetCleared:
		m.reset(nil)
	}
}

// count is how many files the mirror holds and whether it is ready.
func (m *listMirror) count() (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live, m.status == protocol.StatusReady
}

// list is the mirror's files in order, encoded.
func (m *listMirror) list() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var files []protocol.ChangesetFile
	for _, f := range m.files {
		if f != nil {
			files = append(files, *f)
		}
	}
	b, _ := json.Marshal(files)
	return string(b)
}

// TestSlowReaderConvergesToTheSnapshot: a burst of thousands of files,
// under a small send queue, reaches a client that takes its frames in
// slowly as a catch-up, never a disconnect, and what the client ends with
// is exactly what a fresh subscriber's snapshot holds.
func TestSlowReaderConvergesToTheSnapshot(t *testing.T) {
	t.Parallel()
	n, before := 10000, 6000
	if raceEnabled {
		n, before = 2500, 1500
	}
	repo, name := burstRepo(t, n, before)
	d := startDaemon(t, "--send-queue", "64", repo)
	fast := d.client(t, "fast")
	uri := expand(t, catalogue(t, fast, onlySession(t, fast).Resource)["uncommitted"].URITemplate, nil)
	slow := d.client(t, "slow")
	slow.SetReadDelay(time.Millisecond)
	mirrors := map[*fake.Client]*listMirror{}
	names := map[*fake.Client]string{fast: "fast", slow: "slow"}
	for _, c := range []*fake.Client{fast, slow} {
		m := newListMirror(t, c, uri)
		mirrors[c] = m
		err := c.Wait(ctx(t), fmt.Sprintf("%d files", before), func() bool { k, ok := m.count(); return ok && k == before })
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := before; i < n; i++ {
		writeFile(t, repo, name(i), "one\n2\nthree\n")
	}
	for c, m := range mirrors {
		if err := waitLong(c, fmt.Sprintf("%d files", n), func() bool { k, ok := m.count(); return ok && k == n }); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing changes any more: a fresh subscriber's snapshot is the
	// final state, and the slow reader must hold exactly it.
	fresh := d.client(t, "fresh")
	raw, _ := subscribe(t, fresh, uri)
	var st protocol.ChangesetState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(st.Files)
	if st.Status != protocol.StatusReady || len(st.Files) != n {
		t.Fatalf("the fresh snapshot has %d files, %s", len(st.Files), st.Status)
	}
	for c, m := range mirrors {
		if got := m.list(); got != string(want) {
			t.Errorf("client %s holds a list that differs from the fresh snapshot (%d vs %d bytes)", names[c], len(got), len(want))
		}
		if closed, code, reason := c.Closed(); closed {
			t.Errorf("client %s was disconnected: %d %s", names[c], code, reason)
		}
	}
	if d.stderr.contains("send queue overflow") {
		t.Errorf("a subscriber was disconnected as too slow:\n%s", d.stderr)
	}
	t.Logf("catch-ups: %d", strings.Count(d.stderr.String(), "backlog on a channel is replaced"))
}

// burstRepo is a repository of n committed files, name(i) each, the
// first before of them changed: most of the list is there before a burst
// that changes the others, so the burst goes out as fileSet deltas
// (hundreds of frames), not as one list.
func burstRepo(t *testing.T, n, before int) (repo string, name func(int) string) {
	t.Helper()
	repo = t.TempDir()
	if real, err := filepath.EvalSymlinks(repo); err == nil {
		repo = real
	}
	git(t, repo, "init", "-q", "-b", "main")
	name = func(i int) string { return fmt.Sprintf("d%02d/f%05d.txt", i%50, i) }
	for i := range n {
		writeFile(t, repo, name(i), "one\ntwo\n")
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	for i := range before {
		writeFile(t, repo, name(i), "one\n2\n")
	}
	return repo, name
}

// waitLong waits for cond for up to three minutes: a burst under the race
// detector on a loaded machine takes a while; nothing is timed.
func waitLong(c *fake.Client, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return c.Wait(ctx, what, cond)
}
