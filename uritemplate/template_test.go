package uritemplate

import (
	"maps"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string // exact error message
	}{
		{"", `uritemplate: empty template`},
		{"ahp-changeset:/a b", `uritemplate: bad template "ahp-changeset:/a b": unacceptable character (hint: use %XX encoding) at byte 16 (at " b")`},
		{"x/{turnId", `uritemplate: bad template "x/{turnId": incomplete expression at byte 9 (at end of template)`},
		{"{", `uritemplate: bad template "{": incomplete expression at byte 1 (at end of template)`},
		{"x}", `uritemplate: bad template "x}": unacceptable character (hint: use %XX encoding) at byte 1 (at "}")`},
		{"{a|b}", `uritemplate: bad template "{a|b}": unacceptable variable name at byte 2 (at "|b}")`},
		{"{}", `uritemplate: bad template "{}": unacceptable variable name at byte 0 (at "{}")`},
		{"{=a}", `uritemplate: bad template "{=a}": unimplemented operator (op-reserved) at byte 1 (at "=a}")`},
		{"{a.}", `uritemplate: bad template "{a.}": unacceptable variable name at byte 2 (at ".}")`},
		{"{a:0}", `uritemplate: bad template "{a:0}": max-length must be (0, 9999] at byte 3 (at "0}")`},
		{"{a:3x}", `uritemplate: bad template "{a:3x}": unrecognized value modifier at byte 4 (at "x}")`},
		{"x%2", `uritemplate: bad template "x%2": incomplete percent-encoding at byte 1 (at "%2")`},
		{"x%zz/{a}", `uritemplate: bad template "x%zz/{a}": incomplete percent-encoding at byte 1 (at "%zz/{a}")`},
		{"x\xffy", `uritemplate: bad template "x\xffy": invalid UTF-8 sequence at byte 1 (at "\xffy")`},
		{"ahp-changeset:/s/{a}/{b c}", `uritemplate: bad template "ahp-changeset:/s/{a}/{b c}": unacceptable variable name at byte 23 (at " c}")`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error", tt.in, got)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error\n got %s\nwant %s", tt.in, err, tt.want)
			}
		})
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParse of a bad template did not panic")
		}
	}()
	MustParse("{")
}

func TestParseStringVarnames(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"ahp-changeset:/s/changeset/session", []string{}},
		{"ahp-changeset:/s/changeset/turn/{turnId}", []string{"turnId"}},
		{"ahp-changeset:/s/changeset/compare/{originalTurnId}/{modifiedTurnId}", []string{"originalTurnId", "modifiedTurnId"}},
		{"/{b}/{a}/{b}", []string{"b", "a"}},
		{"{/x,y}{?q*}{#f:3}", []string{"x", "y", "q", "f"}},
	}
	for _, tt := range tests {
		tp, err := Parse(tt.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		if tp.String() != tt.in {
			t.Errorf("String() = %q, want %q", tp.String(), tt.in)
		}
		got := tp.Varnames()
		if strings.Join(got, ",") != strings.Join(tt.want, ",") || len(got) != len(tt.want) {
			t.Errorf("Parse(%q).Varnames() = %q, want %q", tt.in, got, tt.want)
		}
		if len(got) > 0 {
			got[0] = "mutated"
			if tp.Varnames()[0] == "mutated" {
				t.Errorf("Varnames exposes internal state")
			}
		}
	}
}

const (
	turnT    = "ahp-changeset:/S/changeset/turn/{turnId}"
	compareT = "ahp-changeset:/S/changeset/compare/{originalTurnId}/{modifiedTurnId}"
)

func TestExpand(t *testing.T) {
	tests := []struct {
		tmpl    string
		v       Values
		want    string
		wantErr string
	}{
		{"ahp-changeset:/S/changeset/session", nil, "ahp-changeset:/S/changeset/session", ""},
		{"ahp-changeset:/S/changeset/session", Values{"extra": "x"}, "ahp-changeset:/S/changeset/session", ""},
		{turnT, Values{"turnId": "t1"}, "ahp-changeset:/S/changeset/turn/t1", ""},
		{turnT, Values{"turnId": "a/b c"}, "ahp-changeset:/S/changeset/turn/a%2Fb%20c", ""},
		{turnT, Values{"turnId": "Az09-._~"}, "ahp-changeset:/S/changeset/turn/Az09-._~", ""},
		{turnT, Values{"turnId": ":/?#[]@!$&'()*+,;=%"}, "ahp-changeset:/S/changeset/turn/%3A%2F%3F%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D%25", ""},
		{turnT, Values{"turnId": "é"}, "ahp-changeset:/S/changeset/turn/%C3%A9", ""},
		{turnT, Values{"turnId": "€"}, "ahp-changeset:/S/changeset/turn/%E2%82%AC", ""},
		{turnT, Values{"turnId": "Ā"}, "ahp-changeset:/S/changeset/turn/%C4%80", ""},
		{turnT, Values{"turnId": "😀"}, "ahp-changeset:/S/changeset/turn/%F0%9F%98%80", ""},
		{turnT, Values{"turnId": "\ufffd"}, "ahp-changeset:/S/changeset/turn/%EF%BF%BD", ""},
		{turnT, Values{"turnId": "\x01\x7f"}, "ahp-changeset:/S/changeset/turn/%01%7F", ""},
		{compareT, Values{"originalTurnId": "t 1", "modifiedTurnId": "t/2"}, "ahp-changeset:/S/changeset/compare/t%201/t%2F2", ""},
		{"x-{a}.json", Values{"a": "b.c"}, "x-b.c.json", ""},
		{"/{a}/{a}", Values{"a": "%"}, "/%25/%25", ""},
		{"{+path}", Values{"path": "a/b é"}, "a/b%20%C3%A9", ""},
		{turnT, Values{}, "", `uritemplate: expand "ahp-changeset:/S/changeset/turn/{turnId}": variable "turnId" is missing`},
		{turnT, Values{"turnID": "x"}, "", `variable "turnId" is missing`},
		{turnT, Values{"turnId": ""}, "", `variable "turnId" is empty`},
		{turnT, Values{"turnId": "a\xffb"}, "", `variable "turnId" is not valid UTF-8`},
		{turnT, Values{"turnId": "a\x00b"}, "", `variable "turnId" contains a NUL byte`},
		{compareT, Values{"originalTurnId": "a"}, "", `variable "modifiedTurnId" is missing`},
	}
	for _, tt := range tests {
		tp := MustParse(tt.tmpl)
		got, err := tp.Expand(tt.v)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Expand(%q, %q) = %q, %v; want error containing %q", tt.tmpl, tt.v, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q, %q) = %q, %v; want %q", tt.tmpl, tt.v, got, err, tt.want)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		tmpl string
		uri  string
		want Values // nil: no match
	}{
		// Static templates.
		{"ahp-changeset:/S/changeset/session", "ahp-changeset:/S/changeset/session", Values{}},
		{"ahp-changeset:/S/changeset/session", "ahp-changeset:/S/changeset/session/", nil},
		{"ahp-changeset:/S/changeset/session", "ahp-changeset:/S/changeset/sessio", nil},
		{"ahp-changeset:/S.x/changeset/session", "ahp-changeset:/Sax/changeset/session", nil}, // literal '.' is not a wildcard
		{"a%20b/{x}", "a%20b/y", Values{"x": "y"}},
		{"a%20b/{x}", "a b/y", nil},

		// One variable.
		{turnT, "ahp-changeset:/S/changeset/turn/t1", Values{"turnId": "t1"}},
		{turnT, "ahp-changeset:/S/changeset/turn/a%2Fb%20c", Values{"turnId": "a/b c"}},
		{turnT, "ahp-changeset:/S/changeset/turn/a%2fb%20c", Values{"turnId": "a/b c"}}, // lower-case hex
		{turnT, "ahp-changeset:/S/changeset/turn/%41%7e", Values{"turnId": "A~"}},       // encoded unreserved
		{turnT, "ahp-changeset:/S/changeset/turn/%C3%A9%E2%82%AC", Values{"turnId": "é€"}},
		{turnT, "ahp-changeset:/S/changeset/turn/%F0%9F%98%80", Values{"turnId": "😀"}},
		{turnT, "ahp-changeset:/S/changeset/turn/%25", Values{"turnId": "%"}},
		{turnT, "ahp-changeset:/S/changeset/turn/%3A%2F%3F%23%5B%5D%40", Values{"turnId": ":/?#[]@"}},
		{turnT, "ahp-changeset:/S/changeset/turn/", nil},         // empty value
		{turnT, "ahp-changeset:/S/changeset/turn", nil},          // missing segment
		{turnT, "ahp-changeset:/S/changeset/turn/a/b", nil},      // extra segment
		{turnT, "ahp-changeset:/S/changeset/turn/a/", nil},       // trailing slash
		{turnT, "ahp-changeset:/S/changeset/turn/a b", nil},      // raw space
		{turnT, "ahp-changeset:/S/changeset/turn/a:b", nil},      // raw reserved
		{turnT, "ahp-changeset:/S/changeset/turn/a,b", nil},      // raw ',' (the library would accept it)
		{turnT, "ahp-changeset:/S/changeset/turn/é", nil},        // raw non-ASCII
		{turnT, "ahp-changeset:/S/changeset/turn/a%", nil},       // truncated triplet
		{turnT, "ahp-changeset:/S/changeset/turn/a%2", nil},      // truncated triplet
		{turnT, "ahp-changeset:/S/changeset/turn/a%zz", nil},     // not hex
		{turnT, "ahp-changeset:/S/changeset/turn/%C3", nil},      // invalid UTF-8
		{turnT, "ahp-changeset:/S/changeset/turn/%FF", nil},      // invalid UTF-8
		{turnT, "ahp-changeset:/S/changeset/turn/a%00", nil},     // NUL
		{turnT, "ahp-changeset:/S/changeset/turn/t1?x=1", nil},   // query
		{turnT, "ahp-changeset:/S/changeset/turn/t1#f", nil},     // fragment
		{turnT, "ahp-changeset:/T/changeset/turn/t1", nil},       // other session
		{turnT, "AHP-CHANGESET:/S/changeset/turn/t1", nil},       // literals are exact
		{turnT, "xahp-changeset:/S/changeset/turn/t1", nil},      // anchored at start
		{turnT, "ahp-changeset:/S/changeset/turn/t1\n", nil},     // anchored at end
		{turnT, "ahp-changeset:/S/changeset/compare/t1/t2", nil}, // other shape
		{turnT, "ahp-changeset:/S/changeset/turn/%2F%2E%2E%2F", Values{"turnId": "/../"}},

		// Several variables.
		{compareT, "ahp-changeset:/S/changeset/compare/t1/t2", Values{"originalTurnId": "t1", "modifiedTurnId": "t2"}},
		{compareT, "ahp-changeset:/S/changeset/compare/a%2Fb/c%20d", Values{"originalTurnId": "a/b", "modifiedTurnId": "c d"}},
		{compareT, "ahp-changeset:/S/changeset/compare/t1/t1", Values{"originalTurnId": "t1", "modifiedTurnId": "t1"}},
		{compareT, "ahp-changeset:/S/changeset/compare/t1", nil},
		{compareT, "ahp-changeset:/S/changeset/compare/t1/", nil},
		{compareT, "ahp-changeset:/S/changeset/compare//t2", nil},
		{compareT, "ahp-changeset:/S/changeset/compare/t1/t2/t3", nil},
		{compareT, "ahp-changeset:/S/changeset/compare/t1/%ZZ", nil},

		// Part of a segment.
		{"ahp-changeset:/S/turn-{turnId}.json", "ahp-changeset:/S/turn-a.b.json", Values{"turnId": "a.b"}},
		{"ahp-changeset:/S/turn-{turnId}.json", "ahp-changeset:/S/turn-.json", nil},
		{"ahp-changeset:/S/turn-{turnId}.json", "ahp-changeset:/S/turn-a/b.json", nil},
		{"{a}", "x%20y", Values{"a": "x y"}},
		{"{a}", "", nil},

		// A repeated variable must decode to the same value.
		{"/{a}/{a}", "/x/x", Values{"a": "x"}},
		{"/{a}/{a}", "/x%2F/x%2f", Values{"a": "x/"}},
		{"/{a}/{a}", "/x/y", nil},

		// Unsupported expressions never match.
		{"{+a}", "x", nil},
		{"{a,b}", "x,y", nil},
		{"{a:3}", "abc", nil},
		{"{a*}", "x", nil},
		{"{/a}", "/x", nil},
		{"x{?q}", "x?q=1", nil},
	}
	for _, tt := range tests {
		got, ok := MustParse(tt.tmpl).Match(tt.uri)
		if ok != (tt.want != nil) || !maps.Equal(got, tt.want) {
			t.Errorf("Parse(%q).Match(%q) = %q, %v; want %q, %v", tt.tmpl, tt.uri, got, ok, tt.want, tt.want != nil)
		}
	}
}

func TestExpandMatchRoundTrip(t *testing.T) {
	values := []string{
		"t1", "a/b c", "%", "%25", "%zz", "?#", "..", ".", "~", "é", "日本語", "😀",
		"\ufffd", "\x01", "\t\n", "a\u0301", "\u2028", strings.Repeat("x/", 100),
	}
	templates := []*Template{
		MustParse(turnT),
		MustParse(compareT),
		MustParse("ahp-changeset:/S/x-{originalTurnId}.json/{modifiedTurnId}"),
	}
	for _, a := range values {
		for _, b := range values {
			for _, tp := range templates {
				v := Values{"turnId": a, "originalTurnId": a, "modifiedTurnId": b}
				u, err := tp.Expand(v)
				if err != nil {
					t.Fatalf("Expand(%q, %q): %v", tp, v, err)
				}
				got, ok := tp.Match(u)
				if !ok {
					t.Fatalf("Match(%q) of Expand(%q) did not match", u, v)
				}
				for _, name := range tp.Varnames() {
					if got[name] != v[name] {
						t.Errorf("Match(Expand(%q)) = %q", v, got)
					}
				}
				if len(got) != len(tp.Varnames()) {
					t.Errorf("Match(Expand(%q)) = %q: extra values", v, got)
				}
			}
		}
	}
}

func TestTemplateConcurrentUse(t *testing.T) {
	tp := MustParse(compareT)
	done := make(chan bool)
	for i := range 8 {
		go func() {
			defer func() { done <- true }()
			for j := range 200 {
				v := Values{"originalTurnId": strings.Repeat("é", i), "modifiedTurnId": strings.Repeat("/", j+1)}
				v["originalTurnId"] += "x"
				u, err := tp.Expand(v)
				if err != nil {
					t.Error(err)
					return
				}
				if got, ok := tp.Match(u); !ok || !maps.Equal(got, v) {
					t.Errorf("Match(%q) = %q, %v", u, got, ok)
					return
				}
				_ = tp.Varnames()
			}
		}()
	}
	for range 8 {
		<-done
	}
}
