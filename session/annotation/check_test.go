package annotation

import (
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

func checker(st protocol.AnnotationsState) Checker {
	return Checker{
		State: st,
		Now:   "2026-01-02T03:04:05Z",
		TurnOf: func(n protocol.Annotation, prev *protocol.Annotation) string {
			return n.TurnID
		},
		Anchor: func(turnID, resource string, r *protocol.TextRange) string {
			if turnID != "t1" {
				return "turnId is not a turn"
			}
			return CheckRange(r)
		},
		Adopt: func(n protocol.Annotation) protocol.Annotation { return n },
	}
}

func entry(id, text string) protocol.AnnotationEntry {
	return protocol.AnnotationEntry{ID: id, Text: protocol.StringOrMarkdown{Text: text}}
}

// A client's action is refused with the field at fault, or comes back
// with its entries stamped and the server's own _meta keys kept.
func TestCheck(t *testing.T) {
	prev := protocol.Annotation{ID: "A", TurnID: "t1", Resource: "file:///r/a.txt", Entries: []protocol.AnnotationEntry{
		{ID: "e1", Text: protocol.StringOrMarkdown{Text: "first"}, Meta: protocol.Object{protocol.MetaCreatedAt: "2025-01-01T00:00:00Z"}},
	}, Meta: protocol.Object{protocol.MetaDelivered: "kept", protocol.MetaCurrent: "kept"}}
	c := checker(protocol.AnnotationsState{Annotations: []protocol.Annotation{prev}})
	for _, r := range []struct {
		name string
		a    protocol.Action
		want string
	}{
		{"no id", protocol.AnnotationsSet{Annotation: protocol.Annotation{TurnID: "t1", Entries: []protocol.AnnotationEntry{entry("e", "x")}}}, "annotation.id is empty"},
		{"unknown turn", protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "B", TurnID: "t9", Entries: []protocol.AnnotationEntry{entry("e", "x")}}}, "annotation.turnId"},
		{"backwards range", protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "B", TurnID: "t1", Range: &protocol.TextRange{Start: protocol.TextPosition{Line: 3}, End: protocol.TextPosition{Line: 1}}, Entries: []protocol.AnnotationEntry{entry("e", "x")}}}, "annotation.range ends before it starts"},
		{"no entries", protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "B", TurnID: "t1"}}, "annotation.entries is empty"},
		{"blank entry", protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "B", TurnID: "t1", Entries: []protocol.AnnotationEntry{entry("e", " ")}}}, "annotation.entries[0].text is empty"},
		{"twice", protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "B", TurnID: "t1", Entries: []protocol.AnnotationEntry{entry("e", "x"), entry("e", "y")}}}, `annotation.entries[1].id "e" appears twice`},
		{"last entry", protocol.AnnotationsEntryRemoved{AnnotationID: "A", EntryID: "e1"}, "last entry"},
		{"unknown annotation", protocol.AnnotationsRemoved{AnnotationID: "Z"}, `no annotation "Z"`},
		{"other action", protocol.ChangesetFilesReviewChanged{Files: []string{"x"}}, "cannot be dispatched on an annotations channel"},
	} {
		if _, reason := c.Check(r.a); !strings.Contains(reason, r.want) {
			t.Errorf("%s: refused with %q, want %q", r.name, reason, r.want)
		}
	}

	// A replacement keeps the first entry's creation time, stamps the new
	// one now, and keeps the server's keys whatever the client sent.
	set := protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "A", TurnID: "t1", Resource: "file:///r/a.txt",
		Entries: []protocol.AnnotationEntry{entry("e1", "first, edited"), entry("e2", "second")},
		Meta:    protocol.Object{protocol.MetaDelivered: "forged", "client/own": 1}}}
	got, reason := c.Check(set)
	if reason != "" {
		t.Fatalf("refused: %s", reason)
	}
	n := got.(protocol.AnnotationsSet).Annotation
	if at := n.Entries[0].Meta[protocol.MetaCreatedAt]; at != "2025-01-01T00:00:00Z" {
		t.Errorf("the kept entry was stamped %v", at)
	}
	if at := n.Entries[1].Meta[protocol.MetaCreatedAt]; at != c.Now {
		t.Errorf("the new entry was stamped %v, want %s", at, c.Now)
	}
	if n.Meta[protocol.MetaDelivered] != "kept" || n.Meta[protocol.MetaCurrent] != "kept" || n.Meta["client/own"] != 1 {
		t.Errorf("_meta = %v: want the server's keys kept and the client's own", n.Meta)
	}
	if set.Annotation.Entries[1].Meta != nil {
		t.Errorf("Check wrote into the client's entries")
	}
}
