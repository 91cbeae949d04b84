package agent

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// reviewer is an entry of the reviewer's, as decoded from the wire.
func reviewer(id string) protocol.AnnotationEntry {
	return protocol.AnnotationEntry{ID: id, Text: protocol.PlainText("r")}
}

// byAgent is an entry the agent wrote.
func byAgent(id string) protocol.AnnotationEntry {
	return protocol.AnnotationEntry{ID: id, Text: protocol.PlainText("a"), Meta: protocol.Object{protocol.MetaAuthor: Author}}
}

// saying is e with text.
func saying(e protocol.AnnotationEntry, text string) protocol.AnnotationEntry {
	e.Text = protocol.PlainText(text)
	return e
}

// wire is m as decoded from the wire: plain maps, not Go types.
func wire(m map[string]any) protocol.Object {
	var o protocol.Object
	b, _ := json.Marshal(m)
	json.Unmarshal(b, &o)
	return o
}

// deliveredOf is the _meta of an annotation whose entries ids were handed
// to the agent.
func deliveredOf(ids ...string) protocol.Object {
	return wire(map[string]any{protocol.MetaDelivered: delivery(ids...)})
}

func delivery(ids ...string) map[string]any {
	return map[string]any{"at": "2026-01-01T00:00:00Z", "turnId": "t1", "entries": ids}
}

// vscode is the _meta of a VS Code comment in state, with the entries ids
// delivered.
func vscode(state string, ids ...string) protocol.Object {
	m := map[string]any{protocol.MetaFeedback: map[string]any{"kind": "codeReview", "state": state, "sessionResource": "vscode-agent-host:/s"}}
	if len(ids) > 0 {
		m[protocol.MetaDelivered] = delivery(ids...)
	}
	return wire(m)
}

func TestOpenForAgent(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    protocol.Annotation
		want bool
	}{
		{"new", protocol.Annotation{Entries: []protocol.AnnotationEntry{reviewer("r1")}}, true},
		{"resolved", protocol.Annotation{Resolved: true, Entries: []protocol.AnnotationEntry{reviewer("r1")}}, false},
		{"delivered", protocol.Annotation{Entries: []protocol.AnnotationEntry{reviewer("r1")}, Meta: deliveredOf("r1")}, false},
		{"the agent's reply since", protocol.Annotation{Entries: []protocol.AnnotationEntry{reviewer("r1"), byAgent("a1")}, Meta: deliveredOf("r1")}, false},
		{"a reviewer entry since", protocol.Annotation{Entries: []protocol.AnnotationEntry{reviewer("r1"), byAgent("a1"), reviewer("r2")}, Meta: deliveredOf("r1", "a1")}, true},
		{"only the agent's", protocol.Annotation{Entries: []protocol.AnnotationEntry{byAgent("a1")}}, false},
	} {
		if got := OpenForAgent(tc.a); got != tc.want {
			t.Errorf("%s: OpenForAgent = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSelect(t *testing.T) {
	r1 := []protocol.AnnotationEntry{reviewer("r1")}
	for _, tc := range []struct {
		name string
		a    protocol.Annotation
		want []Pending // nil: not selected
	}{
		{"new", protocol.Annotation{Entries: r1}, []Pending{{ID: "x"}}},
		{"resolved", protocol.Annotation{Resolved: true, Entries: r1}, nil},
		{"delivered", protocol.Annotation{Entries: r1, Meta: deliveredOf("r1")}, nil},
		{"a reviewer entry since delivery", protocol.Annotation{Entries: []protocol.AnnotationEntry{reviewer("r1"), byAgent("a1"), reviewer("r2")}, Meta: deliveredOf("r1")}, []Pending{{ID: "x", Seen: []string{"r1"}}}},
		{"only the agent's", protocol.Annotation{Entries: []protocol.AnnotationEntry{byAgent("a1")}}, nil},
		{"no entries", protocol.Annotation{}, nil},
		{"on this chat's turn", protocol.Annotation{TurnID: "mine", Entries: r1}, []Pending{{ID: "x"}}},
		{"on another chat's turn", protocol.Annotation{TurnID: "theirs", Entries: r1}, nil},
		{"vscode created: proposed, not accepted", protocol.Annotation{Entries: r1, Meta: vscode(protocol.FeedbackCreated)}, nil},
		{"vscode accepted", protocol.Annotation{Entries: r1, Meta: vscode(protocol.FeedbackAccepted)}, []Pending{{ID: "x"}}},
		{"vscode submitted", protocol.Annotation{Entries: r1, Meta: vscode(protocol.FeedbackSubmitted, "r1")}, nil},
		{"vscode submitted, a reply since", protocol.Annotation{Entries: []protocol.AnnotationEntry{reviewer("r1"), reviewer("r2")}, Meta: vscode(protocol.FeedbackSubmitted, "r1")}, []Pending{{ID: "x", Seen: []string{"r1"}}}},
		{"vscode resolved", protocol.Annotation{Resolved: true, Entries: r1, Meta: vscode(protocol.FeedbackResolved)}, nil},
		{"vscode created but resolved", protocol.Annotation{Resolved: true, Entries: r1, Meta: vscode(protocol.FeedbackCreated)}, nil},
		{"vscode state unknown: not VS Code's", protocol.Annotation{Entries: r1, Meta: vscode("drafted")}, []Pending{{ID: "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.a.ID = "x"
			got := Select([]protocol.Annotation{tc.a}, map[string]bool{"theirs": true})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Select = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSelectKeepsTheDaemonsOrder(t *testing.T) {
	var all []protocol.Annotation
	for _, id := range []string{"c", "a", "b"} {
		all = append(all, protocol.Annotation{ID: id, Entries: []protocol.AnnotationEntry{reviewer("r")}})
	}
	if got := IDs(Select(all, nil)); !slices.Equal(got, []string{"c", "a", "b"}) {
		t.Errorf("IDs(Select) = %q, want [c a b]", got)
	}
}

// feedbackGolden is what the agent is shown for the annotations of
// TestFeedback: sorted by file and line; the annotation resolved and the
// one removed meanwhile left out; in the thread read before, the new
// entry marked.
const feedbackGolden = FeedbackIntro + "### `src/a.go`, lines 3-4\n" +
	"\n" +
	"Annotation `a2` on turn `t1`, open.\n" +
	"\n" +
	"> **Reviewer:** Rename this.\n" +
	">\n" +
	"> **Agent:** Renamed.\n" +
	">\n" +
	"> **Reviewer, new:** And the caller too,\n" +
	"> please.\n" +
	"\n" +
	"### `src/a.go`, line 10 (moved from line 8)\n" +
	"\n" +
	"Annotation `a1` on turn `t2`, open.\n" +
	"\n" +
	"> **Reviewer:** Why?\n" +
	"\n" +
	"### `z.go`, whole file\n" +
	"\n" +
	"Annotation `a3` on turn `t2`, open.\n" +
	"\n" +
	"> **Reviewer:** Split this file.\n"

func TestFeedback(t *testing.T) {
	file := func(p string) string { return "file:///w/app/" + p }
	latest := map[string]protocol.Annotation{
		"a1": {ID: "a1", TurnID: "t2", Resource: file("src/a.go"), Range: rng(7, 0, 7, 5),
			Meta:    wire(map[string]any{protocol.MetaCurrent: map[string]any{"status": "moved", "range": rng(9, 0, 9, 5)}}),
			Entries: []protocol.AnnotationEntry{saying(reviewer("r1"), "Why?")}},
		"a2": {ID: "a2", TurnID: "t1", Resource: file("src/a.go"), Range: rng(2, 0, 4, 0), Meta: deliveredOf("r1", "a1"),
			Entries: []protocol.AnnotationEntry{saying(reviewer("r1"), "Rename this."), saying(byAgent("a1"), "Renamed."), saying(reviewer("r2"), "And the caller too,\nplease.\n")}},
		"a3":       {ID: "a3", TurnID: "t2", Resource: file("z.go"), Entries: []protocol.AnnotationEntry{saying(reviewer("r1"), "Split this file.")}},
		"resolved": {ID: "resolved", Resolved: true, Resource: file("b.go"), Entries: []protocol.AnnotationEntry{reviewer("r1")}},
	}
	pending := []Pending{{ID: "a3"}, {ID: "a1"}, {ID: "removed"}, {ID: "a2", Seen: []string{"r1", "a1"}}, {ID: "resolved"}}
	got := Feedback(pending, latest, []string{"/w/app"})
	if got != feedbackGolden {
		t.Errorf("Feedback =\n%s\nwant\n%s", got, feedbackGolden)
	}
	if got := Feedback([]Pending{{ID: "removed"}, {ID: "resolved"}}, latest, nil); got != "" {
		t.Errorf("Feedback of nothing left = %q, want nothing", got)
	}
	if got := Feedback(nil, latest, nil); got != "" {
		t.Errorf("Feedback(nil) = %q, want nothing", got)
	}
}
