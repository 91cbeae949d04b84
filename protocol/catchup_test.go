package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// slowCatchUp is what EncodeCatchUp stands for: the state decoded, its
// actions built and each encoded as any action is.
func slowCatchUp(t *testing.T, channel string, enc []byte, legacy bool, seq int64) [][]byte {
	t.Helper()
	var st ChangesetState
	if err := json.Unmarshal(enc, &st); err != nil {
		t.Fatal(err)
	}
	acts := []Action{ChangesetContentChanged{Files: st.Files, Operations: st.Operations, Error: st.Error}}
	if st.Operations == nil {
		acts = append(acts, ChangesetOperationsChanged{})
	}
	acts = append(acts, ChangesetStatusChanged{Status: st.Status, Error: st.Error})
	var out [][]byte
	for _, a := range acts {
		seq++
		b, err := EncodeActionNotification(AdaptEnvelope(legacy, ActionEnvelope{Channel: channel, Action: StateAction{Action: a}, ServerSeq: seq}))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestCatchUpEqualsTheDecodedState: the catch-up made from an encoded
// state, its file list copied as it is, equals byte for byte the one
// made by decoding the state and encoding each action, for states with
// and without operations and an error, for both protocol versions, and
// with file ids and _meta that hold what a scanner could mistake for the
// state's own members.
func TestCatchUpEqualsTheDecodedState(t *testing.T) {
	reviewed, three := true, 3
	tricky := []ChangesetFile{
		{ID: `file:///r/"files":[]},{"operations":`, Reviewed: &reviewed},
		{ID: "file:///r/ünï\\cödé\u2028.go", Meta: Object{"changesetd": map[string]any{"generated": true, "note": `}]"status":"error"`, "nested": []any{map[string]any{"files": []any{}}}}}},
		{ID: "file:///r/b.go", Edit: FileEdit{After: &FileEditSide{URI: "file:///r/b.go", Content: ContentRef{URI: "content:/b?x={y}"}}, Diff: &FileEditDiffStats{Added: &three}}},
	}
	op := ChangesetOperation{ID: "revert", Label: "Revert", Scopes: []string{"changeset"}, Status: "idle"}
	states := []ChangesetState{
		{Status: StatusReady, Files: tricky},
		{Status: StatusReady, Files: tricky, Operations: []ChangesetOperation{op}},
		{Status: StatusReady, Files: nil, Operations: []ChangesetOperation{}},
		{Status: StatusError, Error: &ErrorInfo{Message: `scan "failed"`}, Files: tricky[:1]},
		{Status: StatusRecomputing, Files: tricky, Meta: Object{"k": "v"}},
	}
	// And every changeset state of the upstream reducer fixtures.
	paths, _ := filepath.Glob("../testdata/ahp-fixtures/reducers/*changeset*.json")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var fx struct {
			Initial json.RawMessage `json:"initial"`
		}
		var st ChangesetState
		if json.Unmarshal(b, &fx) == nil && json.Unmarshal(fx.Initial, &st) == nil && st.Status != "" {
			states = append(states, st)
		}
	}
	if len(states) < 10 {
		t.Fatalf("only %d states: the fixtures were not found", len(states))
	}
	for i, st := range states {
		enc, err := st.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		for _, legacy := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/legacy=%v", i, legacy), func(t *testing.T) {
				const ch = "ahp-changeset:/s/changeset/uncommitted"
				seq := int64(41)
				first, rest, err := EncodeCatchUp(ch, Encoded(enc), legacy, func() int64 { seq++; return seq })
				if err != nil {
					t.Fatal(err)
				}
				got := append([][]byte{bytes.Join(first, nil)}, rest...)
				want := slowCatchUp(t, ch, enc, legacy, 41)
				if len(got) != len(want) {
					t.Fatalf("%d frames, want %d", len(got), len(want))
				}
				for k := range want {
					if !bytes.Equal(got[k], want[k]) {
						t.Errorf("frame %d:\n%s\nwant\n%s", k, got[k], want[k])
					}
				}
			})
		}
	}
}

// TestCatchUpRefusesWhatIsNotAState: bytes that are not an encoded
// changeset state give an error, not frames.
func TestCatchUpRefusesWhatIsNotAState(t *testing.T) {
	for _, b := range []string{``, `[]`, `{"status":"ready"}`, `{"files":[]}`, `{"status":"ready","files":[`, `{"status":"ready","files":[]} x`, `{"status":"ready" "files":[]}`} {
		if _, _, err := EncodeCatchUp("c", Encoded(b), false, func() int64 { return 1 }); err == nil {
			t.Errorf("%q: no error", b)
		}
	}
}

// FuzzTopMembers: the members found in any encoding of a JSON object
// decode to the object's own members.
func FuzzTopMembers(f *testing.F) {
	f.Add([]byte(`{"status":"ready","files":[{"id":"a\"}"}],"operations":[]}`))
	f.Add([]byte(`{ "a" : 1 , "b":{"c":[1,2,{"d":"]"}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var want map[string]json.RawMessage
		if json.Unmarshal(b, &want) != nil || want == nil {
			return
		}
		got, err := topMembers(b)
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		for k, v := range want {
			var a, c any
			if json.Unmarshal(v, &a) != nil || json.Unmarshal(got[k], &c) != nil {
				t.Fatalf("%q: member %q: %q vs %q", b, k, got[k], v)
			}
			if fmt.Sprint(a) != fmt.Sprint(c) {
				t.Fatalf("%q: member %q: %q, want %q", b, k, got[k], v)
			}
		}
	})
}

// BenchmarkEncodeCatchUp: a catch-up of an 11,000-file changeset, the
// file list taken as it is.
func BenchmarkEncodeCatchUp(b *testing.B) {
	st := ChangesetState{Status: StatusReady}
	for i := range 11000 {
		n := i % 40
		id := fmt.Sprintf("file:///home/dev/repo/pkg%d/dir/file%d.go", i/100, i)
		st.Files = append(st.Files, ChangesetFile{ID: id, Edit: FileEdit{
			Before: &FileEditSide{URI: id, Content: ContentRef{URI: "git-blob:/" + id}},
			After:  &FileEditSide{URI: id, Content: ContentRef{URI: "changeset-content:/" + id, Nonce: fmt.Sprint(i * 7919)}},
			Diff:   &FileEditDiffStats{Added: &n, Removed: &n},
		}, Meta: Object{"jetbrains": Object{"air": Object{"diffStats": Object{"added": n, "removed": n}}}, "changesetd": Object{"patch": "changeset-patch:/" + id + "?v=" + fmt.Sprint(i)}}})
	}
	enc, err := st.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.Run("scanned", func(b *testing.B) {
		for b.Loop() {
			seq := int64(0)
			if _, _, err := EncodeCatchUp("ahp-changeset:/s/changeset/uncommitted", enc, false, func() int64 { seq++; return seq }); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What a catch-up cost when the state was decoded and its actions
	// encoded again.
	b.Run("decoded", func(b *testing.B) {
		for b.Loop() {
			var st ChangesetState
			if err := json.Unmarshal(enc, &st); err != nil {
				b.Fatal(err)
			}
			env := ActionEnvelope{Channel: "ahp-changeset:/s/changeset/uncommitted", Action: StateAction{Action: ChangesetContentChanged{Files: st.Files}}, ServerSeq: 1}
			if _, err := EncodeActionNotification(env); err != nil {
				b.Fatal(err)
			}
		}
	})
}
