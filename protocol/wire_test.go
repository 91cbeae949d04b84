package protocol

import (
	"encoding/json"
	"testing"
)

// A subscribe result with an Encoded state is written byte for byte as
// encoding/json writes the same result with the decoded state.
func TestEncodedSnapshotBytes(t *testing.T) {
	state := ChangesetState{Status: StatusReady, Files: []ChangesetFile{{ID: "file:///r/<a&b>.txt"}}}
	enc, err := json.Marshal(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []json.RawMessage{json.RawMessage(`7`), json.RawMessage(`"x"`), nil} {
		snap := func(st any) SubscribeResult {
			return SubscribeResult{Snapshot: &Snapshot{Resource: "ahp-changeset:/s/changeset/uncommitted?q=<1>&", State: st, FromSeq: 1 << 50}}
		}
		got, err := Response{ID: id, Result: snap(Encoded(enc))}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(Response{ID: id, Result: snap(state)})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("id %s:\n got %s\nwant %s", id, got, want)
		}
	}
}
