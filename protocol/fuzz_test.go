package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureSeeds returns every action of the reducer fixtures and every
// round-trip input (and, for envelopes, their action), as raw JSON.
func fixtureSeeds(f *testing.F) (actions, envelopes [][]byte) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "ahp-fixtures", "reducers*", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no reducer fixtures (%v)", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var fx struct {
			Actions []json.RawMessage `json:"actions"`
		}
		if err := json.Unmarshal(data, &fx); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		for _, a := range fx.Actions {
			actions = append(actions, a)
		}
	}
	rts, err := filepath.Glob(filepath.Join("..", "testdata", "ahp-fixtures", "round-trips", "*.json"))
	if err != nil || len(rts) == 0 {
		f.Fatalf("no round-trip fixtures (%v)", err)
	}
	for _, file := range rts {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var rt struct {
			Type  string          `json:"type"`
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(data, &rt); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		switch rt.Type {
		case "StateAction":
			actions = append(actions, rt.Input)
		case "ActionEnvelope":
			envelopes = append(envelopes, rt.Input)
			var env struct {
				Action json.RawMessage `json:"action"`
			}
			if json.Unmarshal(rt.Input, &env) == nil && len(env.Action) > 0 {
				actions = append(actions, env.Action)
			}
		default:
			// Other wire types are still JSON worth mutating.
			actions = append(actions, rt.Input)
		}
	}
	return actions, envelopes
}

// TestEnvelopeWithoutActionRoundTrip pins a bug FuzzEnvelope found (fixed
// in 87cee3c): an envelope whose "action" key was absent unmarshalled with
// a nil Action, marshalled as "action":null, and that did not unmarshal.
// Either such an envelope is refused, or its encoding decodes again.
func TestEnvelopeWithoutActionRoundTrip(t *testing.T) {
	for _, in := range []string{`{}`, `{"channel":"ahp-root://","serverSeq":3}`} {
		var e ActionEnvelope
		if err := json.Unmarshal([]byte(in), &e); err != nil {
			continue
		}
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var again ActionEnvelope
		if err := json.Unmarshal(out, &again); err != nil {
			t.Errorf("ActionEnvelope decoded from %s encodes to %s, which does not decode: %v", in, out, err)
		}
	}
}

// FuzzDecodeAction: DecodeAction never panics, and whatever it decodes
// re-encodes to JSON that decodes again to an action encoding to the same
// bytes.
func FuzzDecodeAction(f *testing.F) {
	actions, envelopes := fixtureSeeds(f)
	for _, a := range actions {
		f.Add(a)
	}
	for _, e := range envelopes {
		f.Add(e)
	}
	f.Add([]byte(`{"type":"future/thing","x":[1,{"y":null}]}`))
	f.Add([]byte(`{"TYPE":"changeset/cleared"}`))
	f.Add([]byte(`{"type":"changeset/contentChanged","files":null,"operations":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAction(data)
		if err != nil {
			if a != nil {
				t.Fatalf("error %v with a non-nil action %#v", err, a)
			}
			return
		}
		if a == nil {
			t.Fatal("nil action without an error")
		}
		b1, err := EncodeAction(a)
		if err != nil {
			t.Fatalf("%T does not encode: %v", a, err)
		}
		if !json.Valid(b1) {
			t.Fatalf("%T encodes to invalid JSON %q", a, b1)
		}
		if u, ok := a.(UnknownAction); ok && !bytes.Equal(b1, data) {
			t.Fatalf("unknown action %q re-encodes changed: %q", u.Type, b1)
		}
		a2, err := DecodeAction(b1)
		if err != nil {
			t.Fatalf("re-encoded %T does not decode: %v\ninput %q\nencoded %q", a, err, data, b1)
		}
		if a2.ActionType() != a.ActionType() {
			t.Fatalf("type changed: %q -> %q", a.ActionType(), a2.ActionType())
		}
		b2, err := EncodeAction(a2)
		if err != nil {
			t.Fatalf("second encode of %T: %v", a2, err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("%T is not stable across a round trip\ninput  %q\nfirst  %q\nsecond %q", a, data, b1, b2)
		}
		// Embedded in a StateAction the action is valid JSON too.
		sa, err := json.Marshal(StateAction{a})
		if err != nil || !json.Valid(sa) {
			t.Fatalf("StateAction{%T} marshal: %v %q", a, err, sa)
		}
	})
}

// FuzzEnvelope: an ActionEnvelope that unmarshals marshals to JSON that
// unmarshals again and marshals to the same bytes.
func FuzzEnvelope(f *testing.F) {
	actions, envelopes := fixtureSeeds(f)
	for _, e := range envelopes {
		f.Add(e)
	}
	for i, a := range actions {
		var env bytes.Buffer
		env.WriteString(`{"channel":"ahp-changeset:/s/changeset/uncommitted","serverSeq":`)
		env.WriteString(strings.Repeat("1", i%5+1))
		env.WriteString(`,"action":`)
		env.Write(a)
		if i%3 == 0 {
			env.WriteString(`,"origin":{"clientId":"c","clientSeq":3},"rejectionReason":"no"`)
		}
		env.WriteString(`}`)
		f.Add(env.Bytes())
	}
	f.Add([]byte(`{"channel":"ahp-root://","action":null,"serverSeq":1}`))
	f.Add([]byte(`{"channel":"x","action":{"type":"future/x"},"serverSeq":-1,"origin":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e1 ActionEnvelope
		if err := json.Unmarshal(data, &e1); err != nil {
			return
		}
		j1, err := json.Marshal(e1)
		if err != nil {
			t.Fatalf("marshal decoded envelope: %v\ninput %q", err, data)
		}
		var e2 ActionEnvelope
		if err := json.Unmarshal(j1, &e2); err != nil {
			t.Fatalf("re-marshalled envelope does not unmarshal: %v\ninput %q\nmarshalled %q", err, data, j1)
		}
		j2, err := json.Marshal(e2)
		if err != nil {
			t.Fatalf("second marshal: %v", err)
		}
		if !bytes.Equal(j1, j2) {
			t.Fatalf("envelope not stable\ninput  %q\nfirst  %q\nsecond %q", data, j1, j2)
		}
	})
}

// FuzzNegotiate: Negotiate never panics; on success it returns one of the
// offers, which parses, is accepted and is the highest accepted offer; on
// failure the code is InvalidParams or UnsupportedProtocolVersion.
// The input is a list of offers separated by "|".
func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{
		"1.0.0", "0.9.3|1.2.0", "0.7.0|0.6.1", "2.0.0", "0.8.0|0.10.0", "",
		"1.0.0|1.0.0", "01.0.0", "1.0", "1.0.0-rc.1", "1.0.0+build", "1..0",
		"99999999999999999999.0.0", "0.9.0|x", "-1.0.0", "1.0.0 ", "٣.0.0",
		"0.6.0|0.7.0|0.9.0|1.0.0|1.999.999", "|", "1.0.0|",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var offers []string
		if s != "" {
			offers = strings.Split(s, "|")
		}
		got, err := Negotiate(offers)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("%q: error %v is not a *protocol.Error", offers, err)
			}
			if pe.Code != CodeInvalidParams && pe.Code != CodeUnsupportedProtocolVersion {
				t.Fatalf("%q: error code %d", offers, pe.Code)
			}
			if pe.Code == CodeUnsupportedProtocolVersion {
				for _, o := range offers {
					if v, err := ParseVersion(o); err == nil && accepted(v) {
						t.Fatalf("%q: unsupported although %q is accepted", offers, o)
					} else if err != nil {
						t.Fatalf("%q: unsupported although %q is malformed (want InvalidParams)", offers, o)
					}
				}
			}
			return
		}
		found := false
		for _, o := range offers {
			if o == got {
				found = true
			}
		}
		if !found {
			t.Fatalf("%q: negotiated %q is not an offer", offers, got)
		}
		v, err := ParseVersion(got)
		if err != nil {
			t.Fatalf("%q: negotiated %q does not parse: %v", offers, got, err)
		}
		if !accepted(v) {
			t.Fatalf("%q: negotiated %q is not accepted", offers, got)
		}
		if v.String() != got {
			t.Fatalf("%q: negotiated %q is not canonical (%s)", offers, got, v)
		}
		for _, o := range offers {
			w, err := ParseVersion(o)
			if err != nil {
				t.Fatalf("%q: success although %q is malformed", offers, o)
			}
			if accepted(w) && v.Less(w) {
				t.Fatalf("%q: negotiated %q but %q is higher and accepted", offers, got, o)
			}
		}
		if IsLegacy(got) != (v.Major == 0 && v.Minor < 9) {
			t.Fatalf("IsLegacy(%q) = %v", got, IsLegacy(got))
		}
	})
}
