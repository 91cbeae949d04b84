package protocol_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// The upstream AHP fixtures, copied unmodified (provenance in their
// SOURCE.md). The fixtures directory is a sibling of the module.
const (
	roundTripDir = "../testdata/ahp-fixtures/round-trips"
	reducersDir  = "../testdata/ahp-fixtures/reducers"
)

// roundTrip is one fixture: decode Input as Type, re-encode, and expect a
// JSON value deeply equal to one of AcceptableOutputs.
type roundTrip struct {
	Name              string            `json:"name"`
	Type              string            `json:"type"`
	Input             json.RawMessage   `json:"input"`
	AcceptableOutputs []json.RawMessage `json:"acceptableOutputs"`
}

// roundTripTypes maps a fixture's type name to a function that decodes
// input into that Go type and encodes it again.
var roundTripTypes = map[string]func([]byte) ([]byte, error){
	"ActionEnvelope":           reencode[protocol.ActionEnvelope],
	"StateAction":              reencode[protocol.StateAction],
	"SessionSummary":           reencode[protocol.SessionSummary],
	"SessionAddedParams":       reencode[protocol.SessionAddedParams],
	"Changeset":                reencode[protocol.Changeset],
	"ChangesetOperationTarget": reencode[protocol.ChangesetOperationTarget],
	"JsonRpcMessage":           reencodeRPC,
}

func TestRoundTrips(t *testing.T) {
	entries, err := os.ReadDir(roundTripDir)
	if err != nil {
		t.Fatalf("read fixtures: %v", err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) { runRoundTrip(t, e.Name()) })
	}
	if n == 0 {
		t.Fatalf("no fixtures in %s", roundTripDir)
	}
}

func runRoundTrip(t *testing.T, name string) {
	data, err := os.ReadFile(filepath.Join(roundTripDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var rt roundTrip
	if err := json.Unmarshal(data, &rt); err != nil {
		t.Fatalf("decode fixture: %v", err)
	}
	codec, ok := roundTripTypes[rt.Type]
	if !ok {
		t.Fatalf("no Go type for %q", rt.Type)
	}
	got, err := codec(rt.Input)
	if err != nil {
		t.Fatalf("%s: %v", rt.Type, err)
	}
	for _, want := range rt.AcceptableOutputs {
		if sameJSON(got, want) {
			return
		}
	}
	t.Errorf("%s: re-encoded %s\nwant one of %s", rt.Name, got, rt.AcceptableOutputs)
}

// TestFixtureActionsRoundTrip decodes every action of every reducer
// fixture with DecodeAction and re-encodes it with EncodeAction. The result
// must match the input once null-valued keys are dropped (fixtures write an
// absent optional field as null; the encoder omits it), so each typed
// action keeps every wire field.
func TestFixtureActionsRoundTrip(t *testing.T) {
	for file, actions := range fixtureActions(t) {
		for i, raw := range actions {
			a, err := protocol.DecodeAction(raw)
			if err != nil {
				t.Errorf("%s action %d: %v", file, i, err)
				continue
			}
			got, err := protocol.EncodeAction(a)
			if err != nil {
				t.Errorf("%s action %d: encode: %v", file, i, err)
				continue
			}
			if !sameJSON(dropNullKeys(got), dropNullKeys(raw)) {
				t.Errorf("%s action %d (%T):\ngot  %s\nwant %s", file, i, a, got, raw)
			}
		}
	}
}

// fixtureActions returns the actions of every reducer fixture, by file
// name.
func fixtureActions(t *testing.T) map[string][]json.RawMessage {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(reducersDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in %s (%v)", reducersDir, err)
	}
	out := map[string][]json.RawMessage{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var fx struct {
			Actions []json.RawMessage `json:"actions"`
		}
		if err := json.Unmarshal(data, &fx); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out[filepath.Base(file)] = fx.Actions
	}
	return out
}

// dropNullKeys re-encodes a document without its null-valued object keys.
func dropNullKeys(data []byte) []byte {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return data
	}
	out, _ := json.Marshal(withoutNulls(v))
	return out
}

func withoutNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if e != nil {
				out[k] = withoutNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutNulls(e)
		}
		return out
	}
	return v
}

// reencode decodes data into a T and encodes it again.
func reencode[T any](data []byte) ([]byte, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// sameJSON compares two documents as generic JSON values. Unlike the
// reducer fixtures, null is significant here: an absent optional field
// must stay absent.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// reencodeRPC picks the JSON-RPC variant by which members are present, as
// a receiver must, and re-encodes it.
func reencodeRPC(data []byte) ([]byte, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, err
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case has("method") && has("id"):
		return reencode[protocol.Request](data)
	case has("method"):
		return reencode[protocol.Notification](data)
	case has("error") || has("result"):
		var m protocol.RPCMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		r := protocol.Response{ID: m.ID, Error: m.Error}
		if m.Error == nil {
			r.Result = m.Result
		}
		return json.Marshal(r)
	}
	return nil, fmt.Errorf("not a JSON-RPC message: %s", data)
}

// TestActionNotificationBytes: the hand-assembled "action" notification is
// byte for byte what encoding/json writes for the same envelope, for every
// action of every reducer fixture and for the shapes the daemon sends
// (origins, rejections, HTML-escaped text, lists left nil).
func TestActionNotificationBytes(t *testing.T) {
	var actions []protocol.Action
	for _, raws := range fixtureActions(t) {
		for _, raw := range raws {
			if a, err := protocol.DecodeAction(raw); err == nil {
				actions = append(actions, a)
			}
		}
	}
	file := protocol.ChangesetFile{ID: "file:///r/<a>&b.go", Meta: protocol.Object{"changesetd": protocol.Object{"patch": "-<b>\n+&amp; \u2028\n"}}}
	actions = append(actions,
		protocol.ChangesetContentChanged{},
		protocol.ChangesetContentChanged{Files: []protocol.ChangesetFile{file, file}, Operations: []protocol.ChangesetOperation{}},
		protocol.ChangesetFilesReviewChanged{Reviewed: true},
		protocol.ChangesetFileSet{File: file},
		nil,
	)
	for i, a := range actions {
		for _, env := range []protocol.ActionEnvelope{
			{Channel: "ahp-changeset:/s/changeset/uncommitted", Action: protocol.StateAction{Action: a}, ServerSeq: int64(i) + 1},
			{Channel: "ahp-session:/<s>&", Action: protocol.StateAction{Action: a}, ServerSeq: -3, Origin: &protocol.ActionOrigin{ClientID: "c<1>", ClientSeq: 7}, RejectionReason: "bad & <worse>"},
		} {
			want, err := json.Marshal(protocol.NewNotification(protocol.NotifyAction, env))
			if err != nil {
				t.Fatal(err)
			}
			got, err := protocol.EncodeActionNotification(env)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("action %d (%T):\ngot  %s\nwant %s", i, a, got, want)
			}
		}
	}
}

// BenchmarkActionNotification encodes a changeset's first file list (1,000
// files with a patch each) as a notification, hand-assembled and through
// encoding/json.
func BenchmarkActionNotification(b *testing.B) {
	files := make([]protocol.ChangesetFile, 1000)
	for i := range files {
		id := fmt.Sprintf("file:///repo/pkg%03d/file%d.go", i%100, i)
		files[i] = protocol.ChangesetFile{ID: id, Meta: protocol.Object{
			"changesetd": protocol.Object{"operation": "modify", "patch": strings.Repeat("@@ -1,3 +1,3 @@\n-old line\n+new line\n context\n", 20)},
		}}
	}
	env := protocol.ActionEnvelope{Channel: "ahp-changeset:/s/changeset/uncommitted", Action: protocol.StateAction{Action: protocol.ChangesetContentChanged{Files: files}}, ServerSeq: 1}
	b.Run("assembled", func(b *testing.B) {
		for b.Loop() {
			if _, err := protocol.EncodeActionNotification(env); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(protocol.NewNotification(protocol.NotifyAction, env)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
