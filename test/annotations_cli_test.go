package test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

// cliRun runs the daemon binary with args against d, with stdin, and
// returns what it printed and its exit code.
func (d *daemon) cliRun(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	code, stdout, stderr = cli(t, stdin, nil, append(args, "--state-dir", d.StateDir)...)
	return stdout, stderr, code
}

// cliOK is cliRun that fails the test unless the command exits 0.
func (d *daemon) cliOK(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errs, code := d.cliRun(t, stdin, args...)
	if code != 0 {
		t.Fatalf("changesetd %v: exit %d\n%s", args, code, errs)
	}
	return out
}

// requireAnnotationsChannel waits until the session is ready (its
// baseline taken), then skips the test when the daemon's sessions have no
// annotations channel (no annotations summary), and returns the channel.
func requireAnnotationsChannel(t *testing.T, c *fake.Client, sum protocol.SessionSummary) string {
	t.Helper()
	catalogue(t, c, sum.Resource)
	if sum.Annotations == nil {
		t.Skip("this daemon's sessions have no annotations channel (their summary lacks annotations)")
	}
	return sum.Annotations.Resource
}

// annotate dispatches action on m's channel as m's client with clientSeq
// seq, and waits for its echo, failing the test on a rejection.
func annotate(t *testing.T, m *annotationsMirror, seq int64, action map[string]any) {
	t.Helper()
	dispatchOn(t, m.c, m.uri, seq, action)
	var echo *fake.Envelope
	err := m.c.Wait(ctx(t), "the echo of "+action["type"].(string), func() bool {
		for _, e := range m.c.Envelopes(m.uri) {
			if e.Origin != nil && e.Origin.ClientSeq == seq {
				echo = &e
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	if echo.RejectionReason != "" {
		t.Fatalf("%s rejected: %s", action["type"], echo.RejectionReason)
	}
}

// waitFor waits until cond holds for the annotation id as m mirrors it
// (nil when there is none), and returns it.
func waitFor(m *annotationsMirror, what, id string, cond func(*protocol.Annotation) bool) *protocol.Annotation {
	m.t.Helper()
	return findAnnotation(m.Wait(what, func(st protocol.AnnotationsState) bool { return cond(findAnnotation(st, id)) }), id)
}

// lineRange is the zero-based TextRange from line first to the end of
// line last (width characters long).
func lineRange(first, last, width int) map[string]any {
	return map[string]any{"start": map[string]any{"line": first, "character": 0}, "end": map[string]any{"line": last, "character": width}}
}

func newAnnotation(id, turnID, resource string, rng map[string]any, entryID, text string) map[string]any {
	a := map[string]any{"id": id, "turnId": turnID, "resource": resource, "resolved": false,
		"entries": []any{map[string]any{"id": entryID, "text": text}}}
	if rng != nil {
		a["range"] = rng
	}
	return map[string]any{"type": "annotations/set", "annotation": a}
}

func TestTurnStartFeedbackHook(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "one\ntwo\nthree\nfour\n"})
	d := startDaemon(t, repo)
	reviewer := d.client(t, "reviewer")
	sum := onlySession(t, reviewer)
	uri := requireAnnotationsChannel(t, reviewer, sum)
	m := mirrorAnnotations(t, reviewer, uri)
	prompt := func(id string, feedback bool) string {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"session_id": "cc-1", "cwd": repo, "hook_event_name": "UserPromptSubmit", "prompt": "prompt " + id})
		args := []string{"turn", "start", "--hook", "--id", id}
		if feedback {
			args = append(args, "--feedback")
		}
		return d.cliOK(t, string(in), args...)
	}

	if out := prompt("t1", true); out != "" {
		t.Fatalf("with no annotations, the hook printed %q", out)
	}
	writeFile(t, repo, "a.txt", "one\nTWO\nthree\nfour\n")
	stop, _ := json.Marshal(map[string]any{"session_id": "cc-1", "cwd": repo, "hook_event_name": "Stop"})
	d.cliOK(t, string(stop), "turn", "end", "--hook")
	file := "file://" + repo + "/a.txt"
	annotate(t, m, 1, newAnnotation("A1", "t1", file, lineRange(1, 1, 3), "r1", "Why upper case?"))
	annotate(t, m, 2, newAnnotation("A2", "t1", file, lineRange(3, 3, 4), "r2", "Done with this one."))
	annotate(t, m, 3, map[string]any{"type": "annotations/updated", "annotationId": "A2", "resolved": true})

	// Without --feedback: silent, and nothing is marked delivered.
	if out := prompt("t2", false); out != "" {
		t.Fatalf("without --feedback the hook printed %q", out)
	}
	out := prompt("t3", true)
	for _, want := range []string{"`a.txt`, line 2", "`A1`", "Why upper case?", `changesetd annotations reply ID "`, "changesetd annotations resolve ID"} {
		if !strings.Contains(out, want) {
			t.Errorf("the feedback lacks %q:\n%s", want, out)
		}
	}
	// docs/agents.md shows what the agent sees.
	doc := docBlock(t, "markdown", "feedback")
	if intro, _, _ := strings.Cut(out, "### "); !strings.HasPrefix(doc, intro+"### ") {
		t.Errorf("docs/agents.md shows the feedback as\n%s\nbut it begins\n%s", doc, intro)
	}
	if strings.Contains(out, "A2") || strings.Contains(out, "Done with this one") {
		t.Errorf("the feedback shows the resolved annotation:\n%s", out)
	}
	a := waitFor(m, "A1 delivered to t3", "A1", func(a *protocol.Annotation) bool {
		d, _ := a.Meta[protocol.MetaDelivered].(map[string]any)
		return d != nil && d["turnId"] == "t3"
	})
	if got := a.Meta[protocol.MetaDelivered].(map[string]any)["entries"]; !reflect.DeepEqual(got, []any{"r1"}) {
		t.Errorf("delivered entries = %v, want [r1]", got)
	}
	if a2 := findAnnotation(m.State(), "A2"); a2.Meta[protocol.MetaDelivered] != nil {
		t.Errorf("the resolved A2 was marked delivered: %v", a2.Meta)
	}

	// Delivered: the next prompt does not repeat it, nor after the agent's
	// own reply.
	if out := prompt("t4", true); out != "" {
		t.Errorf("the second prompt repeated delivered feedback:\n%s", out)
	}
	d.cliOK(t, "", "annotations", "reply", "A1", "It is a constant now.", "--dir", repo)
	if out := prompt("t5", true); out != "" {
		t.Errorf("the agent's own reply made the annotation open again:\n%s", out)
	}

	// A new reviewer entry makes it open again, shown with the thread.
	annotate(t, m, 4, map[string]any{"type": "annotations/entrySet", "annotationId": "A1", "entry": map[string]any{"id": "r3", "text": "Then name it TWO_VALUE."}})
	out = prompt("t6", true)
	for _, want := range []string{"**Reviewer:** Why upper case?", "**Agent:** It is a constant now.", "**Reviewer, new:** Then name it TWO_VALUE."} {
		if !strings.Contains(out, want) {
			t.Errorf("the feedback lacks %q:\n%s", want, out)
		}
	}
	if out := prompt("t7", true); out != "" {
		t.Errorf("the new entry was shown twice:\n%s", out)
	}
}

func TestAnnotationsCommand(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "b.txt": "b\n"})
	d := startDaemon(t, repo)
	reviewer := d.client(t, "reviewer")
	sum := onlySession(t, reviewer)
	uri := requireAnnotationsChannel(t, reviewer, sum)
	m := mirrorAnnotations(t, reviewer, uri)
	observer := mirrorAnnotations(t, d.client(t, "observer"), uri)

	annotate(t, m, 1, newAnnotation("A1", "baseline", "file://"+repo+"/a.txt", lineRange(0, 1, 3), "r1", "Split this\ninto two."))
	annotate(t, m, 2, newAnnotation("A2", "baseline", "file://"+repo+"/b.txt", nil, "r2", "Is b needed?"))
	annotate(t, m, 3, map[string]any{"type": "annotations/updated", "annotationId": "A2", "resolved": true})
	annotations := func(args ...string) string {
		t.Helper()
		return d.cliOK(t, "", append([]string{"annotations", "--dir", repo}, args...)...)
	}

	// json: the state as the daemon sends it.
	var got, want any
	if err := json.Unmarshal([]byte(annotations("--format", "json")), &got); err != nil {
		t.Fatal(err)
	}
	other := d.client(t, "other")
	raw, _ := subscribe(t, other, uri)
	json.Unmarshal(raw, &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("--format json printed\n%v\nthe daemon's snapshot is\n%v", got, want)
	}
	var open protocol.AnnotationsState
	if err := json.Unmarshal([]byte(annotations("--format", "json", "--open")), &open); err != nil {
		t.Fatal(err)
	}
	if len(open.Annotations) != 1 || open.Annotations[0].ID != "A1" {
		t.Errorf("--open --format json = %+v, want A1 only", open)
	}

	text := annotations()
	wantText := "[A1] a.txt, lines 1-2 (turn baseline, open)\n" +
		"  reviewer: Split this\n    into two.\n" +
		"\n" +
		"[A2] b.txt, whole file (turn baseline, resolved)\n" +
		"  reviewer: Is b needed?\n"
	if text != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", text, wantText)
	}
	if md := annotations("--format", "markdown", "--open"); !strings.HasPrefix(md, "### `a.txt`, lines 1-2\n") || strings.Contains(md, "b.txt") {
		t.Errorf("--open --format markdown:\n%s", md)
	}

	// reply: a new entry by the agent, seen by another subscriber.
	entryID := strings.TrimSpace(d.cliOK(t, "", "annotations", "reply", "A1", "Split", "in", "two.", "--dir", repo))
	a := waitFor(observer, "the agent's reply", "A1", func(a *protocol.Annotation) bool { return a != nil && len(a.Entries) == 2 })
	if e := a.Entries[1]; e.ID != entryID || e.Text.Text != "Split in two." || e.Meta[protocol.MetaAuthor] != "agent" {
		t.Errorf("the reply as observed: %+v (printed id %q)", e, entryID)
	}
	if text := annotations(); !strings.Contains(text, "  reviewer: Split this\n    into two.\n  agent: Split in two.\n") {
		t.Errorf("the reply is not listed as the agent's:\n%s", text)
	}

	// resolve and reopen flip resolved.
	d.cliOK(t, "", "annotations", "resolve", "A1", "--dir", repo)
	waitFor(observer, "A1 resolved", "A1", func(a *protocol.Annotation) bool { return a.Resolved })
	if err := json.Unmarshal([]byte(annotations("--format", "json", "--open")), &open); err != nil || len(open.Annotations) != 0 {
		t.Errorf("--open after resolve: %+v, %v", open, err)
	}
	d.cliOK(t, "", "annotations", "--session", sum.Resource, "reopen", "A1")
	waitFor(observer, "A1 reopened", "A1", func(a *protocol.Annotation) bool { return !a.Resolved })

	// A refused action: the daemon's reason on stderr, exit 1.
	for _, args := range [][]string{{"reply", "nosuch", "text"}, {"resolve", "nosuch"}, {"reply", "A1", ""}} {
		out, errs, code := d.cliRun(t, "", append([]string{"annotations", "--dir", repo}, args...)...)
		if code != 1 || out != "" || !strings.Contains(errs, "refused") {
			t.Errorf("annotations %v: exit %d, stdout %q, stderr %q; want exit 1 and the reason", args, code, out, errs)
		}
	}
}

func TestAnnotationsFollowTheLines(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "one\ntwo\nthree\n"})
	d := startDaemon(t, repo)
	reviewer := d.client(t, "reviewer")
	sum := onlySession(t, reviewer)
	uri := requireAnnotationsChannel(t, reviewer, sum)
	m := mirrorAnnotations(t, reviewer, uri)
	annotate(t, m, 1, newAnnotation("A1", "baseline", "file://"+repo+"/a.txt", lineRange(1, 2, 5), "r1", "Look here."))
	list := func() string {
		t.Helper()
		out := d.cliOK(t, "", "annotations", "--dir", repo)
		first, _, _ := strings.Cut(out, "\n")
		return first
	}

	// The daemon says where the lines are now in the snapshot it sends
	// the command.
	writeFile(t, repo, "a.txt", "zero\nhalf\none\ntwo\nthree\n")
	if got, want := list(), "[A1] a.txt, lines 4-5 (moved from lines 2-3) (turn baseline, open)"; got != want {
		t.Errorf("after a move:\n%s\nwant\n%s", got, want)
	}
	writeFile(t, repo, "a.txt", "zero\nhalf\none\nTWO\nthree\n")
	if got, want := list(), "[A1] a.txt, lines 4-5 (changed since) (turn baseline, open)"; got != want {
		t.Errorf("after an edit:\n%s\nwant\n%s", got, want)
	}
	writeFile(t, repo, "a.txt", "zero\nhalf\none\n")
	if got, want := list(), "[A1] a.txt, lines 2-3 (gone since) (turn baseline, open)"; got != want {
		t.Errorf("after a deletion:\n%s\nwant\n%s", got, want)
	}
}

// Two agents in one directory: a comment on one agent's turn is handed to
// that agent, not to the other one that happens to prompt first.
func TestFeedbackGoesToTheAgentWhoseTurnItIs(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	d := startDaemon(t, repo)
	reviewer := d.client(t, "reviewer")
	sum := onlySession(t, reviewer)
	uri := requireAnnotationsChannel(t, reviewer, sum)
	m := mirrorAnnotations(t, reviewer, uri)
	hook := func(agent, edge, id string, feedback bool) string {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"session_id": agent, "cwd": repo, "prompt": "p"})
		args := []string{"turn", edge, "--hook"}
		if id != "" {
			args = append(args, "--id", id)
		}
		if feedback {
			args = append(args, "--feedback")
		}
		return d.cliOK(t, string(in), args...)
	}
	hook("agent-a", "start", "ta1", true)
	writeFile(t, repo, "a.txt", "A\n")
	hook("agent-a", "end", "", false)
	hook("agent-b", "start", "tb1", true)
	writeFile(t, repo, "b.txt", "B\n")
	hook("agent-b", "end", "", false)

	annotate(t, m, 1, newAnnotation("on-a", "ta1", "file://"+repo+"/a.txt", lineRange(0, 0, 1), "r1", "Agent A: lower case, please."))
	annotate(t, m, 2, newAnnotation("on-b", "tb1", "file://"+repo+"/b.txt", lineRange(0, 0, 1), "r2", "Agent B: why?"))

	outB := hook("agent-b", "start", "tb2", true)
	if strings.Contains(outB, "Agent A:") || !strings.Contains(outB, "Agent B: why?") {
		t.Errorf("agent B's prompt was given:\n%s\nwant its own comment only", outB)
	}
	outA := hook("agent-a", "start", "ta2", true)
	if strings.Contains(outA, "Agent B:") || !strings.Contains(outA, "Agent A: lower case") {
		t.Errorf("agent A's prompt was given:\n%s\nwant its own comment only", outA)
	}
	waitFor(m, "both delivered", "on-a", func(a *protocol.Annotation) bool { _, ok := a.Meta[protocol.MetaDelivered]; return ok })
}
