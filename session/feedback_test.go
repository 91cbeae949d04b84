package session

import (
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// Annotations stored before the server wrote VS Code's Feedback get one
// when the session is restored, from their records.
func TestRestoredAnnotationsGetFeedback(t *testing.T) {
	st := withFeedbackAll(protocol.AnnotationsState{Annotations: []protocol.Annotation{
		{ID: "open"},
		{ID: "done", Resolved: true},
		{ID: "sent", Meta: protocol.Object{protocol.MetaDelivered: map[string]any{"at": "x", "entries": []any{}}}},
	}}, "ahp-session:/s")
	for i, want := range []string{"accepted", "resolved", "submitted"} {
		f, ok := protocol.FeedbackOf(st.Annotations[i])
		if !ok || f.State != want || f.Kind != "user" || f.SessionResource != "ahp-session:/s" {
			t.Errorf("%s: %+v %v, want state %s", st.Annotations[i].ID, f, ok, want)
		}
	}
}
