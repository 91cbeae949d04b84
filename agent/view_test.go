package agent

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

func rng(l1, c1, l2, c2 int) *protocol.TextRange {
	return &protocol.TextRange{Start: protocol.TextPosition{Line: l1, Character: c1}, End: protocol.TextPosition{Line: l2, Character: c2}}
}

func TestWhereNow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rng     *protocol.TextRange
		current any // changesetd/current, absent when nil
		want    string
	}{
		{"one line", rng(4, 2, 4, 9), nil, "line 5"},
		{"two lines", rng(4, 0, 5, 3), map[string]any{"status": "same"}, "lines 5-6"},
		{"ends at the start of a line", rng(4, 0, 6, 0), nil, "lines 5-6"},
		{"empty range", rng(4, 0, 4, 0), nil, "line 5"},
		{"moved", rng(4, 0, 5, 3), map[string]any{"status": "moved", "range": rng(9, 0, 10, 3)}, "lines 10-11 (moved from lines 5-6)"},
		{"edited", rng(4, 0, 5, 3), map[string]any{"status": "edited", "range": rng(4, 0, 7, 1)}, "lines 5-8 (changed since)"},
		{"gone", rng(4, 0, 5, 3), map[string]any{"status": "gone"}, "lines 5-6 (gone since)"},
		{"whole file", nil, map[string]any{"status": "same"}, "whole file"},
		{"whole file edited", nil, map[string]any{"status": "edited"}, "whole file, changed since"},
		{"file gone", nil, map[string]any{"status": "gone"}, "file gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := protocol.Annotation{ID: "a", Range: tc.rng}
			if tc.current != nil {
				// As decoded from the wire: plain maps, not Go types.
				b, _ := json.Marshal(map[string]any{protocol.MetaCurrent: tc.current})
				json.Unmarshal(b, &a.Meta)
			}
			if got, _ := whereNow(a); got != tc.want {
				t.Errorf("whereNow = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRelPath(t *testing.T) {
	dirs := []string{"/w/app", "/w/app/sub"}
	for uri, want := range map[string]string{
		"file:///w/app/a.go":         "a.go",
		"file:///w/app/sub/b.go":     "b.go",
		"file:///w/app/x%20y/c.go":   "x y/c.go",
		"file:///elsewhere/d.go":     "/elsewhere/d.go",
		"ahp-session:/s/not-a-file":  "ahp-session:/s/not-a-file",
		"file:///w/application/e.go": "/w/application/e.go",
	} {
		if got := relPath(uri, dirs); got != want {
			t.Errorf("relPath(%q) = %q, want %q", uri, got, want)
		}
	}
}

func TestWriteTextAndMarkdown(t *testing.T) {
	views := []View{
		ViewOf(protocol.Annotation{ID: "a2", TurnID: "t1", Resource: "file:///w/b.go", Resolved: true,
			Entries: []protocol.AnnotationEntry{saying(reviewer("r1"), "Two\nlines.\n"), saying(byAgent("a1"), "Done.")}}, []string{"/w"}),
		ViewOf(protocol.Annotation{ID: "a1", TurnID: "t2", Resource: "file:///w/a.go", Range: rng(2, 0, 3, 4),
			Entries: []protocol.AnnotationEntry{saying(reviewer("r1"), "Why?")}}, []string{"/w"}),
	}
	SortViews(views)
	for _, tc := range []struct {
		name  string
		write func(io.Writer, []View) error
		want  string
	}{
		{"text", WriteText, "[a1] a.go, lines 3-4 (turn t2, open)\n" +
			"  reviewer: Why?\n" +
			"\n" +
			"[a2] b.go, whole file (turn t1, resolved)\n" +
			"  reviewer: Two\n" +
			"    lines.\n" +
			"  agent: Done.\n"},
		{"markdown", WriteMarkdown, "### `a.go`, lines 3-4\n\n" +
			"Annotation `a1` on turn `t2`, open.\n\n" +
			"> **Reviewer:** Why?\n" +
			"\n" +
			"### `b.go`, whole file\n\n" +
			"Annotation `a2` on turn `t1`, resolved.\n\n" +
			"> **Reviewer:** Two\n" +
			"> lines.\n" +
			">\n" +
			"> **Agent:** Done.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.write(&b, views); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}
