package reducer_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

// fuzzSeedState exercises every changeset field a reducer can touch.
const fuzzSeedState = `{
  "status": "error",
  "error": {"errorType": "git", "message": "boom"},
  "files": [
    {"id": "file:///a", "edit": {"after": {"uri": "file:///a", "content": {"uri": "c:/a"}}, "diff": {"added": 1}}},
    {"id": "file:///b", "edit": {"before": {"uri": "file:///b", "content": {"uri": "c:/b0"}}}, "reviewed": true, "_meta": {"k": [1, {"x": null}]}}
  ],
  "operations": [
    {"id": "revert", "label": "Revert", "scopes": ["resource", "range"], "confirmation": {"markdown": "sure?"}, "status": "idle"},
    {"id": "pr", "label": "PR", "scopes": ["changeset"], "status": "error", "error": {"errorType": "x", "message": "y"}}
  ]
}`

// FuzzApplyChangeset decodes the input as an action and applies it to a
// seed state under 1.0 and legacy semantics. It must not panic, must leave
// the seed unchanged, must be deterministic, and its result must
// re-marshal and survive a JSON round-trip.
func FuzzApplyChangeset(f *testing.F) {
	f.Add([]byte(`{"type":"changeset/cleared"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := protocol.DecodeAction(data)
		if err != nil {
			return
		}
		var seed protocol.ChangesetState
		if err := json.Unmarshal([]byte(fuzzSeedState), &seed); err != nil {
			t.Fatal(err)
		}
		before := mustMarshal(t, seed)
		for _, env := range []reducer.Env{{}, {Version: "0.7.0"}} {
			got, _ := reducer.ApplyChangeset(seed, a, env)
			again, _ := reducer.ApplyChangeset(seed, a, env)
			out := mustMarshal(t, got)
			if !bytes.Equal(out, mustMarshal(t, again)) {
				t.Fatalf("not deterministic for %s", data)
			}
			var back protocol.ChangesetState
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatalf("result does not decode: %v\n%s", err, out)
			}
			if !bytes.Equal(out, mustMarshal(t, back)) {
				t.Fatalf("result does not round-trip:\n%s\n%s", out, mustMarshal(t, back))
			}
		}
		if after := mustMarshal(t, seed); !bytes.Equal(before, after) {
			t.Fatalf("seed state modified by %s\nbefore: %s\nafter:  %s", data, before, after)
		}
	})
}
