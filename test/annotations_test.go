package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

// findAnnotation returns the annotation with id, or nil.
func findAnnotation(st protocol.AnnotationsState, id string) *protocol.Annotation {
	for i := range st.Annotations {
		if st.Annotations[i].ID == id {
			return &st.Annotations[i]
		}
	}
	return nil
}

// placeOf decodes an annotation's changesetd/current.
func placeOf(a *protocol.Annotation) (protocol.AnnotationPlace, bool) {
	if a == nil {
		return protocol.AnnotationPlace{}, false
	}
	v, ok := a.Meta[protocol.MetaCurrent]
	if !ok {
		return protocol.AnnotationPlace{}, false
	}
	b, _ := json.Marshal(v)
	var p protocol.AnnotationPlace
	return p, json.Unmarshal(b, &p) == nil
}

func hasPlace(st protocol.AnnotationsState, id, status string, firstLine int) bool {
	p, ok := placeOf(findAnnotation(st, id))
	if !ok || p.Status != status {
		return false
	}
	return firstLine < 0 || (p.Range != nil && p.Range.Start.Line == firstLine)
}

func dispatchOn(t *testing.T, c *fake.Client, channel string, seq int64, action any) {
	t.Helper()
	if err := c.Call(ctx(t), protocol.MethodDispatchAction, map[string]any{"channel": channel, "clientSeq": seq, "action": action}, nil); err != nil {
		t.Fatal(err)
	}
}

// rejectionOf waits for the rejection of the client's action seq and
// returns its reason.
func rejectionOf(t *testing.T, c *fake.Client, channel string, seq int64) string {
	t.Helper()
	var reason string
	err := c.Wait(ctx(t), fmt.Sprintf("rejection of clientSeq %d", seq), func() bool {
		for _, e := range c.Envelopes(channel) {
			if e.Origin != nil && e.Origin.ClientSeq == seq && e.RejectionReason != "" {
				reason = e.RejectionReason
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	return reason
}

func prefixedLines(n int, prefix string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s %d\n", prefix, i)
	}
	return b.String()
}

// TestAnnotationsChannel is the channel end to end: two clients see the
// same annotations in order; invalid actions go back to their sender
// only; the current place follows the lines through later turns and says
// "gone" once they are deleted; everything survives kill -9; and every
// frame validates against the upstream schemas.
func TestAnnotationsChannel(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": prefixedLines(20, "line")})
	state := t.TempDir()
	d := startDaemonIn(t, state, repo)
	reviewer := d.client(t, "reviewer")
	ide := d.client(t, "ide")
	sum := onlySession(t, reviewer)
	uri := protocol.AnnotationsURI(sum.Resource)
	if sum.Annotations == nil || sum.Annotations.Resource != uri || sum.Annotations.AnnotationCount != 0 {
		t.Fatalf("listSessions annotations = %+v, want the channel %s with no annotations", sum.Annotations, uri)
	}
	subscribe(t, ide, protocol.RootURI)
	catalogue(t, reviewer, sum.Resource) // the session is ready

	// Turn 1 rewrites line 10.
	turn1 := turnStart(t, reviewer, sum.Resource, "edit a")
	writeFile(t, repo, "a.txt", strings.Replace(prefixedLines(20, "line"), "line 10\n", "line 10 (turn 1)\n", 1))
	turnEnd(t, reviewer, sum.Resource)

	mr := mirrorAnnotations(t, reviewer, uri)
	mi := mirrorAnnotations(t, ide, uri)
	if len(mr.base.Annotations) != 0 {
		t.Fatalf("a new session has annotations: %+v", mr.base)
	}

	file := "file://" + repo + "/a.txt"
	rng := map[string]any{"start": map[string]any{"line": 10, "character": 0}, "end": map[string]any{"line": 12, "character": 0}}
	dispatchOn(t, reviewer, uri, 1, map[string]any{"type": "annotations/set", "annotation": map[string]any{
		"id": "n1", "turnId": turn1, "resource": file, "range": rng, "resolved": false,
		"entries": []any{map[string]any{"id": "e1", "text": "Why this change?"}},
	}})
	for _, m := range []*annotationsMirror{mr, mi} {
		m.Wait("n1 placed where the turn left it", func(st protocol.AnnotationsState) bool { return hasPlace(st, "n1", protocol.PlaceSame, 10) })
	}
	// The echo carries the sender's origin, on both connections.
	for _, c := range []*fake.Client{reviewer, ide} {
		es := c.Envelopes(uri)
		if len(es) == 0 || es[0].Origin == nil || es[0].Origin.ClientID != "reviewer" || es[0].Origin.ClientSeq != 1 {
			t.Fatalf("first envelope on %s = %+v, want the reviewer's echo", uri, es)
		}
	}

	// Invalid actions: rejected to the sender only, state unchanged.
	bad := []struct {
		action any
		want   string
	}{
		{map[string]any{"type": "annotations/set", "annotation": map[string]any{"id": "n2", "turnId": turn1, "resource": file, "resolved": false, "entries": []any{}}}, "at least one entry"},
		{map[string]any{"type": "annotations/set", "annotation": map[string]any{"id": "n2", "turnId": "no-such-turn", "resource": file, "resolved": false, "entries": []any{map[string]any{"id": "e", "text": "x"}}}}, "not a turn"},
		{map[string]any{"type": "annotations/set", "annotation": map[string]any{"id": "n2", "turnId": turn1, "resource": "file:///etc/passwd", "resolved": false, "entries": []any{map[string]any{"id": "e", "text": "x"}}}}, "inside the session"},
		{map[string]any{"type": "annotations/set", "annotation": map[string]any{"id": "n2", "turnId": turn1, "resource": file, "resolved": false,
			"range":   map[string]any{"start": map[string]any{"line": 5, "character": 0}, "end": map[string]any{"line": 2, "character": 0}},
			"entries": []any{map[string]any{"id": "e", "text": "x"}}}}, "ends before it starts"},
		{map[string]any{"type": "annotations/entryRemoved", "annotationId": "n1", "entryId": "e1"}, "last entry"},
		{map[string]any{"type": "annotations/entrySet", "annotationId": "nope", "entry": map[string]any{"id": "e", "text": "x"}}, "no annotation"},
		{map[string]any{"type": "annotations/entrySet", "annotationId": "n1", "entry": map[string]any{"id": "e2", "text": "  "}}, "text is empty"},
	}
	for i, b := range bad {
		seq := int64(100 + i)
		dispatchOn(t, reviewer, uri, seq, b.action)
		if r := rejectionOf(t, reviewer, uri, seq); !strings.Contains(r, b.want) {
			t.Errorf("rejection %d = %q, want it to say %q", i, r, b.want)
		}
	}
	// A reply from the IDE; then the ide's view must match the reviewer's.
	dispatchOn(t, ide, uri, 1, map[string]any{"type": "annotations/entrySet", "annotationId": "n1", "entry": map[string]any{"id": "e2", "text": map[string]any{"markdown": "Fixed in the **next** turn."}, "_meta": map[string]any{protocol.MetaAuthor: "agent"}}})
	mr.Wait("the reply", func(st protocol.AnnotationsState) bool {
		a := findAnnotation(st, "n1")
		return a != nil && len(a.Entries) == 2 && a.Entries[1].Text.Markdown
	})
	for _, e := range ide.Envelopes(uri) {
		if e.RejectionReason != "" {
			t.Errorf("the ide received a rejection meant for the reviewer: %s", e.RejectionReason)
		}
	}

	// Turn 2 inserts three lines above: the annotation moved.
	turnStart(t, reviewer, sum.Resource, "insert above")
	writeFile(t, repo, "a.txt", "new 1\nnew 2\nnew 3\n"+strings.Replace(prefixedLines(20, "line"), "line 10\n", "line 10 (turn 1)\n", 1))
	turnEnd(t, reviewer, sum.Resource)
	// Places are recomputed when a client attaches, and when a watched
	// changeset sees the tree change.
	late := mirrorAnnotations(t, d.client(t, "late"), uri)
	if !hasPlace(late.base, "n1", protocol.PlaceMoved, 13) {
		b, _ := json.Marshal(late.base)
		t.Fatalf("after inserting 3 lines above, snapshot = %s; want n1 moved to line 13", b)
	}
	mr.Wait("n1 moved on the first client too", func(st protocol.AnnotationsState) bool { return hasPlace(st, "n1", protocol.PlaceMoved, 13) })

	// Delete the annotated lines: gone.
	all := strings.Split("new 1\nnew 2\nnew 3\n"+strings.Replace(prefixedLines(20, "line"), "line 10\n", "line 10 (turn 1)\n", 1), "\n")
	writeFile(t, repo, "a.txt", strings.Join(append(all[:13:13], all[15:]...), "\n"))
	gone := mirrorAnnotations(t, d.client(t, "later"), uri)
	if !hasPlace(gone.base, "n1", protocol.PlaceGone, -1) {
		b, _ := json.Marshal(gone.base)
		t.Fatalf("after deleting the lines, snapshot = %s; want n1 gone", b)
	}

	// Resolve, then compare both clients' views and the summary.
	dispatchOn(t, reviewer, uri, 2, map[string]any{"type": "annotations/updated", "annotationId": "n1", "resolved": true})
	// Resolving is echoed, then the feedback state follows it in an
	// annotations/set of its own: both clients wait for that too.
	resolved := func(st protocol.AnnotationsState) bool {
		a := findAnnotation(st, "n1")
		if a == nil {
			return false
		}
		f, _ := protocol.FeedbackOf(*a)
		return a.Resolved && f.State == protocol.FeedbackResolved && hasPlace(st, "n1", protocol.PlaceGone, -1)
	}
	want := mr.Wait("resolved", resolved)
	got := mi.Wait("resolved on the ide", resolved)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("the two clients disagree:\nreviewer %+v\nide      %+v", want, got)
	}
	if err := ide.Wait(ctx(t), "annotations summary change", func() bool {
		for _, n := range ide.Notes() {
			if n.Method == protocol.NotifySessionSummaryChanged && strings.Contains(string(n.Params), `"entryCount":2`) {
				return true
			}
		}
		return false
	}); err != nil {
		t.Error(err)
	}

	// Every frame of the channel is valid AHP.
	schemas := loadSchemas(t, "1.0.0")
	st := newFrameStats()
	for name, c := range map[string]*fake.Client{"reviewer": reviewer, "ide": ide} {
		schemas.checkFrames(t, name, c, st)
	}
	if st.rejections < len(bad) || st.snapshots < 2 {
		t.Errorf("schema check saw %d rejections and %d snapshots; the traffic should give more", st.rejections, st.snapshots)
	}

	// kill -9, restart on the same state: the annotation is all there.
	d.kill(t)
	d2 := startDaemonIn(t, state, repo)
	c := d2.client(t, "after")
	sum2 := onlySession(t, c)
	if sum2.Annotations == nil || sum2.Annotations.AnnotationCount != 1 || sum2.Annotations.EntryCount != 2 {
		t.Fatalf("after kill -9, listSessions annotations = %+v, want 1 annotation with 2 entries", sum2.Annotations)
	}
	after := mirrorAnnotations(t, c, uri)
	a := findAnnotation(after.base, "n1")
	if a == nil || !a.Resolved || len(a.Entries) != 2 || a.Entries[0].Text.Text != "Why this change?" || a.TurnID != turn1 {
		t.Fatalf("after kill -9, n1 = %+v", a)
	}
	if _, ok := a.Entries[0].Meta[protocol.MetaCreatedAt]; !ok {
		t.Errorf("entry has no %s: %+v", protocol.MetaCreatedAt, a.Entries[0])
	}
}

// The server owns its _meta keys: a client cannot fake where the lines
// are or that the agent was told.
func TestAnnotationsServerMetaIsTheServers(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": prefixedLines(5, "line")})
	d := startDaemon(t, repo)
	c := d.client(t, "reviewer")
	sum := onlySession(t, c)
	uri := protocol.AnnotationsURI(sum.Resource)
	m := mirrorAnnotations(t, c, uri)
	dispatchOn(t, c, uri, 1, map[string]any{"type": "annotations/set", "annotation": map[string]any{
		"id": "n1", "turnId": "baseline", "resource": "file://" + repo + "/a.txt", "resolved": false,
		"_meta":   map[string]any{protocol.MetaCurrent: map[string]any{"status": "gone"}, protocol.MetaDelivered: map[string]any{"at": "x", "entries": []string{"e1"}}, "mine": 1},
		"entries": []any{map[string]any{"id": "e1", "text": "whole file"}},
	}})
	st := m.Wait("placed", func(st protocol.AnnotationsState) bool { return hasPlace(st, "n1", protocol.PlaceSame, -1) })
	a := findAnnotation(st, "n1")
	if _, ok := a.Meta[protocol.MetaDelivered]; ok {
		t.Errorf("a client's %s was kept: %+v", protocol.MetaDelivered, a.Meta)
	}
	if a.Meta["mine"] != float64(1) {
		t.Errorf("the client's own _meta key was dropped: %+v", a.Meta)
	}
	var res json.RawMessage
	if err := c.Call(ctx(t), protocol.MethodAnnotationsDelivered, map[string]any{"channel": uri, "annotationIds": []string{"n1", "unknown"}, "turnId": "t9"}, &res); err != nil {
		t.Fatal(err)
	}
	if string(res) != "{}" {
		t.Errorf("annotationsDelivered result = %s, want {}", res)
	}
	m.Wait("delivered", func(st protocol.AnnotationsState) bool {
		a := findAnnotation(st, "n1")
		d, ok := a.Meta[protocol.MetaDelivered].(map[string]any)
		return ok && d["turnId"] == "t9" && fmt.Sprint(d["entries"]) == "[e1]"
	})
	err := c.Call(ctx(t), protocol.MethodAnnotationsDelivered, map[string]any{"channel": sum.Resource, "annotationIds": []string{"n1"}}, nil)
	if rpcCode(err) != protocol.CodeInvalidParams {
		t.Errorf("annotationsDelivered on the session channel: %v, want invalid params", err)
	}
}

// TestMeasureAnnotationsSubscribe measures a subscribe to an annotations
// channel holding 1,000 annotations over 100 files changed since their
// turn (the snapshot waits for every current place), next to git diffing
// the same files. A measurement, run by hand:
//
//	CHANGESETD_MEASURE=1 go test -count=1 -v -run MeasureAnnotations ./test
func TestMeasureAnnotationsSubscribe(t *testing.T) {
	if os.Getenv("CHANGESETD_MEASURE") == "" {
		t.Skip("a measurement: set CHANGESETD_MEASURE=1 to run it")
	}
	files := map[string]string{}
	for i := range 100 {
		files[fmt.Sprintf("f%03d.txt", i)] = prefixedLines(200, "line")
	}
	repo := gitRepo(t, files)
	d := startDaemon(t, repo)
	c := d.client(t, "bench")
	sum := onlySession(t, c)
	catalogue(t, c, sum.Resource)
	turn := turnStart(t, c, sum.Resource, "t")
	turnEnd(t, c, sum.Resource)
	uri := protocol.AnnotationsURI(sum.Resource)
	m := mirrorAnnotations(t, c, uri)
	for i := range 1000 {
		f := fmt.Sprintf("file://%s/f%03d.txt", repo, i%100)
		line := 10 + (i/100)*15
		dispatchOn(t, c, uri, int64(i+1), map[string]any{"type": "annotations/set", "annotation": map[string]any{
			"id": fmt.Sprint("n", i), "turnId": turn, "resource": f, "resolved": false,
			"range":   map[string]any{"start": map[string]any{"line": line, "character": 0}, "end": map[string]any{"line": line + 2, "character": 0}},
			"entries": []any{map[string]any{"id": "e", "text": "comment"}},
		}})
	}
	m.Wait("1000 annotations", func(st protocol.AnnotationsState) bool { return len(st.Annotations) == 1000 })
	// Three lines inserted at the top of every file: every place moves.
	for i := range 100 {
		writeFile(t, repo, fmt.Sprintf("f%03d.txt", i), "x\ny\nz\n"+prefixedLines(200, "line"))
	}
	const runs = 20
	var took []time.Duration
	for i := range runs {
		o := d.client(t, fmt.Sprint("sub", i))
		start := time.Now()
		raw, _ := subscribe(t, o, uri)
		took = append(took, time.Since(start))
		var st protocol.AnnotationsState
		json.Unmarshal(raw, &st)
		if !hasPlace(st, "n0", protocol.PlaceMoved, 13) {
			t.Fatalf("n0 not moved to line 13 in the snapshot")
		}
		o.Close()
	}
	var gitTook []time.Duration
	for range runs {
		start := time.Now()
		git(t, repo, "diff", "--numstat")
		gitTook = append(gitTook, time.Since(start))
	}
	slices.Sort(took)
	slices.Sort(gitTook)
	t.Logf("subscribe with 1,000 annotations over 100 changed files: median %v (min %v); git diff --numstat on the same tree: median %v; ratio %.2f",
		took[runs/2], took[0], gitTook[runs/2], float64(took[runs/2])/float64(gitTook[runs/2]))
}

// A directory without git: annotations anchor to its snapshots the same
// way, and follow the lines when a later edit moves them.
func TestAnnotationsInAPlainDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	writeFile(t, dir, "notes.txt", prefixedLines(10, "note"))
	d := startDaemon(t, dir)
	c := d.client(t, "reviewer")
	sum := onlySession(t, c)
	catalogue(t, c, sum.Resource)
	turn := turnStart(t, c, sum.Resource, "edit")
	writeFile(t, dir, "notes.txt", strings.Replace(prefixedLines(10, "note"), "note 5\n", "note five\n", 1))
	turnEnd(t, c, sum.Resource)

	uri := protocol.AnnotationsURI(sum.Resource)
	m := mirrorAnnotations(t, c, uri)
	dispatchOn(t, c, uri, 1, map[string]any{"type": "annotations/set", "annotation": map[string]any{
		"id": "p1", "turnId": turn, "resource": "file://" + dir + "/notes.txt", "resolved": false,
		"range":   map[string]any{"start": map[string]any{"line": 5, "character": 0}, "end": map[string]any{"line": 6, "character": 0}},
		"entries": []any{map[string]any{"id": "e1", "text": "five, in words?"}},
	}})
	m.Wait("placed", func(st protocol.AnnotationsState) bool { return hasPlace(st, "p1", protocol.PlaceSame, 5) })

	writeFile(t, dir, "notes.txt", "top\n"+strings.Replace(prefixedLines(10, "note"), "note 5\n", "note five\n", 1))
	late := mirrorAnnotations(t, d.client(t, "late"), uri)
	if !hasPlace(late.base, "p1", protocol.PlaceMoved, 6) {
		b, _ := json.Marshal(late.base)
		t.Fatalf("after a line was added above, snapshot = %s; want p1 moved to line 6", b)
	}
}
