package test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

type reconnectResult struct {
	Type      string            `json:"type"`
	Actions   []json.RawMessage `json:"actions"`
	Snapshots []struct {
		Resource string          `json:"resource"`
		State    json.RawMessage `json:"state"`
		FromSeq  int64           `json:"fromSeq"`
	} `json:"snapshots"`
	Missing []string `json:"missing"`
}

func TestReconnectReplaysThenFallsBackToSnapshot(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "changed\n")
	d := startDaemon(t, "--replay-buffer", "8", repo)
	c := d.client(t, "roamer")
	sum := onlySession(t, c)
	uri := expand(t, catalogue(t, c, sum.Resource)["uncommitted"].URITemplate, nil)
	m := mirrorChangeset(t, c, uri)
	st := m.Wait("ready", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 1 })
	fileID := st.Files[0].ID
	var seen int64
	for _, e := range c.Envelopes("") {
		seen = max(seen, e.ServerSeq)
	}
	c.Close()

	// While the client is away, a reviewer on another connection acts.
	other := d.client(t, "other")
	subscribe(t, other, uri)
	other.Notify(protocol.MethodDispatchAction, map[string]any{"channel": uri, "clientSeq": 1, "action": map[string]any{"type": "changeset/filesReviewChanged", "files": []string{fileID}, "reviewed": true}})
	if err := other.Wait(ctx(t), "echo", func() bool {
		for _, e := range other.Envelopes(uri) {
			if e.Origin != nil && e.Origin.ClientSeq == 1 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}

	back := d.dial(t)
	var res reconnectResult
	err := back.Call(ctx(t), protocol.MethodReconnect, map[string]any{
		"channel": protocol.RootURI, "clientId": "roamer", "lastSeenServerSeq": seen,
		"subscriptions": []string{uri, sum.Resource, "ahp-session:/gone"},
	}, &res)
	if err != nil {
		t.Fatal(err)
	}
	if res.Type != "replay" {
		t.Fatalf("reconnect type = %s, want replay", res.Type)
	}
	// The replay holds every action after the cursor, ascending; among
	// them the other reviewer's toggle.
	var review *protocol.ActionEnvelope
	prev := seen
	for _, raw := range res.Actions {
		var env protocol.ActionEnvelope
		json.Unmarshal(raw, &env)
		if env.ServerSeq <= prev {
			t.Errorf("replayed serverSeq %d after %d", env.ServerSeq, prev)
		}
		prev = env.ServerSeq
		if env.Action.ActionType() == "changeset/filesReviewChanged" {
			review = &env
		}
	}
	if review == nil || review.Origin == nil || review.Origin.ClientID != "other" {
		t.Errorf("replay lacks the review toggle: %d actions", len(res.Actions))
	}
	if len(res.Missing) != 1 || res.Missing[0] != "ahp-session:/gone" {
		t.Errorf("missing = %v", res.Missing)
	}
	// The re-established subscription is live.
	other.Notify(protocol.MethodDispatchAction, map[string]any{"channel": uri, "clientSeq": 2, "action": map[string]any{"type": "changeset/filesReviewChanged", "files": []string{fileID}, "reviewed": false}})
	if err := back.Wait(ctx(t), "live action after reconnect", func() bool {
		for _, e := range back.Envelopes(uri) {
			if e.Origin != nil && e.Origin.ClientSeq == 2 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	back.Close()

	// More actions than the replay buffer holds: snapshot instead.
	for i := range 12 {
		other.Notify(protocol.MethodDispatchAction, map[string]any{"channel": uri, "clientSeq": 3 + i, "action": map[string]any{"type": "changeset/filesReviewChanged", "files": []string{fileID}, "reviewed": i%2 == 0}})
	}
	if err := other.Wait(ctx(t), "12 more echoes", func() bool {
		for _, e := range other.Envelopes(uri) {
			if e.Origin != nil && e.Origin.ClientSeq == 14 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	again := d.dial(t)
	res = reconnectResult{}
	if err := again.Call(ctx(t), protocol.MethodReconnect, map[string]any{
		"channel": protocol.RootURI, "clientId": "roamer", "lastSeenServerSeq": seen, "subscriptions": []string{uri},
	}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Type != "snapshot" || len(res.Snapshots) != 1 {
		t.Fatalf("reconnect after a long gap = %s with %d snapshots, want one snapshot", res.Type, len(res.Snapshots))
	}
	var snap protocol.ChangesetState
	json.Unmarshal(res.Snapshots[0].State, &snap)
	// The last toggle (i = 11) set reviewed=false.
	if len(snap.Files) != 1 || snap.Files[0].Reviewed == nil || *snap.Files[0].Reviewed {
		t.Errorf("snapshot files = %+v, want one file with reviewed=false", snap.Files)
	}
	if res.Snapshots[0].FromSeq < seen {
		t.Errorf("snapshot fromSeq %d before the cursor %d", res.Snapshots[0].FromSeq, seen)
	}
}

func TestEnvelopesAreOrderedAcrossChannels(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "b\n")
	d := startDaemon(t, repo)
	c := d.client(t, "watcher")
	sum := onlySession(t, c)
	cat := catalogue(t, c, sum.Resource)
	u1 := expand(t, cat["uncommitted"].URITemplate, nil)
	u2 := expand(t, cat["session"].URITemplate, nil)
	m1, m2 := mirrorChangeset(t, c, u1), mirrorChangeset(t, c, u2)
	m1.Wait("uncommitted ready", ready)
	m2.Wait("session ready", ready)
	for i := range 5 {
		writeFile(t, repo, fmt.Sprintf("f%d.txt", i), "x\n")
	}
	m1.Wait("5 new files", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 6 })
	// The session changeset starts at the session's baseline snapshot, which
	// already had a.txt modified: only the new files are in it.
	m2.Wait("5 new files", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 5 })
	var last int64
	for _, e := range c.Envelopes("") {
		if e.ServerSeq <= last {
			t.Fatalf("connection received serverSeq %d after %d", e.ServerSeq, last)
		}
		last = e.ServerSeq
	}
}
