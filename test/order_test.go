package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
)

// TestSubscribeReplyPrecedesItsActions pins the order a client relies on
// to apply a snapshot and then the live stream: the reply to subscribe
// reaches the client before any action of that channel numbered after the
// snapshot's fromSeq. A raw client records frames in wire order while it
// subscribes, unsubscribes and subscribes again to a changeset whose files
// keep changing on disk.
func TestSubscribeReplyPrecedesItsActions(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	c := d.client(t, "setup")
	uri := expand(t, catalogue(t, c, onlySession(t, c).Resource)["uncommitted"].URITemplate, nil)

	ws, _, err := websocket.DefaultDialer.Dial(d.URL, http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	frames := make(chan []byte, 4096)
	go func() {
		defer close(frames)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			frames <- data
		}
	}()
	send := func(id int, method string, params any) {
		t.Helper()
		if err := ws.WriteJSON(protocol.NewRequest(int64(id), method, params)); err != nil {
			t.Fatal(err)
		}
	}
	send(1, protocol.MethodInitialize, map[string]any{"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "order"})

	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() { // keep the changeset moving
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				writeFile(t, repo, fmt.Sprintf("f%d.txt", i%7), fmt.Sprintf("v%d\n", i))
			}
		}
	}()

	const rounds = 40
	subIDs := map[string]bool{}
	for i := range rounds {
		id := 100 + 2*i
		subIDs[fmt.Sprint(id)] = true
		send(id, protocol.MethodSubscribe, map[string]any{"channel": uri})
		time.Sleep(15 * time.Millisecond)
		send(id+1, protocol.MethodUnsubscribe, map[string]any{"channel": uri})
	}
	// The end: a subscribe the channel's owner answers after every
	// earlier one (a ping, preempted, may overtake their answers).
	send(999, protocol.MethodSubscribe, map[string]any{"channel": uri})
	defer func() { close(stop); <-writerDone }()

	// Walk the frames in wire order. After a subscribe reply with fromSeq
	// F, no action of the channel numbered <= F may follow while that
	// subscription is open; before the first reply no action may arrive.
	subscribed := false
	fromSeq := int64(-1)
	replies, actions := 0, 0
	deadline := time.After(60 * time.Second)
	for {
		var data []byte
		select {
		case d, ok := <-frames:
			if !ok {
				t.Fatal("connection closed")
			}
			data = d
		case <-deadline:
			t.Fatal("no answer to the final subscribe")
		}
		var m protocol.RPCMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("frame %s: %v", data, err)
		}
		if m.Method == protocol.NotifyAction {
			var env struct {
				Channel   string `json:"channel"`
				ServerSeq int64  `json:"serverSeq"`
			}
			json.Unmarshal(m.Params, &env)
			if env.Channel != uri {
				continue
			}
			actions++
			if fromSeq < 0 {
				t.Fatalf("action %d of %s arrived before any subscribe reply", env.ServerSeq, uri)
			}
			if subscribed && env.ServerSeq <= fromSeq {
				t.Fatalf("action %d arrived after a snapshot at fromSeq %d", env.ServerSeq, fromSeq)
			}
			continue
		}
		if string(m.ID) == "999" {
			break
		}
		if m.Error != nil {
			t.Fatalf("request %s failed: %d %s", m.ID, m.Error.Code, m.Error.Message)
		}
		if subIDs[string(m.ID)] {
			var snap struct {
				Snapshot struct {
					FromSeq int64 `json:"fromSeq"`
				} `json:"snapshot"`
			}
			json.Unmarshal(m.Result, &snap)
			if snap.Snapshot.FromSeq < fromSeq {
				t.Fatalf("fromSeq went back from %d to %d", fromSeq, snap.Snapshot.FromSeq)
			}
			fromSeq, subscribed = snap.Snapshot.FromSeq, true
			replies++
		} else {
			subscribed = false // an unsubscribe reply
		}
	}
	if replies != rounds {
		t.Fatalf("%d subscribe replies, want %d", replies, rounds)
	}
	if actions == 0 {
		t.Fatal("no action was delivered while files changed: the test proved nothing")
	}
	t.Logf("%d subscribe replies, %d actions checked", replies, actions)
}
