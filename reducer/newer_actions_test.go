package reducer

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// No upstream reducer fixtures exist for these actions in the copies kept
// in testdata (AHP 0.7.0); the cases are built from the upstream types:
// session/workingDirectoryReplaced {directory: URI, replacement: URI |
// WorkingDirectory} (0.8.0), a compare-and-swap whose result is
// deduplicated against the replacement, and session/chatsReordered
// {chats: URI[]} (0.9.0), the complete resulting order.

func TestSessionWorkingDirectoryReplaced(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dirs   []string
		action string
		want   []string
		out    Outcome
	}{
		{"in place", []string{"file:///a", "file:///b"}, `{"directory":"file:///b","replacement":"file:///c"}`, []string{"file:///a", "file:///c"}, Applied},
		{"the primary", []string{"file:///a", "file:///b"}, `{"directory":"file:///a","replacement":"file:///z"}`, []string{"file:///z", "file:///b"}, Applied},
		{"replacement later: lands in the slot", []string{"file:///a", "file:///b", "file:///c"}, `{"directory":"file:///b","replacement":"file:///c"}`, []string{"file:///a", "file:///c"}, Applied},
		{"replacement earlier: keeps its place", []string{"file:///a", "file:///b", "file:///c"}, `{"directory":"file:///c","replacement":"file:///a"}`, []string{"file:///a", "file:///b"}, Applied},
		{"rich record counts by uri", []string{"file:///a"}, `{"directory":"file:///a","replacement":{"uri":"file:///r","repo":{"x":1}}}`, []string{"file:///r"}, Applied},
		{"target absent", []string{"file:///a"}, `{"directory":"file:///x","replacement":"file:///c"}`, []string{"file:///a"}, NoOp},
		{"set absent", nil, `{"directory":"file:///x","replacement":"file:///c"}`, nil, NoOp},
		{"no replacement URI", []string{"file:///a"}, `{"directory":"file:///a","replacement":7}`, []string{"file:///a"}, NoOp},
	} {
		a := decodeAction(t, `{"type":"session/workingDirectoryReplaced",`+tc.action[1:])
		s := protocol.SessionState{WorkingDirectories: slices.Clone(tc.dirs)}
		next, out := ApplySession(s, a, Env{})
		if out != tc.out || !slices.Equal(next.WorkingDirectories, tc.want) {
			t.Errorf("%s: %v (%v), want %v (%v)", tc.name, next.WorkingDirectories, out, tc.want, tc.out)
		}
		if !slices.Equal(s.WorkingDirectories, tc.dirs) {
			t.Errorf("%s: the reducer changed its input", tc.name)
		}
		// The action round-trips with its replacement as sent.
		b, _ := json.Marshal(protocol.ActionEnvelope{Action: protocol.StateAction{Action: a}})
		var env protocol.ActionEnvelope
		if err := json.Unmarshal(b, &env); err != nil || env.Action.Action.(protocol.SessionWorkingDirectoryReplaced).ReplacementURI() != a.(protocol.SessionWorkingDirectoryReplaced).ReplacementURI() {
			t.Errorf("%s: round trip %s: %v", tc.name, b, err)
		}
	}
}

func TestSessionChatsReordered(t *testing.T) {
	chats := func(uris ...string) []protocol.ChatSummary {
		var out []protocol.ChatSummary
		for _, u := range uris {
			out = append(out, protocol.ChatSummary{Resource: u, Title: "t " + u})
		}
		return out
	}
	uris := func(cs []protocol.ChatSummary) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Resource)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		have   []string
		action string
		want   []string
		out    Outcome
	}{
		{"a permutation", []string{"c:a", "c:b", "c:c"}, `["c:c","c:a","c:b"]`, []string{"c:c", "c:a", "c:b"}, Applied},
		{"unknown and repeated URIs are skipped", []string{"c:a", "c:b"}, `["c:b","c:x","c:b","c:a"]`, []string{"c:b", "c:a"}, Applied},
		{"a chat left out keeps its place after", []string{"c:a", "c:b", "c:c"}, `["c:c"]`, []string{"c:c", "c:a", "c:b"}, Applied},
		{"no chats", nil, `["c:a"]`, nil, NoOp},
	} {
		a := decodeAction(t, `{"type":"session/chatsReordered","chats":`+tc.action+`}`)
		s := protocol.SessionState{Chats: chats(tc.have...)}
		next, out := ApplySession(s, a, Env{})
		if out != tc.out || !slices.Equal(uris(next.Chats), tc.want) {
			t.Errorf("%s: %v (%v), want %v (%v)", tc.name, uris(next.Chats), out, tc.want, tc.out)
		}
		for _, c := range next.Chats {
			if c.Title != "t "+c.Resource {
				t.Errorf("%s: summary of %s lost its fields: %+v", tc.name, c.Resource, c)
			}
		}
		if !slices.Equal(uris(s.Chats), tc.have) {
			t.Errorf("%s: the reducer changed its input", tc.name)
		}
	}
}

// ChangesetStatus, ChangesetOperationStatus and ChangesetOperationScope
// are open: values this host does not know decode, reduce and round-trip.
func TestChangesetOpenEnums(t *testing.T) {
	const state = `{"status":"paused","files":[],"operations":[{"id":"op","label":"Op","scopes":["changeset","workspace"],"status":"queued"}]}`
	var st protocol.ChangesetState
	if err := json.Unmarshal([]byte(state), &st); err != nil {
		t.Fatalf("a state with unknown values: %v", err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back, orig map[string]any
	json.Unmarshal(b, &back)
	json.Unmarshal([]byte(state), &orig)
	for _, k := range []string{"status", "operations"} {
		bb, _ := json.Marshal(back[k])
		ob, _ := json.Marshal(orig[k])
		if string(bb) != string(ob) {
			t.Errorf("%s did not round-trip: %s, want %s", k, bb, ob)
		}
	}
	next, out := ApplyChangeset(st, decodeAction(t, `{"type":"changeset/statusChanged","status":"stalled"}`), Env{})
	if out != Applied || next.Status != "stalled" {
		t.Errorf("unknown status: %q (%v)", next.Status, out)
	}
	next, out = ApplyChangeset(next, decodeAction(t, `{"type":"changeset/operationStatusChanged","operationId":"op","status":"waiting"}`), Env{})
	if out != Applied || next.Operations[0].Status != "waiting" {
		t.Errorf("unknown operation status: %+v (%v)", next.Operations, out)
	}
	next, out = ApplyChangeset(next, decodeAction(t, `{"type":"changeset/operationsChanged","operations":[{"id":"op2","label":"Two","scopes":["hunk"],"status":"later"}]}`), Env{})
	if out != Applied || len(next.Operations) != 1 || next.Operations[0].Scopes[0] != "hunk" || next.Operations[0].Status != "later" {
		t.Errorf("operations with an unknown scope and status: %+v (%v)", next.Operations, out)
	}
	for _, v := range []string{"0.7.0", "1.0.0"} {
		if _, out := ApplyChangeset(st, decodeAction(t, `{"type":"changeset/statusChanged","status":"stalled"}`), Env{Version: v}); out != Applied {
			t.Errorf("%s: unknown status not applied", v)
		}
	}
}
