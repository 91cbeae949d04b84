package test

import (
	"encoding/json"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/uritemplate"
)

// A session has a turn channel per turn and a compare channel per pair of
// turns: the daemon drops each once nobody is subscribed, computes it
// again when asked, and a cursor from the dropped one gets a snapshot.
func TestIdleTurnChannelsAreForgotten(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	c := d.client(t, "ide")
	sum := onlySession(t, c)
	cat := catalogue(t, c, sum.Resource)
	var turns []string
	for i, content := range []string{"one\n", "two\n", "three\n"} {
		turns = append(turns, turnStart(t, c, sum.Resource, "turn"))
		writeFile(t, repo, "a.txt", content)
		writeFile(t, repo, "n"+string(rune('0'+i))+".txt", content)
		turnEnd(t, c, sum.Resource)
	}
	channels := func() float64 { return scrapeMetrics(t, d)["changesetd_changeset_channels"] }
	before := channels()

	var uris []string
	for _, from := range append([]string{"baseline"}, turns...) {
		for _, to := range turns {
			if from != to {
				uris = append(uris, expand(t, cat["compare-turns"].URITemplate, uritemplate.Values{"originalTurnId": from, "modifiedTurnId": to}))
			}
		}
	}
	for _, id := range turns {
		uris = append(uris, expand(t, cat["turn"].URITemplate, uritemplate.Values{"turnId": id}))
	}
	var lastSeq int64
	for _, uri := range uris {
		m := mirrorChangeset(t, c, uri)
		m.Wait("ready", ready)
		for _, e := range c.Envelopes(uri) {
			lastSeq = max(lastSeq, e.ServerSeq)
		}
		if err := c.Call(ctx(t), protocol.MethodUnsubscribe, map[string]any{"channel": uri}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if after := channels(); after != before {
		t.Errorf("changeset channels held: %v before, %v after subscribing to and leaving %d turn and compare changesets", before, after, len(uris))
	}

	// Asked for again, it is computed again, with the same files.
	again := mirrorChangeset(t, c, uris[0]).Wait("ready again", ready)
	if got := fileSummary(again); len(got) != 2 {
		t.Errorf("compare baseline..turn 1 after being forgotten = %v, want a.txt and n0.txt", got)
	}

	// A client whose cursor is from the forgotten channel gets a snapshot
	// (the client this daemon knows: an unknown one is told to initialize).
	back := d.dial(t)
	var res reconnectResult
	if err := back.Call(ctx(t), protocol.MethodReconnect, map[string]any{
		"channel": protocol.RootURI, "clientId": "ide", "lastSeenServerSeq": lastSeq, "subscriptions": []string{uris[1]},
	}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Type != "snapshot" || len(res.Snapshots) != 1 {
		t.Fatalf("reconnect to a forgotten channel = %s with %d snapshots, want one snapshot", res.Type, len(res.Snapshots))
	}
	var st protocol.ChangesetState
	json.Unmarshal(res.Snapshots[0].State, &st)
	if st.Status == protocol.StatusReady && len(st.Files) == 0 {
		t.Errorf("snapshot of a forgotten channel claims ready with no files")
	}
}
