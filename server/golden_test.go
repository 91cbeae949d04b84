package server

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

var update = flag.Bool("update", false, "rewrite testdata/wire.golden from what the server sends")

// goldenCase is one exchange: the frames a client sends, in order, and
// how many frames it then reads back.
type goldenCase struct {
	name  string
	send  []string // a frame prefixed with "binary:" goes out as a binary frame
	reads int
}

// TestGoldenFrames compares the exact bytes the server writes for every
// frame-level error, every handler error class and one success per
// method with testdata/wire.golden. Decoding with encoding/json would
// hide a wrongly cased key or a stray member; this comparison does not.
// Run with -update to rewrite the file, then review the diff.
func TestGoldenFrames(t *testing.T) {
	s := startServer(t)
	defer s.stop(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"golden"}}`
	req := func(id int, method, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", DefaultMaxFrameBytes) + `"}}`
	cases := []goldenCase{
		// Frame-level errors: answered by the stream before any handler.
		{"parse error", []string{`{"jsonrpc":`}, 1},
		{"batch", []string{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`}, 1},
		{"not an object", []string{`42`}, 1},
		{"jsonrpc 1.0", []string{`{"jsonrpc":"1.0","id":3,"method":"ping"}`}, 1},
		{"bad id", []string{`{"jsonrpc":"2.0","id":-4,"method":"ping"}`}, 1},
		{"object id", []string{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`}, 1},
		{"boolean id", []string{`{"jsonrpc":"2.0","id":true,"method":"ping"}`}, 1},
		{"missing method", []string{`{"jsonrpc":"2.0","id":5}`}, 1},
		{"member names are case-sensitive", []string{`{"jsonrpc":"2.0","id":6,"Method":"ping"}`}, 1},
		{"params not an object", []string{`{"jsonrpc":"2.0","id":7,"method":"subscribe","params":5}`}, 1},
		{"binary frame", []string{`binary:{"jsonrpc":"2.0","id":8,"method":"ping"}`}, 1},
		{"oversized frame", []string{big}, 1},
		// Handler errors.
		{"before initialize", []string{req(2, "listSessions", `{"channel":"ahp-root://"}`)}, 1},
		{"unknown method", []string{init, req(2, "nope", `{"channel":"ahp-root://"}`)}, 2},
		{"unsupported version", []string{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.1.0"],"clientId":"old"}}`}, 1},
		{"initialize twice", []string{init, strings.Replace(init, `"id":1`, `"id":2`, 1)}, 2},
		{"invalid params type", []string{init, req(2, "listSessions", `{"channel":"ahp-root://","limit":"ten"}`)}, 2},
		{"invalid params type of a base member", []string{init, req(2, "subscribe", `{"channel":5}`)}, 2},
		{"subscribe bad delivery", []string{init, req(2, "subscribe", `{"channel":"ahp-root://","delivery":{"maxLatencyMs":-5}}`)}, 2},
		{"subscribe unknown session", []string{init, req(2, "subscribe", `{"channel":"ahp-session:/nobody"}`)}, 2},
		{"subscribe unknown changeset", []string{init, req(2, "subscribe", `{"channel":"ahp-changeset:/nobody/changeset/uncommitted"}`)}, 2},
		{"resourceRead refused", []string{init, req(2, "resourceRead", `{"channel":"ahp-root://","uri":"file:///etc/passwd"}`)}, 2},
		{"unknown operation", []string{init, req(2, "invokeChangesetOperation", `{"channel":"ahp-changeset:/nobody/changeset/uncommitted","operationId":"nope"}`)}, 2},
		{"dispose unknown session", []string{init, req(2, "disposeSession", `{"channel":"ahp-session:/nobody"}`)}, 2},
		{"turn on unknown session", []string{init, req(2, "x-changesetd/turnStart", `{"channel":"ahp-session:/nobody"}`)}, 2},
		{"fetchTurns on a session channel", []string{init, req(2, "fetchTurns", `{"channel":"ahp-session:/nobody"}`)}, 2},
		{"fetchTurns unknown session", []string{init, req(2, "fetchTurns", `{"channel":"ahp-chat:/nobody","cursor":"x"}`)}, 2},
		{"setBranchBase unknown session", []string{init, req(2, "x-changesetd/setBranchBase", `{"channel":"ahp-session:/nobody","base":"main"}`)}, 2},
		{"setBranchBase not a revision", []string{init, req(2, "x-changesetd/setBranchBase", `{"channel":"ahp-session:/nobody","base":"-x"}`)}, 2},
		{"subscribe annotations of unknown session", []string{init, req(2, "subscribe", `{"channel":"ahp-session:/nobody/annotations"}`)}, 2},
		{"annotationsDelivered on a session channel", []string{init, req(2, "x-changesetd/annotationsDelivered", `{"channel":"ahp-session:/nobody","annotationIds":[]}`)}, 2},
		{"annotationsDelivered unknown session", []string{init, req(2, "x-changesetd/annotationsDelivered", `{"channel":"ahp-session:/nobody/annotations","annotationIds":["a"]}`)}, 2},
		{"reconnect other client", []string{init, req(2, "reconnect", `{"channel":"ahp-root://","clientId":"other","lastSeenServerSeq":0,"subscriptions":[]}`)}, 2},
		// Successes.
		{"ping", []string{req(2, "ping", `{"channel":"ahp-root://"}`)}, 1},
		{"string id", []string{`{"jsonrpc":"2.0","id":"a-1","method":"ping","params":{"channel":"ahp-root://"}}`}, 1},
		{"initialize", []string{init}, 1},
		{"listSessions", []string{init, req(2, "listSessions", `{"channel":"ahp-root://"}`)}, 2},
		{"subscribe root", []string{init, req(2, "subscribe", `{"channel":"ahp-root://"}`)}, 2},
		{"subscribe immediate delivery", []string{init, req(2, "subscribe", `{"channel":"ahp-root://","delivery":{"maxLatencyMs":0}}`)}, 2},
		{"unsubscribe", []string{init, req(2, "unsubscribe", `{"channel":"ahp-root://"}`)}, 2},
		{"dispatchAction", []string{init, req(2, "dispatchAction", `{"channel":"ahp-root://","clientSeq":1,"action":{"type":"x/unknown"}}`)}, 3},
		{"reconnect", []string{req(1, "reconnect", `{"channel":"ahp-root://","clientId":"golden","lastSeenServerSeq":0,"subscriptions":["ahp-root://","ahp-session:/gone"]}`)}, 1},
		{"notification gets no answer", []string{init, `{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"ahp-root://"}}`, req(3, "unsubscribe", `{"channel":"ahp-root://"}`)}, 2},
		{"annotations", []string{init,
			req(2, "createSession", `{"channel":"ahp-session:/0d1a7e5c-0000-4000-8000-000000000001","workingDirectories":["file:///"]}`),
			// Last: the session it creates changes the root channel that
			// earlier cases look at. No subscribe here: its fromSeq depends
			// on how far the new session got starting.
			req(3, "x-changesetd/annotationsDelivered", `{"channel":"ahp-session:/0d1a7e5c-0000-4000-8000-000000000001/annotations","annotationIds":["none"],"turnId":""}`)}, 3},
	}
	var got bytes.Buffer
	for _, tc := range cases {
		fmt.Fprintf(&got, "== %s\n", tc.name)
		for _, f := range tc.send {
			if len(f) > 200 {
				f = f[:200] + "…"
			}
			fmt.Fprintf(&got, "> %s\n", f)
		}
		for _, frame := range exchange(t, s.ws, tc) {
			fmt.Fprintf(&got, "< %s\n", frame)
		}
	}
	const file = "testdata/wire.golden"
	if *update {
		if err := os.WriteFile(file, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("line %d differs:\n got: %s\nwant: %s", i+1, g, w)
			}
		}
	}
}

// exchange runs one case on a fresh connection and returns the frames
// read back, byte for byte.
func exchange(t *testing.T, url string, tc goldenCase) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, url+"?token=t", nil)
	if err != nil {
		t.Fatalf("%s: dial: %v", tc.name, err)
	}
	defer ws.Close()
	for _, f := range tc.send {
		typ := websocket.TextMessage
		if rest, ok := strings.CutPrefix(f, "binary:"); ok {
			typ, f = websocket.BinaryMessage, rest
		}
		if err := ws.WriteMessage(typ, []byte(f)); err != nil {
			t.Fatalf("%s: send: %v", tc.name, err)
		}
	}
	var out [][]byte
	ws.SetReadDeadline(time.Now().Add(waitLimit))
	for len(out) < tc.reads {
		typ, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("%s: read %d of %d: %v", tc.name, len(out)+1, tc.reads, err)
		}
		if typ != websocket.TextMessage {
			t.Fatalf("%s: frame of type %d", tc.name, typ)
		}
		out = append(out, data)
	}
	return out
}
