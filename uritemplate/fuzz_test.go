package uritemplate

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// validValue reports whether s is in the value domain of Expand and Match.
func validValue(s string) bool {
	return s != "" && utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// FuzzMatchRoundTrip checks Match(Expand(v)) == v for the protocol's template
// shapes, and that Expand rejects values outside the domain.
func FuzzMatchRoundTrip(f *testing.F) {
	templates := []*Template{
		MustParse("ahp-changeset:/S/changeset/turn/{turnId}"),
		MustParse("ahp-changeset:/S/changeset/compare/{originalTurnId}/{modifiedTurnId}"),
		MustParse("ahp-changeset:/S/turn-{originalTurnId}.json/{modifiedTurnId}"),
		MustParse("{originalTurnId}/{modifiedTurnId}/{originalTurnId}"),
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		v := Values{"turnId": a, "originalTurnId": a, "modifiedTurnId": b}
		for _, tp := range templates {
			u, err := tp.Expand(v)
			valid := true
			for _, name := range tp.Varnames() {
				valid = valid && validValue(v[name])
			}
			if !valid {
				if err == nil {
					t.Fatalf("Expand(%q, %q) = %q, want an error", tp, v, u)
				}
				continue
			}
			if err != nil {
				t.Fatalf("Expand(%q, %q): %v", tp, v, err)
			}
			got, ok := tp.Match(u)
			if !ok {
				t.Fatalf("Match(%q) of Expand(%q) did not match", u, v)
			}
			want := Values{}
			for _, name := range tp.Varnames() {
				want[name] = v[name]
			}
			if !maps.Equal(got, want) {
				t.Fatalf("Match(Expand(%q)) = %q, want %q", v, got, want)
			}
		}
		if validValue(a) && validValue(b) {
			u, err := FormatChangesetURI("S", "compare-turns", Values{"originalTurnId": a, "modifiedTurnId": b})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := ParseChangesetURI(u)
			if err != nil || ref.Vars["originalTurnId"] != a || ref.Vars["modifiedTurnId"] != b {
				t.Fatalf("ParseChangesetURI(%q) = %+v, %v", u, ref, err)
			}
		}
	})
}

// FuzzParseChangesetURI checks that ParseChangesetURI never panics, that its
// errors wrap ErrBadChangesetURI, and that it agrees with the templates'
// Match and with FormatChangesetURI.
func FuzzParseChangesetURI(f *testing.F) {
	f.Fuzz(func(t *testing.T, uri string) {
		ref, err := ParseChangesetURI(uri)

		var tmpls map[string]*Template
		if rest, ok := strings.CutPrefix(uri, "ahp-changeset:/"); ok {
			id, _, _ := strings.Cut(rest, "/")
			tmpls = SessionChangesetTemplates(id)
		}

		if err != nil {
			if !errors.Is(err, ErrBadChangesetURI) {
				t.Fatalf("error %v does not wrap ErrBadChangesetURI", err)
			}
			if !reflect.DeepEqual(ref, Ref{}) {
				t.Fatalf("non-zero Ref %+v with error", ref)
			}
			for kind, tp := range tmpls {
				if v, ok := tp.Match(uri); ok {
					t.Fatalf("ParseChangesetURI(%q) failed (%v) but template %q matches: %q", uri, err, kind, v)
				}
			}
			return
		}

		if tmpls == nil {
			t.Fatalf("ParseChangesetURI(%q) = %+v but the session id is not valid", uri, ref)
		}
		v, ok := tmpls[ref.Kind].Match(uri)
		if !ok || !maps.Equal(v, ref.Vars) {
			t.Fatalf("ParseChangesetURI(%q) = %+v, template Match = %q, %v", uri, ref, v, ok)
		}
		u, err := FormatChangesetURI(ref.SessionID, ref.Kind, ref.Vars)
		if err != nil {
			t.Fatalf("FormatChangesetURI(%+v): %v", ref, err)
		}
		again, err := ParseChangesetURI(u)
		if err != nil || !reflect.DeepEqual(again, ref) {
			t.Fatalf("ParseChangesetURI(FormatChangesetURI(%+v)) = %+v, %v", ref, again, err)
		}
	})
}
