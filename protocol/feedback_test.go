package protocol

import "testing"

// FeedbackOf reads VS Code's feedback as VS Code does: a kind or state it
// does not know, or a sessionResource that is not a string, is not
// feedback; WithFeedbackState keeps every other member.
func TestFeedbackOf(t *testing.T) {
	mk := func(fb map[string]any) Annotation { return Annotation{Meta: Object{MetaFeedback: fb}} }
	if _, ok := FeedbackOf(mk(map[string]any{"kind": "user", "state": "accepted", "sessionResource": "s"})); !ok {
		t.Error("valid feedback not read")
	}
	for _, bad := range []map[string]any{
		{"kind": "robot", "state": "accepted", "sessionResource": "s"},
		{"kind": "user", "state": "pending", "sessionResource": "s"},
		{"kind": "user", "state": "accepted", "sessionResource": 7},
		{"kind": "user", "state": "accepted"},
	} {
		if _, ok := FeedbackOf(mk(bad)); ok {
			t.Errorf("%v read as feedback", bad)
		}
	}
	if !ProposedOnly(mk(map[string]any{"kind": "codeReview", "state": "created", "sessionResource": "s"})) {
		t.Error("a created review comment is not proposed-only")
	}
	in := Object{"k": 1, MetaFeedback: map[string]any{"kind": "prReview", "state": "accepted", "sessionResource": "s", "pendingAgentReveal": true, "sourcePRReviewCommentId": "c"}}
	out := WithFeedbackState(in, FeedbackSubmitted, "other")
	fb := out[MetaFeedback].(map[string]any)
	if fb["state"] != "submitted" || fb["kind"] != "prReview" || fb["sessionResource"] != "s" || fb["sourcePRReviewCommentId"] != "c" || out["k"] != 1 {
		t.Errorf("WithFeedbackState: %v", out)
	}
	if _, ok := fb["pendingAgentReveal"]; ok {
		t.Error("pendingAgentReveal kept after submission")
	}
	if in[MetaFeedback].(map[string]any)["state"] != "accepted" {
		t.Error("WithFeedbackState changed its input")
	}
	if fresh := WithFeedbackState(nil, FeedbackAccepted, "ahp-session:/x")[MetaFeedback].(map[string]any); fresh["kind"] != "user" || fresh["sessionResource"] != "ahp-session:/x" {
		t.Errorf("a new Feedback: %v", fresh)
	}
}
