package test

import (
	"encoding/json"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestReconnectAcrossRestart: serverSeq is not reused by the next run of
// the daemon, and a reconnect with a cursor from the previous run gets a
// snapshot of the current state, not a replay of this run's buffer that
// would leave the client's mirror wrong.
func TestReconnectAcrossRestart(t *testing.T) {
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
	var res reconnectResult
	if err := back.Call(ctx(t), protocol.MethodReconnect, map[string]any{
		"channel": protocol.RootURI, "clientId": "restarter", "lastSeenServerSeq": seen, "subscriptions": []string{uri},
	}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Type != "snapshot" || len(res.Snapshots) != 1 {
		t.Fatalf("reconnect after a restart = %s with %d snapshots, want one snapshot", res.Type, len(res.Snapshots))
	}
	if res.Snapshots[0].FromSeq <= seen {
		t.Errorf("the new run's serverSeq %d is not above the old run's %d", res.Snapshots[0].FromSeq, seen)
	}
	var snap protocol.ChangesetState
	json.Unmarshal(res.Snapshots[0].State, &snap)
	if snap.Status == protocol.StatusReady && len(snap.Files) != 2 {
		t.Errorf("snapshot files = %d, want a.txt and b.txt", len(snap.Files))
	}
}
