package test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

func notesOf(c *fake.Client, method string) []json.RawMessage {
	var out []json.RawMessage
	for _, n := range c.Notes() {
		if n.Method == method {
			out = append(out, n.Params)
		}
	}
	return out
}

func TestCreateAndDisposeSession(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "b\n")
	d := startDaemon(t)
	watcher := d.client(t, "list-watcher")
	subscribe(t, watcher, protocol.RootURI)

	c := d.client(t, "creator")
	const uri = "ahp-session:/3f2a9c1e-0000-4000-8000-000000000001"
	if err := c.Call(ctx(t), protocol.MethodCreateSession, map[string]any{"channel": uri, "workingDirectories": []string{"file://" + repo}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := watcher.Wait(ctx(t), "root/sessionAdded", func() bool { return len(notesOf(watcher, protocol.NotifySessionAdded)) == 1 }); err != nil {
		t.Fatal(err)
	}
	var added protocol.SessionAddedParams
	json.Unmarshal(notesOf(watcher, protocol.NotifySessionAdded)[0], &added)
	if added.Summary.Resource != uri || added.Channel != protocol.RootURI {
		t.Errorf("sessionAdded = %+v", added)
	}
	cs := expand(t, catalogue(t, c, uri)["uncommitted"].URITemplate, nil)
	m := mirrorChangeset(t, c, cs)
	m.Wait("one file", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 1 })
	// The summary now carries counts, pushed to root subscribers.
	if err := watcher.Wait(ctx(t), "summary counts", func() bool {
		for _, p := range notesOf(watcher, protocol.NotifySessionSummaryChanged) {
			var sc struct {
				Changes struct {
					Changes protocol.ChangesSummary `json:"changes"`
				} `json:"changes"`
			}
			json.Unmarshal(p, &sc)
			if f := sc.Changes.Changes.Files; f != nil && *f == 1 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}

	if err := c.Call(ctx(t), protocol.MethodDisposeSession, map[string]any{"channel": uri}, nil); err != nil {
		t.Fatal(err)
	}
	m.Wait("cleared", func(st protocol.ChangesetState) bool { return len(st.Files) == 0 })
	if err := watcher.Wait(ctx(t), "root/sessionRemoved", func() bool { return len(notesOf(watcher, protocol.NotifySessionRemoved)) == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx(t), protocol.MethodSubscribe, map[string]any{"channel": cs}, nil); rpcCode(err) != protocol.CodeNotFound {
		t.Errorf("subscribe after dispose: %v, want -32008", err)
	}
	var list protocol.ListSessionsResult
	c.Call(ctx(t), protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &list)
	if len(list.Items) != 0 {
		t.Errorf("listSessions after dispose: %d items", len(list.Items))
	}
	var res reconnectResult
	fresh := d.dial(t)
	fresh.Call(ctx(t), protocol.MethodReconnect, map[string]any{"channel": protocol.RootURI, "clientId": "creator", "lastSeenServerSeq": 0, "subscriptions": []string{cs, uri}}, &res)
	if len(res.Missing) != 2 {
		t.Errorf("reconnect to a disposed session: missing = %v, want both", res.Missing)
	}
}

func TestSessionIDStableAcrossRestart(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d1 := startDaemon(t, repo)
	first := onlySession(t, d1.client(t, "x")).Resource
	d1.stop()
	d2 := startDaemon(t, repo)
	if second := onlySession(t, d2.client(t, "x")).Resource; second != first {
		t.Errorf("session id changed across restarts: %s then %s", first, second)
	}
}

func TestGracefulShutdownSendsCloseFrames(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	c := d.client(t, "stayer")
	if err := d.stop(); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	c.Wait(ctx(t), "close", func() bool { closed, _, _ := c.Closed(); return closed })
	if _, code, _ := c.Closed(); code != websocket.CloseGoingAway {
		t.Errorf("close code %d, want %d (going away)", code, websocket.CloseGoingAway)
	}
}

func TestLegacyClientNeverSeesRecomputing(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	old := d.dial(t)
	if res, err := old.Initialize(ctx(t), "old-ide", nil, "0.7.0"); err != nil || res.ProtocolVersion != "0.7.0" {
		t.Fatalf("initialize 0.7.0: %v %+v", err, res)
	}
	cur := d.client(t, "new-ide")
	sum := onlySession(t, cur)
	uri := expand(t, catalogue(t, cur, sum.Resource)["uncommitted"].URITemplate, nil)
	mNew, mOld := mirrorChangeset(t, cur, uri), mirrorChangeset(t, old, uri)
	mNew.Wait("ready", ready)
	for i := range 3 {
		writeFile(t, repo, "a.txt", string(rune('b'+i))+"\n")
		mNew.Wait("modified", func(st protocol.ChangesetState) bool {
			f := fileByPath(st, repo, "a.txt")
			return ready(st) && f != nil && f.Edit.After.Content.Nonce != ""
		})
	}
	writeFile(t, repo, "z.txt", "z\n")
	mNew.Wait("z", func(st protocol.ChangesetState) bool { return ready(st) && fileByPath(st, repo, "z.txt") != nil })
	mOld.Wait("z", func(st protocol.ChangesetState) bool { return ready(st) && fileByPath(st, repo, "z.txt") != nil })
	sawRecomputing := false
	for _, e := range cur.Envelopes(uri) {
		if sc, ok := e.Action.Action.(protocol.ChangesetStatusChanged); ok && sc.Status == protocol.StatusRecomputing {
			sawRecomputing = true
		}
	}
	if !sawRecomputing {
		t.Error("a 1.0 client saw no recomputing status during refreshes")
	}
	for _, e := range old.Envelopes(uri) {
		if sc, ok := e.Action.Action.(protocol.ChangesetStatusChanged); ok && sc.Status == protocol.StatusRecomputing {
			t.Fatalf("0.7 client received recomputing at serverSeq %d", e.ServerSeq)
		}
	}
}

func TestSlowConsumerIsDisconnected(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "b\n")
	d := startDaemon(t, "--send-queue", "16", repo)
	good := d.client(t, "good")
	sum := onlySession(t, good)
	uri := expand(t, catalogue(t, good, sum.Resource)["uncommitted"].URITemplate, nil)
	gm := mirrorChangeset(t, good, uri)
	st := gm.Wait("ready", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 1 })
	id := st.Files[0].ID

	// The slow client subscribes and then stops reading: its TCP window
	// fills, then its queue of 16, and it must be cut off.
	slow := d.client(t, "slow")
	subscribe(t, slow, uri)
	slow.StopReading()
	pad := make([]string, 2000)
	for i := range pad {
		pad[i] = id + "#pad" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	deadline := time.Now().Add(60 * time.Second)
	for seq := int64(1); ; seq++ {
		good.Notify(protocol.MethodDispatchAction, map[string]any{"channel": uri, "clientSeq": seq, "action": map[string]any{"type": "changeset/filesReviewChanged", "files": append([]string{id}, pad...), "reviewed": seq%2 == 0}})
		// A ping every ten paces the flood to the good client's reading:
		// with one every fifty, the good client on a loaded machine (the
		// whole suite in parallel) fell the 64 messages behind that close
		// a connection, and was cut off like the slow one.
		if seq%10 == 0 {
			if err := good.Call(ctx(t), protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
				t.Fatal(err)
			}
			if d.stderr.contains("send queue overflow") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow client was never disconnected")
		}
	}
	// The good client is unaffected and sees its own last toggle.
	if err := good.Call(ctx(t), protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
		t.Fatalf("good client broken: %v", err)
	}
}
