package main

import (
	"flag"
	"slices"
	"testing"
)

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
