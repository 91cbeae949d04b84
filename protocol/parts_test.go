package protocol

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestEncodePartsIsMarshalJSON: a response written as its pieces is the
// same bytes as its MarshalJSON, and a snapshot's Encoded state is one of
// the pieces, not a copy.
func TestEncodePartsIsMarshalJSON(t *testing.T) {
	state := Encoded(`{"status":"ready","files":[{"id":"file:///r/a.go"}]}`)
	for name, r := range map[string]Response{
		"encoded snapshot": {ID: json.RawMessage(`7`), Result: SubscribeResult{Snapshot: &Snapshot{Resource: "ahp-changeset:/s/changeset/uncommitted", State: state, FromSeq: 42}}},
		"decoded snapshot": {ID: json.RawMessage(`"x"`), Result: SubscribeResult{Snapshot: &Snapshot{Resource: "r", State: map[string]any{"a": 1}, FromSeq: 1}}},
		"other result":     {ID: json.RawMessage(`8`), Result: map[string]int{"n": 1}},
		"error":            {ID: json.RawMessage(`9`), Error: &Error{Code: CodeNotFound, Message: "no"}},
	} {
		want, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		parts, err := r.EncodeParts()
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Join(parts, nil); !bytes.Equal(got, want) {
			t.Errorf("%s: parts give %s, MarshalJSON %s", name, got, want)
		}
		if name == "encoded snapshot" && (len(parts) != 3 || &parts[1][0] != &state[0]) {
			t.Errorf("the encoded state is not one of the pieces, shared: %q", parts)
		}
	}
}
