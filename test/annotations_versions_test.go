package test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// numberedLines is "line from" … "line to", one a line.
func numberedLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// hashObject is the blob id git gives content: the content nonce a client
// is shown for it.
func hashObject(t *testing.T, content string) string {
	t.Helper()
	cmd := exec.Command("git", "hash-object", "--stdin")
	cmd.Stdin = strings.NewReader(content)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// A comment names the version of the file it was made on
// (_meta.versions, as operations do). When the file changed before the
// comment arrived, it is bound to the lines the person selected on the
// version shown, or refused with nothing stored; the agent is told the
// lines where they are. A comment made on lines 10–12 as shown, with five
// lines inserted above them meanwhile, names lines 15–17 in the text
// "changesetd turn start --hook --feedback" prints.
func TestCommentBindsToTheShownVersion(t *testing.T) {
	t.Parallel()
	shownText := numberedLines(1, 20)
	inserted := "new 1\nnew 2\nnew 3\nnew 4\nnew 5\n" + shownText
	for _, c := range []struct {
		name string
		// anchor is the annotation's turn and whether its lines are on
		// the working tree (between turns, on lines the baseline lacks).
		turn   string
		onTree bool
	}{
		{"on the working tree between turns", "baseline", true},
		{"on the running turn", "t2", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := gitRepo(t, map[string]string{"a.txt": "start\n"})
			d := startDaemon(t, repo)
			e := attachOps(t, d, repo)
			uri := requireAnnotationsChannel(t, e.c, onlySession(t, e.c))
			m := mirrorAnnotations(t, e.c, uri)
			hook := func(edge, id string, feedback bool) string {
				t.Helper()
				in, _ := json.Marshal(map[string]any{"session_id": "cc-1", "cwd": repo, "prompt": "prompt " + id})
				args := []string{"turn", edge, "--hook"}
				if id != "" {
					args = append(args, "--id", id)
				}
				if feedback {
					args = append(args, "--feedback")
				}
				return d.cliOK(t, string(in), args...)
			}
			// The agent writes the version the person is shown; its turn
			// keeps it.
			hook("start", "t1", false)
			writeFile(t, repo, "a.txt", shownText)
			hook("end", "", false)
			if c.turn == "t2" {
				hook("start", "t2", false)
			}
			nonce := hashObject(t, shownText)
			st := e.m.Wait("a.txt as shown", func(st protocol.ChangesetState) bool {
				f := findFile(st, repo, "a.txt")
				return ready(st) && f != nil && f.Edit.After != nil && f.Edit.After.Content.Nonce == nonce
			})
			versions := versionsOf(st, e.id("a.txt"))

			// Five lines are inserted above before the comment arrives.
			writeFile(t, repo, "a.txt", inserted)
			turn := c.turn
			comment := func(id string, sel map[string]any, versions map[string]any) map[string]any {
				a := newAnnotation(id, turn, e.id("a.txt"), sel, "r-"+id, "Why these three?")
				if c.onTree {
					a["annotation"].(map[string]any)["_meta"] = map[string]any{protocol.MetaOnWorkingTree: true}
				}
				a["_meta"] = map[string]any{"versions": versions}
				return a
			}
			annotate(t, m, 1, comment("A1", lineRange(9, 12, 0), versions))
			a := findAnnotation(m.State(), "A1")
			if a == nil || a.Range == nil || a.Range.Start.Line != 14 || a.Range.End.Line != 17 {
				t.Fatalf("the comment is stored on %+v, want lines 14..17 (0-based, end exclusive): the lines selected, moved by the insert", a)
			}
			if _, echoed := a.Meta["versions"]; echoed {
				t.Errorf("the versions were stored with the annotation: %v", a.Meta)
			}

			// The agent is told the lines where they are now.
			out := hook("start", "t3", true)
			if !strings.Contains(out, "`a.txt`, lines 15-17") || strings.Contains(out, "lines 10-12") {
				t.Errorf("the feedback names other lines than 15-17:\n%s", out)
			}
			if !c.onTree {
				turn = "t3" // the running turn now: its lines are the working tree's
			}

			// Lines deleted since they were shown: refused, nothing stored.
			writeFile(t, repo, "a.txt", numberedLines(1, 9)+numberedLines(13, 20))
			dispatchOn(t, e.c, uri, 2, comment("A2", lineRange(9, 12, 0), versions))
			if reason := rejectionOf(t, e.c, uri, 2); !strings.Contains(reason, "changed since it was shown") || !strings.Contains(reason, "lines 10–12") {
				t.Errorf("a comment on deleted lines was refused with %q, want it to say the file changed since it was shown", reason)
			}
			// A version the daemon cannot read: refused too.
			unknown := map[string]any{e.id("a.txt"): map[string]any{"before": "", "after": hashObject(t, "never stored\n")}}
			dispatchOn(t, e.c, uri, 3, comment("A3", lineRange(2, 3, 0), unknown))
			if reason := rejectionOf(t, e.c, uri, 3); !strings.Contains(reason, "changed since it was shown") || !strings.Contains(reason, "cannot be read") {
				t.Errorf("a comment on a version never stored was refused with %q", reason)
			}
			// Still the version shown: stored as sent.
			now := numberedLines(1, 9) + numberedLines(13, 20)
			same := map[string]any{e.id("a.txt"): map[string]any{"before": "", "after": hashObject(t, now)}}
			annotate(t, m, 4, comment("A4", lineRange(2, 3, 0), same))
			if a := findAnnotation(m.State(), "A4"); a == nil || a.Range == nil || a.Range.Start.Line != 2 || a.Range.End.Line != 3 {
				t.Errorf("a comment on the current version is stored on %+v, want its lines as sent", a)
			}
			if got := findAnnotation(m.State(), "A2"); got != nil {
				t.Errorf("a refused comment was stored: %+v", got)
			}
		})
	}
}

// The annotations actions of a client take effect in the order it sent
// them, also when one must wait for the working directory (a snapshot, or
// the version it names): a reply dispatched right after the comment it
// answers, without waiting for its echo, lands on it.
func TestAnnotationActionsKeepTheirOrder(t *testing.T) {
	t.Parallel()
	files := map[string]string{"a.txt": numberedLines(1, 20)}
	for i := range 2000 {
		files[fmt.Sprintf("d/f%d.txt", i)] = "x\n"
	}
	repo := gitRepo(t, files)
	for i := range 2000 { // a snapshot that takes a while
		writeFile(t, repo, fmt.Sprintf("d/f%d.txt", i), "y\n")
	}
	d := startDaemon(t, repo)
	c := d.client(t, "reviewer")
	uri := requireAnnotationsChannel(t, c, onlySession(t, c))
	m := mirrorAnnotations(t, c, uri)
	file := fileURI(repo, "a.txt")
	set := newAnnotation("A1", "baseline", file, lineRange(2, 4, 0), "r1", "On the working tree.")
	set["annotation"].(map[string]any)["_meta"] = map[string]any{protocol.MetaOnWorkingTree: true}
	// Sent one after the other without waiting for an answer.
	for i, action := range []map[string]any{
		set,
		{"type": "annotations/entrySet", "annotationId": "A1", "entry": map[string]any{"id": "r2", "text": "And a reply."}},
		{"type": "annotations/updated", "annotationId": "A1", "resolved": true},
	} {
		req := map[string]any{"jsonrpc": "2.0", "id": 900 + i, "method": protocol.MethodDispatchAction,
			"params": map[string]any{"channel": uri, "clientSeq": i + 1, "action": action}}
		if err := c.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	err := c.Wait(ctx(t), "three echoes or rejections", func() bool {
		n := 0
		for _, e := range c.Envelopes(uri) {
			if e.Origin != nil && e.Origin.ClientID == "reviewer" {
				n++
			}
		}
		return n >= 3
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Envelopes(uri) {
		if e.RejectionReason != "" {
			t.Errorf("clientSeq %d was rejected: %s", e.Origin.ClientSeq, e.RejectionReason)
		}
	}
	if a := findAnnotation(m.State(), "A1"); a == nil || len(a.Entries) != 2 || !a.Resolved {
		t.Errorf("A1 is %+v, want the comment with its reply, resolved", a)
	}
}

// Moving a comment to other lines (annotations/updated with a range)
// names the version they were selected on too, and lands on them.
func TestMovedCommentBindsToTheShownVersion(t *testing.T) {
	t.Parallel()
	shownText := numberedLines(1, 20)
	repo := gitRepo(t, map[string]string{"a.txt": "start\n"})
	d := startDaemon(t, repo)
	e := attachOps(t, d, repo)
	uri := requireAnnotationsChannel(t, e.c, onlySession(t, e.c))
	m := mirrorAnnotations(t, e.c, uri)
	hook := func(edge, id string) {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"session_id": "cc-1", "cwd": repo, "prompt": "prompt " + id})
		args := []string{"turn", edge, "--hook"}
		if id != "" {
			args = append(args, "--id", id)
		}
		d.cliOK(t, string(in), args...)
	}
	hook("start", "t1")
	writeFile(t, repo, "a.txt", shownText)
	hook("end", "")
	hook("start", "t2")
	nonce := hashObject(t, shownText)
	st := e.m.Wait("a.txt as shown", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "a.txt")
		return ready(st) && f != nil && f.Edit.After != nil && f.Edit.After.Content.Nonce == nonce
	})
	annotate(t, m, 1, newAnnotation("A1", "t2", e.id("a.txt"), lineRange(0, 1, 0), "r1", "Move me."))
	writeFile(t, repo, "a.txt", "new 1\nnew 2\nnew 3\nnew 4\nnew 5\n"+shownText)
	// Named as a client may name the file (file://localhost/…), not as
	// the daemon does.
	versions := map[string]any{strings.Replace(e.id("a.txt"), "file://", "file://localhost", 1): versionsOf(st, e.id("a.txt"))[e.id("a.txt")]}
	annotate(t, m, 2, map[string]any{"type": "annotations/updated", "annotationId": "A1", "range": lineRange(9, 12, 0),
		"_meta": map[string]any{"versions": versions}})
	if a := findAnnotation(m.State(), "A1"); a == nil || a.Range == nil || a.Range.Start.Line != 14 || a.Range.End.Line != 17 {
		t.Fatalf("the comment was moved to %+v, want lines 14..17: the lines selected, moved by the insert", a)
	}
}
