package reducer_test

import (
	"encoding/json"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

func TestLegacy(t *testing.T) {
	for version, want := range map[string]bool{
		"":       false,
		"1.0.0":  false,
		"1.1.0":  false,
		"0.9.0":  false,
		"0.9.1":  false,
		"0.10.0": false,
		"0.8.9":  true,
		"0.7.0":  true,
		"0.6.0":  true,
		"0.5.1":  true,
		"0.7":    true,
		"0":      false,
		"0.x.0":  false,
		"0.+7.0": false,
		"0..0":   false,
		"junk":   false,
	} {
		if got := reducer.Legacy(version); got != want {
			t.Errorf("Legacy(%q) = %v, want %v", version, got, want)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[reducer.Outcome]string{
		reducer.Applied:    "applied",
		reducer.NoOp:       "noop",
		reducer.Outcome(7): "Outcome(7)",
	} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(o), got, want)
		}
	}
}

// TestOutcomes pins the reported outcome of actions whose no-op
// conditions protocol.md §4.5 spells out, plus cross-channel actions.
func TestOutcomes(t *testing.T) {
	const changeset = `{"status":"ready","files":[{"id":"a","edit":{},"reviewed":true}],
		"operations":[{"id":"op","label":"Op","scopes":["changeset"],"status":"idle"}]}`
	const empty = `{"status":"ready","files":[]}`
	const session = `{"provider":"p","title":"t","status":1,"lifecycle":"ready","activeClients":[],"chats":[]}`
	tests := []struct {
		name    string
		state   string
		channel string
		action  string
		want    reducer.Outcome
	}{
		{"statusChanged same status", changeset, "changeset", `{"type":"changeset/statusChanged","status":"ready"}`, reducer.Applied},
		{"fileSet", changeset, "changeset", `{"type":"changeset/fileSet","file":{"id":"b","edit":{}}}`, reducer.Applied},
		{"fileRemoved unknown", changeset, "changeset", `{"type":"changeset/fileRemoved","fileId":"zz"}`, reducer.NoOp},
		{"fileRemoved", changeset, "changeset", `{"type":"changeset/fileRemoved","fileId":"a"}`, reducer.Applied},
		{"filesReviewChanged already equal", changeset, "changeset", `{"type":"changeset/filesReviewChanged","files":["a"],"reviewed":true}`, reducer.NoOp},
		{"filesReviewChanged", changeset, "changeset", `{"type":"changeset/filesReviewChanged","files":["a"],"reviewed":false}`, reducer.Applied},
		{"contentChanged", empty, "changeset", `{"type":"changeset/contentChanged","files":[]}`, reducer.Applied},
		{"operationsChanged", empty, "changeset", `{"type":"changeset/operationsChanged"}`, reducer.Applied},
		{"operationStatusChanged no operations", empty, "changeset", `{"type":"changeset/operationStatusChanged","operationId":"op","status":"running"}`, reducer.NoOp},
		{"operationStatusChanged unknown op", changeset, "changeset", `{"type":"changeset/operationStatusChanged","operationId":"zz","status":"running"}`, reducer.NoOp},
		{"operationStatusChanged", changeset, "changeset", `{"type":"changeset/operationStatusChanged","operationId":"op","status":"running"}`, reducer.Applied},
		{"cleared empty", empty, "changeset", `{"type":"changeset/cleared"}`, reducer.NoOp},
		{"cleared", changeset, "changeset", `{"type":"changeset/cleared"}`, reducer.Applied},
		{"unknown changeset action", changeset, "changeset", `{"type":"changeset/nope"}`, reducer.NoOp},
		{"session action on changeset", changeset, "changeset", `{"type":"session/ready"}`, reducer.NoOp},
		{"changeset action on session", session, "session", `{"type":"changeset/cleared"}`, reducer.NoOp},
		{"session ready", session, "session", `{"type":"session/ready"}`, reducer.Applied},
		{"activeClientSet without client", session, "session", `{"type":"session/activeClientSet"}`, reducer.NoOp},
		{"inputNeededSet without request", session, "session", `{"type":"session/inputNeededSet"}`, reducer.NoOp},
		{"customizationUpdated without entry", session, "session", `{"type":"session/customizationUpdated"}`, reducer.NoOp},
		{"chatUpdated unknown chat", session, "session", `{"type":"session/chatUpdated","chat":"ahp-chat:/x","changes":{}}`, reducer.NoOp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := protocol.DecodeAction([]byte(tt.action))
			if err != nil {
				t.Fatal(err)
			}
			var got reducer.Outcome
			switch tt.channel {
			case "changeset":
				_, got = reducer.ApplyChangeset(mustUnmarshal[protocol.ChangesetState](t, []byte(tt.state)), a, reducer.Env{})
			case "session":
				_, got = reducer.ApplySession(mustUnmarshal[protocol.SessionState](t, []byte(tt.state)), a, reducer.Env{})
			}
			if got != tt.want {
				t.Errorf("outcome = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNilAction checks that a nil action is a no-op rather than a panic.
func TestNilAction(t *testing.T) {
	if _, o := reducer.ApplyChangeset(protocol.ChangesetState{}, nil, reducer.Env{}); o != reducer.NoOp {
		t.Errorf("ApplyChangeset(nil) = %v", o)
	}
	if _, o := reducer.ApplySession(protocol.SessionState{}, nil, reducer.Env{}); o != reducer.NoOp {
		t.Errorf("ApplySession(nil) = %v", o)
	}
}

// TestChatUpdatedMerge covers what the fixtures do not: null clears a
// field, resource is never rewritten, and ill-typed changes are a no-op.
func TestChatUpdatedMerge(t *testing.T) {
	const state = `{"provider":"p","title":"t","status":1,"lifecycle":"ready","activeClients":[],
		"chats":[{"resource":"ahp-chat:/c","title":"C","status":8,"activity":"busy","modifiedAt":"m"}]}`
	apply := func(action string) (protocol.ChatSummary, reducer.Outcome) {
		a, err := protocol.DecodeAction([]byte(action))
		if err != nil {
			t.Fatal(err)
		}
		s, o := reducer.ApplySession(mustUnmarshal[protocol.SessionState](t, []byte(state)), a, reducer.Env{})
		return s.Chats[0], o
	}
	c, o := apply(`{"type":"session/chatUpdated","chat":"ahp-chat:/c","changes":{"activity":null,"resource":"ahp-chat:/other","status":1}}`)
	if o != reducer.Applied || c.Activity != nil || c.Resource != "ahp-chat:/c" || c.Status != 1 || c.Title != "C" {
		got, _ := json.Marshal(c)
		t.Errorf("merge: outcome %v, chat %s", o, got)
	}
	if _, o := apply(`{"type":"session/chatUpdated","chat":"ahp-chat:/c","changes":{"status":"busy"}}`); o != reducer.NoOp {
		t.Errorf("ill-typed changes: outcome %v, want noop", o)
	}
}
