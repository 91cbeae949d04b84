package uritemplate

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

const sid = "0f8e7c1a-3b2d-4e5f-9a8b-7c6d5e4f3a2b"

func TestSessionChangesetTemplates(t *testing.T) {
	got := SessionChangesetTemplates(sid)
	want := map[string]string{
		protocol.KindUncommitted:  "ahp-changeset:/" + sid + "/changeset/uncommitted",
		protocol.KindBranch:       "ahp-changeset:/" + sid + "/changeset/branch",
		protocol.KindSession:      "ahp-changeset:/" + sid + "/changeset/session",
		protocol.KindTurn:         "ahp-changeset:/" + sid + "/changeset/turn/{turnId}",
		protocol.KindCompareTurns: "ahp-changeset:/" + sid + "/changeset/compare/{originalTurnId}/{modifiedTurnId}",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d templates, want %d", len(got), len(want))
	}
	for kind, w := range want {
		if got[kind] == nil || got[kind].String() != w {
			t.Errorf("template %q = %v, want %q", kind, got[kind], w)
		}
	}
	if !strings.HasSuffix(got[protocol.KindSession].String(), "/changeset/session") {
		t.Errorf("session template must end in /changeset/session (protocol §2.1 migration rule)")
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a b", "a%20b", "{x}", "é"} {
		if m := SessionChangesetTemplates(bad); m != nil {
			t.Errorf("SessionChangesetTemplates(%q) = %v, want nil", bad, m)
		}
		if ValidSessionID(bad) {
			t.Errorf("ValidSessionID(%q) = true", bad)
		}
	}
	for _, good := range []string{sid, "abc123", "A.b_c~d-e", "...", "0"} {
		if !ValidSessionID(good) || SessionChangesetTemplates(good) == nil {
			t.Errorf("session id %q rejected", good)
		}
	}
}

func TestParseChangesetURI(t *testing.T) {
	p := "ahp-changeset:/" + sid + "/changeset/"
	tests := []struct {
		uri  string
		want Ref
	}{
		{p + "uncommitted", Ref{sid, protocol.KindUncommitted, nil}},
		{p + "branch", Ref{sid, protocol.KindBranch, nil}},
		{p + "session", Ref{sid, protocol.KindSession, nil}},
		{p + "turn/t1", Ref{sid, protocol.KindTurn, Values{"turnId": "t1"}}},
		{p + "turn/a%2Fb%20c", Ref{sid, protocol.KindTurn, Values{"turnId": "a/b c"}}},
		{p + "turn/%C3%A9", Ref{sid, protocol.KindTurn, Values{"turnId": "é"}}},
		{p + "compare/t1/t2", Ref{sid, protocol.KindCompareTurns, Values{"originalTurnId": "t1", "modifiedTurnId": "t2"}}},
		{p + "compare/a%2fb/%25", Ref{sid, protocol.KindCompareTurns, Values{"originalTurnId": "a/b", "modifiedTurnId": "%"}}},
		{"ahp-changeset:/x/changeset/session", Ref{"x", protocol.KindSession, nil}},
	}
	for _, tt := range tests {
		got, err := ParseChangesetURI(tt.uri)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseChangesetURI(%q) = %+v, %v; want %+v", tt.uri, got, err, tt.want)
			continue
		}
		// The hand-written parser and the templates agree.
		v, ok := SessionChangesetTemplates(got.SessionID)[got.Kind].Match(tt.uri)
		if !ok || !maps.Equal(v, got.Vars) {
			t.Errorf("template Match(%q) = %q, %v; ParseChangesetURI gave %q", tt.uri, v, ok, got.Vars)
		}
		// And FormatChangesetURI is its inverse.
		u, err := FormatChangesetURI(got.SessionID, got.Kind, got.Vars)
		if err != nil {
			t.Errorf("FormatChangesetURI(%+v): %v", got, err)
			continue
		}
		if again, err := ParseChangesetURI(u); err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("ParseChangesetURI(FormatChangesetURI(%+v)) = %+v, %v", got, again, err)
		}
	}
}

func TestParseChangesetURIErrors(t *testing.T) {
	p := "ahp-changeset:/s1/changeset/"
	tests := []struct {
		uri  string
		want string // error message after `bad changeset URI "<uri>": `
	}{
		{"", `missing scheme, want "ahp-changeset:"`},
		{"/s1/changeset/session", `missing scheme, want "ahp-changeset:"`},
		{"ahp-session:/s1", `wrong scheme "ahp-session:", want "ahp-changeset:"`},
		{"AHP-CHANGESET:/s1/changeset/session", `wrong scheme "AHP-CHANGESET:", want "ahp-changeset:"`},
		{"ahp-changeset:", `missing session id`},
		{"ahp-changeset:/", `missing session id`},
		{"ahp-changeset://", `missing session id`},
		{"ahp-changeset://host/changeset/session", `missing session id`},
		{"ahp-changeset:s1/changeset/session", `path must start with "/<session id>", got "s1/changeset/session"`},
		{"ahp-changeset:/s%201/changeset/session", `invalid session id "s%201": only letters, digits and "-._~" are allowed`},
		{"ahp-changeset:/s 1/changeset/session", `invalid session id "s 1": only letters, digits and "-._~" are allowed`},
		{"ahp-changeset:/../changeset/session", `invalid session id "..": dot segments are not allowed`},
		{"ahp-changeset:/s1", `missing "/changeset/<kind>" after session id`},
		{"ahp-changeset:/s1/", `missing "/changeset/<kind>" after session id`},
		{"ahp-changeset:/s1/changesets/session", `want "changeset" after session id, got "changesets"`},
		{"ahp-changeset:/s1/changeset", `missing changeset kind after "/changeset/" (want one of uncommitted, branch, session, turn, compare)`},
		{p, `missing changeset kind after "/changeset/" (want one of uncommitted, branch, session, turn, compare)`},
		{p + "foo", `unknown changeset kind "foo" (want one of uncommitted, branch, session, turn, compare)`},
		{p + "compare-turns/a/b", `unknown changeset kind "compare-turns" (want one of uncommitted, branch, session, turn, compare)`},
		{p + "Session", `unknown changeset kind "Session" (want one of uncommitted, branch, session, turn, compare)`},
		{p + "session/", `trailing path "/" after "/changeset/session"`},
		{p + "uncommitted/x/y", `trailing path "/x/y" after "/changeset/uncommitted"`},
		{p + "branch/main", `trailing path "/main" after "/changeset/branch"`},
		{p + "session?x=1", `unexpected query "?x=1"`},
		{p + "session#top", `unexpected fragment "#top"`},
		{p + "turn", `missing turn id`},
		{p + "turn/", `missing turn id`},
		{p + "turn//", `missing turn id`},
		{p + "turn/t1/", `trailing path "/" after turn id`},
		{p + "turn/t1/x", `trailing path "/x" after turn id`},
		{p + "turn/a%zz", `bad percent-encoding in turn id "a%zz": "%zz" at byte 1`},
		{p + "turn/a%2", `bad percent-encoding in turn id "a%2": "%2" at byte 1`},
		{p + "turn/a%", `bad percent-encoding in turn id "a%": "%" at byte 1`},
		{p + "turn/a b", `turn id "a b" contains ' ' at byte 1, which must be percent-encoded`},
		{p + "turn/a:b", `turn id "a:b" contains ':' at byte 1, which must be percent-encoded`},
		{p + "turn/é", `turn id "é" contains 'é' at byte 0, which must be percent-encoded`},
		{p + "turn/%FF", `turn id "%FF" decodes to invalid UTF-8`},
		{p + "turn/%00", `turn id "%00" decodes to a string with a NUL byte (%00)`},
		{p + "turn/t1?x", `unexpected query "?x"`},
		{p + "compare", `missing original turn id`},
		{p + "compare/", `missing original turn id`},
		{p + "compare//t2", `missing original turn id`},
		{p + "compare/t1", `missing modified turn id`},
		{p + "compare/t1/", `missing modified turn id`},
		{p + "compare/%G1/t2", `bad percent-encoding in original turn id "%G1": "%G1" at byte 0`},
		{p + "compare/t1/x%", `bad percent-encoding in modified turn id "x%": "%" at byte 1`},
		{p + "compare/t1/t2/t3", `trailing path "/t3" after modified turn id`},
	}
	for _, tt := range tests {
		got, err := ParseChangesetURI(tt.uri)
		if err == nil {
			t.Errorf("ParseChangesetURI(%q) = %+v, want error", tt.uri, got)
			continue
		}
		if !errors.Is(err, ErrBadChangesetURI) {
			t.Errorf("ParseChangesetURI(%q) error %v does not wrap ErrBadChangesetURI", tt.uri, err)
		}
		want := `bad changeset URI ` + quote(tt.uri) + `: ` + tt.want
		if err.Error() != want {
			t.Errorf("ParseChangesetURI(%q) error\n got %s\nwant %s", tt.uri, err, want)
		}
		if !reflect.DeepEqual(got, Ref{}) {
			t.Errorf("ParseChangesetURI(%q) returned %+v with an error", tt.uri, got)
		}
	}
}

func TestParseChangesetURILongInput(t *testing.T) {
	uri := "ahp-changeset:/s1/changeset/" + strings.Repeat("x", 10000)
	_, err := ParseChangesetURI(uri)
	if err == nil {
		t.Fatal("no error")
	}
	if len(err.Error()) > 600 {
		t.Errorf("error for a 10k URI is %d bytes: %v", len(err.Error()), err)
	}
}

func TestFormatChangesetURI(t *testing.T) {
	tests := []struct {
		sessionID, kind string
		v               Values
		want            string
	}{
		{"s1", protocol.KindUncommitted, nil, "ahp-changeset:/s1/changeset/uncommitted"},
		{"s1", protocol.KindBranch, Values{}, "ahp-changeset:/s1/changeset/branch"},
		{"s1", protocol.KindSession, nil, "ahp-changeset:/s1/changeset/session"},
		{"s1", protocol.KindTurn, Values{"turnId": "a/b c"}, "ahp-changeset:/s1/changeset/turn/a%2Fb%20c"},
		{"s1", protocol.KindCompareTurns, Values{"originalTurnId": "é", "modifiedTurnId": "t2"}, "ahp-changeset:/s1/changeset/compare/%C3%A9/t2"},
	}
	for _, tt := range tests {
		got, err := FormatChangesetURI(tt.sessionID, tt.kind, tt.v)
		if err != nil || got != tt.want {
			t.Errorf("FormatChangesetURI(%q, %q, %q) = %q, %v; want %q", tt.sessionID, tt.kind, tt.v, got, err, tt.want)
		}
	}

	errTests := []struct {
		sessionID, kind string
		v               Values
		want            string
	}{
		{"", protocol.KindSession, nil, `bad changeset URI for session "", kind "session": missing session id`},
		{"a/b", protocol.KindSession, nil, `bad changeset URI for session "a/b", kind "session": invalid session id "a/b": only letters, digits and "-._~" are allowed`},
		{"s1", "compare", nil, `bad changeset URI for session "s1", kind "compare": unknown changeset kind (want one of uncommitted, branch, session, turn, compare-turns)`},
		{"s1", protocol.KindSession, Values{"turnId": "t"}, `bad changeset URI for session "s1", kind "session": unexpected variable "turnId"`},
		{"s1", protocol.KindTurn, nil, `bad changeset URI for session "s1", kind "turn": uritemplate: expand "ahp-changeset:/s1/changeset/turn/{turnId}": variable "turnId" is missing`},
		{"s1", protocol.KindTurn, Values{"turnId": ""}, `variable "turnId" is empty`},
		{"s1", protocol.KindCompareTurns, Values{"originalTurnId": "a"}, `variable "modifiedTurnId" is missing`},
	}
	for _, tt := range errTests {
		got, err := FormatChangesetURI(tt.sessionID, tt.kind, tt.v)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrBadChangesetURI) {
			t.Errorf("FormatChangesetURI(%q, %q, %q) = %q, %v; want error containing %q", tt.sessionID, tt.kind, tt.v, got, err, tt.want)
		}
	}
}
