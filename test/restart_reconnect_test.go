package test

import (
	"encoding/json"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestReconnectAcrossRestart: serverSeq is not reused by the next run of
// the daemon, and a client of the previous run is not resumed with a
// replay of this run's buffer that would leave its mirror wrong: its
// reconnect is NotFound (the new run does not know it), and the
// initialize it sends instead brings snapshots numbered above its old
// cursor.
func TestReconnectAcrossRestart(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "b\n")
	d := startDaemon(t, repo)
	c := d.client(t, "restarter")
	sum := onlySession(t, c)
	uri := expand(t, catalogue(t, c, sum.Resource)["uncommitted"].URITemplate, nil)
	_, seen := subscribe(t, c, uri)
	if err := c.Wait(ctx(t), "the changeset ready", func() bool {
		for _, e := range c.Envelopes(uri) {
			seen = max(seen, e.ServerSeq)
			if sc, ok := e.Action.Action.(protocol.ChangesetStatusChanged); ok && sc.Status == protocol.StatusReady {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}

	writeFile(t, repo, "b.txt", "new\n")
	d2 := startDaemonIn(t, d.StateDir, repo)
	back := d2.dial(t)
	err := back.Call(ctx(t), protocol.MethodReconnect, map[string]any{
		"channel": protocol.RootURI, "clientId": "restarter", "lastSeenServerSeq": seen, "subscriptions": []string{uri},
	}, nil)
	if rpcCode(err) != protocol.CodeNotFound {
		t.Fatalf("reconnect after a restart: %v, want NotFound", err)
	}
	res, err := back.Initialize(ctx(t), "restarter", []string{uri})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Snapshots) != 1 {
		t.Fatalf("initialize after a restart: %d snapshots, want one", len(res.Snapshots))
	}
	if res.Snapshots[0].FromSeq <= seen {
		t.Errorf("the new run's serverSeq %d is not above the old run's %d", res.Snapshots[0].FromSeq, seen)
	}
	var snap protocol.ChangesetState
	raw, _ := json.Marshal(res.Snapshots[0].State)
	json.Unmarshal(raw, &snap)
	if snap.Status == protocol.StatusReady && len(snap.Files) != 2 {
		t.Errorf("snapshot files = %d, want a.txt and b.txt", len(snap.Files))
	}
}
