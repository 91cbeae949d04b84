package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestNodeSlowReaderIsCaughtUp: a client written in JavaScript, keeping
// its state with the review page's reducer, barely reads its socket
// while a burst of thousands of saves is published under a small send
// queue. The daemon drops its backlog and catches it up instead of
// closing it; once it reads again, what it holds is what a fresh
// subscriber's snapshot holds.
func TestNodeSlowReaderIsCaughtUp(t *testing.T) {
	t.Parallel()
	node := nodeOrSkip(t)

	n, before := 6000, 3000
	if raceEnabled {
		n, before = 3000, 1500
	}
	repo, name := burstRepo(t, n, before)
	d := startDaemon(t, "--send-queue", "8", repo)
	c := d.client(t, "watcher")
	uri := expand(t, catalogue(t, c, onlySession(t, c).Resource)["uncommitted"].URITemplate, nil)
	m := newListMirror(t, c, uri)
	if err := c.Wait(ctx(t), fmt.Sprintf("%d files", before), func() bool { k, ok := m.count(); return ok && k == before }); err != nil {
		t.Fatal(err)
	}

	p := startNode(t, node, "catchup.mjs", d.URL, uri)
	lines := bufio.NewScanner(p.stdout)
	next := func(what string) string {
		t.Helper()
		if !lines.Scan() {
			err := lines.Err()
			t.Fatalf("node client ended before %s: %v\n%s", what, err, p.kill())
		}
		l := lines.Text()
		if strings.HasPrefix(l, "FAIL") {
			t.Fatalf("node client: %s\n%s", l, p.kill())
		}
		return l
	}
	if l := next("its snapshot"); l != fmt.Sprintf("subscribed %d", before) {
		t.Fatalf("node client: %q, want its snapshot of %d files", l, before)
	}

	caughtUp := func() float64 { return scrapeMetrics(t, d)["changesetd_slow_client_catch_ups_total"] }
	if k := caughtUp(); k != 0 {
		t.Fatalf("%v catch-ups before the burst", k)
	}
	for i := before; i < n; i++ {
		writeFile(t, repo, name(i), "one\n2\nthree\n")
	}
	if err := waitLong(c, fmt.Sprintf("%d files", n), func() bool { k, ok := m.count(); return ok && k == n }); err != nil {
		t.Fatal(err)
	}
	// The node client has read a trickle meanwhile: its backlog passed
	// the send queue, and the daemon catches it up once it has drained
	// what was written before.
	if _, err := io.WriteString(p.stdin, "read\n"); err != nil {
		t.Fatal(err)
	}

	fresh := d.client(t, "fresh")
	raw, _ := subscribe(t, fresh, uri)
	var st protocol.ChangesetState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != protocol.StatusReady || len(st.Files) != n {
		t.Fatalf("the fresh snapshot has %d files, %s", len(st.Files), st.Status)
	}
	want := filepath.Join(t.TempDir(), "want.json")
	b, _ := json.Marshal(st.Files)
	if err := os.WriteFile(want, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p.stdin, "want "+want+"\n"); err != nil {
		t.Fatal(err)
	}
	l := next("its copy to equal the fresh snapshot")
	if !strings.HasPrefix(l, "ok ") {
		t.Fatalf("node client: %q", l)
	}
	if k := caughtUp(); k < 1 || strings.Contains(l, " 0 contentChanged") {
		t.Errorf("node client: %q, %v catch-ups: none reached it", l, k)
	}
	if d.stderr.contains("send queue overflow") {
		t.Errorf("a subscriber was disconnected as too slow:\n%s", d.stderr)
	}
	t.Log(l)
}
