package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestAdaptEveryPath: the 0.6/0.7 deltas are applied wherever stored
// state reaches a client (live envelope, reconnect replay, snapshots in
// subscribe, initialize and reconnect results), and never to a current
// client, which in turn never sees contentChanged.error.
func TestAdaptEveryPath(t *testing.T) {
	errInfo := &protocol.ErrorInfo{ErrorType: "x", Message: "boom"}
	recomputing := protocol.ActionEnvelope{Channel: "ahp-changeset:/s/changeset/uncommitted", ServerSeq: 3,
		Action: protocol.StateAction{Action: protocol.ChangesetStatusChanged{Status: protocol.StatusRecomputing}}}
	content := protocol.ActionEnvelope{Channel: "ahp-changeset:/s/changeset/uncommitted", ServerSeq: 4,
		Action: protocol.StateAction{Action: protocol.ChangesetContentChanged{Error: errInfo}}}
	csSnap := protocol.Snapshot{Resource: "ahp-changeset:/s/changeset/uncommitted", State: protocol.ChangesetState{Status: protocol.StatusRecomputing}}
	sessSnap := protocol.Snapshot{Resource: "ahp-session:/s", State: protocol.SessionState{Lifecycle: protocol.LifecycleFailed}}
	// The same state as the channel hands it out: already encoded.
	recomputingFiles := protocol.ChangesetState{Status: protocol.StatusRecomputing, Files: []protocol.ChangesetFile{{ID: "file:///r/recomputing"}}}
	enc, err := recomputingFiles.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	encSnap := protocol.Snapshot{Resource: csSnap.Resource, State: protocol.Encoded(enc)}
	payloads := []any{
		recomputing,
		content,
		protocol.SubscribeResult{Snapshot: &csSnap},
		protocol.SubscribeResult{Snapshot: &encSnap},
		protocol.InitializeResult{Snapshots: []protocol.Snapshot{csSnap, sessSnap}},
		protocol.ReconnectResult{Type: protocol.ReconnectReplay, Actions: []protocol.ActionEnvelope{recomputing, content}},
		protocol.ReconnectResult{Type: protocol.ReconnectSnapshot, Snapshots: []protocol.Snapshot{csSnap, sessSnap}},
	}
	before := marshal(t, payloads)
	for _, v := range payloads {
		legacy := marshal(t, protocol.Adapt("0.7.0", v))
		if strings.Contains(legacy, `"recomputing"`) || strings.Contains(legacy, `"lifecycle":"failed"`) {
			t.Errorf("0.7.0 client gets a 1.0 value: %s", legacy)
		}
		current := marshal(t, protocol.Adapt("1.0.0", v))
		if strings.Contains(current, `"computing"`) || strings.Contains(current, `"creationFailed"`) || strings.Contains(current, `"boom"`) {
			t.Errorf("1.0.0 client gets a 0.7 value: %s", current)
		}
	}
	if got := marshal(t, protocol.Adapt("0.7.0", content)); !strings.Contains(got, `"boom"`) {
		t.Errorf("0.7.0 contentChanged lost its error: %s", got)
	}
	// An encoded state is shown to a 0.7 client exactly as the decoded one.
	shown := recomputingFiles
	shown.Status = protocol.StatusComputing
	if got, want := marshal(t, protocol.Adapt("0.7.0", protocol.SubscribeResult{Snapshot: &encSnap})), marshal(t, protocol.SubscribeResult{Snapshot: &protocol.Snapshot{Resource: csSnap.Resource, State: shown}}); got != want {
		t.Errorf("0.7.0 encoded snapshot:\n%s\nwant\n%s", got, want)
	}
	if after := marshal(t, payloads); after != before {
		t.Errorf("Adapt modified its argument:\nbefore %s\nafter  %s", before, after)
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
