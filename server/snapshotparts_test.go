package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
)

// TestSharedReplyPiecesReachEveryClientWhole: a subscribe reply queued
// as pieces (protocol.Response.EncodeParts), its snapshot's encoded
// state one piece shared by every connection, reaches each client as
// one message, byte for byte the reply's MarshalJSON, after what was
// queued before it and before what was queued after; the shared state
// is not changed by being written.
func TestSharedReplyPiecesReachEveryClientWhole(t *testing.T) {
	var files []string
	for i := range 6000 {
		files = append(files, fmt.Sprintf(`{"id":"file:///r/f%05d.txt","edit":{}}`, i))
	}
	state := protocol.Encoded(`{"status":"ready","files":[` + strings.Join(files, ",") + `]}`)
	kept := bytes.Clone(state)
	reply := protocol.Response{ID: json.RawMessage(`2`), Result: protocol.SubscribeResult{Snapshot: &protocol.Snapshot{Resource: "ahp-changeset:/a/changeset/uncommitted", State: state, FromSeq: 9}}}
	want, err := reply.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 3*writeChunk {
		t.Fatalf("the reply is %d bytes, not several of the writer's pieces", len(want))
	}
	for i := range 3 {
		cfg := Config{}
		cfg.setDefaults()
		client, s := pipeStream(t, &cfg)
		client.SetReadLimit(-1)
		sl := s.reserve()
		s.write([]byte("after"))
		parts, err := reply.EncodeParts()
		if err != nil {
			t.Fatal(err)
		}
		s.fillParts(sl, parts)
		s.closeWith(websocket.CloseNormalClosure, "")
		got := readAll(t, client)
		if len(got) != 2 || got[0] != string(want) || got[1] != "after" {
			t.Errorf("client %d: %d frames, the first %d bytes (want %d, equal: %v)", i, len(got), len(got[0]), len(want), len(got) > 0 && got[0] == string(want))
		}
	}
	if !bytes.Equal(state, kept) {
		t.Error("the shared state was changed")
	}
}
