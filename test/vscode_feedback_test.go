package test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// vscodeFeedback is an annotations/set as VS Code's agent host writes a
// feedback item (agentFeedbackAnnotations.ts and its feedbackToAnnotation):
// turnId "", the comment as entry "<id>:0", and the lifecycle under
// _meta["vscode.agentFeedback"], other _meta keys kept.
func vscodeFeedback(id, resource string, rng map[string]any, text, kind, state string, extra map[string]any) map[string]any {
	fb := map[string]any{"kind": kind, "state": state, "sessionResource": "agent-host-copilot:/session-1"}
	for k, v := range extra {
		fb[k] = v
	}
	return map[string]any{"type": "annotations/set", "annotation": map[string]any{
		"id": id, "turnId": "", "resource": resource, "range": rng, "resolved": state == "resolved",
		"entries": []any{map[string]any{"id": id + ":0", "text": text}},
		"_meta":   map[string]any{"unrelated": "preserve", protocol.MetaFeedback: fb},
	}}
}

func feedbackMeta(t *testing.T, a *protocol.Annotation) map[string]any {
	t.Helper()
	if a == nil {
		t.Fatal("no such annotation")
	}
	fb, _ := a.Meta[protocol.MetaFeedback].(map[string]any)
	return fb
}

// A comment written in VS Code on a changesetd session reaches the agent
// through "turn start --hook --feedback" like one from the review page,
// once accepted; a proposed one waits for the user; one VS Code already
// submitted is not handed over twice; states map both ways (delivered ↔
// submitted, resolved ↔ resolved); and the page's comments and the
// agent's replies carry what VS Code reads.
func TestVSCodeFeedbackReachesTheAgent(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "one\ntwo\nthree\nfour\n"})
	d := startDaemon(t, repo)
	vscode := d.client(t, "vscode")
	sum := onlySession(t, vscode)
	uri := requireAnnotationsChannel(t, vscode, sum)
	m := mirrorAnnotations(t, vscode, uri)
	prompt := func(id string) string {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"session_id": "cc-1", "cwd": repo, "hook_event_name": "UserPromptSubmit", "prompt": "prompt " + id})
		return d.cliOK(t, string(in), "turn", "start", "--hook", "--id", id, "--feedback")
	}
	prompt("t1")
	writeFile(t, repo, "a.txt", "one\nTWO\nthree\nfour\n")
	stop, _ := json.Marshal(map[string]any{"session_id": "cc-1", "cwd": repo, "hook_event_name": "Stop"})
	d.cliOK(t, string(stop), "turn", "end", "--hook")
	file := "file://" + repo + "/a.txt"

	annotate(t, m, 1, vscodeFeedback("fb-user", file, lineRange(1, 1, 3), "Please keep it lower case.", "user", "accepted", map[string]any{"pendingAgentReveal": true, "codeSelection": "TWO"}))
	annotate(t, m, 2, vscodeFeedback("fb-proposed", file, lineRange(2, 2, 5), "A proposed review comment.", "codeReview", "created", nil))
	annotate(t, m, 3, vscodeFeedback("fb-sent", file, lineRange(3, 3, 4), "Already sent from VS Code.", "prReview", "submitted", map[string]any{"sourcePRReviewCommentId": "c9"}))
	annotate(t, m, 4, newAnnotation("page-1", "t1", file, lineRange(0, 0, 3), "r1", "A comment from the page."))

	a := findAnnotation(m.State(), "fb-user")
	if a.TurnID != "t1" {
		t.Errorf("VS Code's empty turnId became %q, want the latest turn t1", a.TurnID)
	}
	if fb := feedbackMeta(t, a); fb["state"] != "accepted" || fb["codeSelection"] != "TWO" || a.Meta["unrelated"] != "preserve" {
		t.Errorf("VS Code's _meta was not kept: %v", a.Meta)
	}
	page := findAnnotation(m.State(), "page-1")
	if fb := feedbackMeta(t, page); fb["kind"] != "user" || fb["state"] != "accepted" || fb["sessionResource"] != sum.Resource {
		t.Errorf("the page's comment carries no VS Code feedback of this session: %v", page.Meta)
	}

	out := prompt("t2")
	for _, want := range []string{"`fb-user`", "Please keep it lower case.", "`page-1`", "A comment from the page."} {
		if !strings.Contains(out, want) {
			t.Errorf("the feedback lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"fb-proposed", "fb-sent"} {
		if strings.Contains(out, not) {
			t.Errorf("the feedback shows %s:\n%s", not, out)
		}
	}
	a = waitFor(m, "fb-user submitted", "fb-user", func(a *protocol.Annotation) bool {
		return a != nil && feedbackMeta(t, a)["state"] == "submitted"
	})
	if _, ok := feedbackMeta(t, a)["pendingAgentReveal"]; ok || a.Meta[protocol.MetaDelivered] == nil {
		t.Errorf("a delivered comment keeps pendingAgentReveal or has no delivery: %v", a.Meta)
	}
	waitFor(m, "page-1 submitted", "page-1", func(a *protocol.Annotation) bool {
		return a != nil && feedbackMeta(t, a)["state"] == "submitted"
	})
	if fb := feedbackMeta(t, findAnnotation(m.State(), "fb-proposed")); fb["state"] != "created" {
		t.Errorf("the proposed comment is %v, want still created", fb["state"])
	}

	// The agent answers and resolves: VS Code sees its author and the
	// resolved state.
	d.cliOK(t, "", "annotations", "reply", "fb-user", "Lower case again.", "--dir", repo)
	d.cliOK(t, "", "annotations", "resolve", "fb-user", "--dir", repo)
	a = waitFor(m, "fb-user resolved", "fb-user", func(a *protocol.Annotation) bool {
		return a != nil && a.Resolved && feedbackMeta(t, a)["state"] == "resolved"
	})
	reply := a.Entries[len(a.Entries)-1]
	if author, _ := reply.Meta[protocol.MetaFeedback].(map[string]any); author["author"] != "agent" {
		t.Errorf("the agent's reply does not name its author for VS Code: %v", reply.Meta)
	}
	// Re-opened: submitted again, having been delivered.
	annotate(t, m, 5, map[string]any{"type": "annotations/updated", "annotationId": "fb-user", "resolved": false})
	waitFor(m, "fb-user re-opened", "fb-user", func(a *protocol.Annotation) bool {
		return a != nil && !a.Resolved && feedbackMeta(t, a)["state"] == "submitted"
	})

	// The user accepts the proposed comment in VS Code: the next prompt
	// hands it over; then VS Code resolves it by state alone.
	annotate(t, m, 6, vscodeFeedback("fb-proposed", file, lineRange(2, 2, 5), "A proposed review comment.", "codeReview", "accepted", nil))
	if out := prompt("t3"); !strings.Contains(out, "A proposed review comment.") || strings.Contains(out, "fb-sent") {
		t.Errorf("the accepted comment was not handed over (or the submitted one was):\n%s", out)
	}
	p := findAnnotation(m.State(), "fb-proposed")
	if p.TurnID != "t1" {
		t.Errorf("a re-sent empty turnId moved the anchor to %q", p.TurnID)
	}
	set := vscodeFeedback("fb-proposed", file, lineRange(2, 2, 5), "A proposed review comment.", "codeReview", "resolved", nil)
	set["annotation"].(map[string]any)["resolved"] = false // the state alone says it
	annotate(t, m, 7, set)
	if p := findAnnotation(m.State(), "fb-proposed"); !p.Resolved {
		t.Errorf("VS Code's resolved state did not resolve the annotation: %+v", p)
	}
}
