package main

import (
	"encoding/json"
	"flag"
	"slices"
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
		{"gone", rng(4, 0, 5, 3), map[string]any{"status": "gone"}, "lines gone"},
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

func TestOpenForAgent(t *testing.T) {
	reviewer := func(id string) protocol.AnnotationEntry {
		return protocol.AnnotationEntry{ID: id, Text: protocol.PlainText("r")}
	}
	agent := func(id string) protocol.AnnotationEntry {
		return protocol.AnnotationEntry{ID: id, Text: protocol.PlainText("a"), Meta: protocol.Object{protocol.MetaAuthor: authorAgent}}
	}
	deliveredOf := func(ids ...string) protocol.Object {
		var m protocol.Object
		b, _ := json.Marshal(map[string]any{protocol.MetaDelivered: map[string]any{"at": "2026-01-01T00:00:00Z", "turnId": "t1", "entries": ids}})
		json.Unmarshal(b, &m)
		return m
	}
	for _, tc := range []struct {
		name string
		a    protocol.Annotation
		want bool
	}{
		{"new", protocol.Annotation{Entries: []protocol.AnnotationEntry{reviewer("r1")}}, true},
		{"resolved", protocol.Annotation{Resolved: true, Entries: []protocol.AnnotationEntry{reviewer("r1")}}, false},
		{"delivered", protocol.Annotation{Entries: []protocol.AnnotationEntry{reviewer("r1")}, Meta: deliveredOf("r1")}, false},
		{"the agent's reply since", protocol.Annotation{Entries: []protocol.AnnotationEntry{reviewer("r1"), agent("a1")}, Meta: deliveredOf("r1")}, false},
		{"a reviewer entry since", protocol.Annotation{Entries: []protocol.AnnotationEntry{reviewer("r1"), agent("a1"), reviewer("r2")}, Meta: deliveredOf("r1", "a1")}, true},
		{"only the agent's", protocol.Annotation{Entries: []protocol.AnnotationEntry{agent("a1")}}, false},
	} {
		if got := openForAgent(tc.a); got != tc.want {
			t.Errorf("%s: openForAgent = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestUnresolvedJSONKeepsTheRest(t *testing.T) {
	in := `{"annotations":[{"id":"a","resolved":true,"x":1},{"id":"b","resolved":false,"_meta":{"k":[1,2]}}],"_meta":{"m":true}}`
	out, err := unresolvedJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"_meta":{"m":true},"annotations":[{"id":"b","resolved":false,"_meta":{"k":[1,2]}}]}`
	if string(out) != want {
		t.Errorf("unresolvedJSON = %s, want %s", out, want)
	}
}

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		dir  string
	}{
		{[]string{"reply", "a1", "text", "--dir", "d"}, []string{"reply", "a1", "text"}, "d"},
		{[]string{"--dir=d", "resolve", "a1"}, []string{"resolve", "a1"}, "d"},
		{[]string{"--open", "reply", "a1", "-"}, []string{"reply", "a1", "-"}, "."},
		{[]string{"reply", "a1", "--", "--not a flag"}, []string{"reply", "a1", "--not a flag"}, "."},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		dir := fs.String("dir", ".", "")
		fs.Bool("open", false, "")
		var dc dialConfig
		dc.flags(fs, true)
		pos, err := parseInterspersed(&dc, fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.pos) || *dir != tc.dir {
			t.Errorf("%q: %q, dir %q, %v; want %q, dir %q", tc.args, pos, *dir, err, tc.pos, tc.dir)
		}
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
