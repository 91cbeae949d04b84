package test

import (
	"regexp"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestAnnotationOnWorkingTree: a comment on lines added since the
// baseline, asked to be taken on the working tree as it is
// (changesetd/onWorkingTree), keeps those lines: the daemon stores it
// with a snapshot of the working tree (changesetd/snapshot, which a
// client cannot set) and follows the lines from there when lines are put
// above them.
func TestAnnotationOnWorkingTree(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "one\ntwo\nthree\n"})
	d := startDaemon(t, repo)
	c := d.client(t, "ide")
	sum := onlySession(t, c)
	m := mirrorAnnotations(t, c, requireAnnotationsChannel(t, c, sum))
	file := "file://" + repo + "/a.txt"
	writeFile(t, repo, "a.txt", "one\nNEW1\nNEW2\ntwo\nthree\n")

	whole := func(first, last int) protocol.TextRange {
		return protocol.TextRange{Start: protocol.TextPosition{Line: first}, End: protocol.TextPosition{Line: last + 1}}
	}
	a := newAnnotation("A1", "baseline", file, map[string]any{"start": map[string]any{"line": 1, "character": 0}, "end": map[string]any{"line": 3, "character": 0}}, "e1", "Why these two?")
	a["annotation"].(map[string]any)["_meta"] = map[string]any{protocol.MetaOnWorkingTree: true, protocol.MetaSnapshot: "forged"}
	annotate(t, m, 1, a)
	got := waitFor(m, "A1 placed on its snapshot", "A1", func(a *protocol.Annotation) bool {
		p, ok := placeOf(a)
		return ok && p.Status == protocol.PlaceSame
	})
	snap, _ := got.Meta[protocol.MetaSnapshot].(string)
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(snap) {
		t.Errorf("changesetd/snapshot %q, want the id of a tree", snap)
	}
	if _, ok := got.Meta[protocol.MetaOnWorkingTree]; ok {
		t.Errorf("the request to snapshot is kept: %v", got.Meta)
	}
	if got.Range == nil || *got.Range != whole(1, 2) {
		t.Errorf("range %+v, want lines 1–2", got.Range)
	}

	// A subscriber is told where the lines are now.
	writeFile(t, repo, "a.txt", "zero\none\nNEW1\nNEW2\ntwo\nthree\n")
	late := mirrorAnnotations(t, d.client(t, "late"), m.uri)
	if p, ok := placeOf(findAnnotation(late.base, "A1")); !ok || p.Status != protocol.PlaceMoved || p.Range == nil || *p.Range != whole(2, 3) {
		t.Errorf("after a line was put above, A1 is at %+v, want moved to lines 2–3", p)
	}

	// Without the request a client's snapshot is not taken.
	b := newAnnotation("A2", "baseline", file, lineRange(0, 0, 3), "e2", "And this?")
	b["annotation"].(map[string]any)["_meta"] = map[string]any{protocol.MetaSnapshot: "forged"}
	annotate(t, m, 2, b)
	if a2 := findAnnotation(m.State(), "A2"); a2 == nil || a2.Meta[protocol.MetaSnapshot] != nil {
		t.Errorf("a client's changesetd/snapshot was stored: %+v", a2)
	}
}
