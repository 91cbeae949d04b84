package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestFastJSONMatchesEncodingJSON encodes changesets whose files carry
// every optional field present and absent, _meta of every shape the
// daemon puts there and some it does not (floats, structs, raw JSON,
// typed nils), and strings encoding/json escapes, and checks that the
// hand-written encoders write exactly encoding/json's bytes.
func TestFastJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		st := ChangesetState{Status: pick(rng, []string{StatusReady, StatusRecomputing, "odd<status>"}), Files: randomFiles(rng, rng.IntN(6))}
		if rng.IntN(3) == 0 {
			st.Files = nil
		}
		if rng.IntN(4) == 0 {
			st.Error = &ErrorInfo{ErrorType: "E", Message: randomString(rng), Meta: randomObject(rng, 2)}
		}
		switch rng.IntN(3) {
		case 0:
			st.Operations = []ChangesetOperation{{ID: "discard", Label: "Discard <all>", Scopes: []string{ScopeChangeset}, Status: OpIdle, Confirmation: json.RawMessage(`{ "markdown" : "sure?" }`)}}
		case 1:
			st.Operations = []ChangesetOperation{}
		}
		if rng.IntN(3) == 0 {
			st.Meta = randomObject(rng, 2)
		}

		type plainState ChangesetState
		ps := plainState(st)
		if ps.Files == nil {
			ps.Files = []ChangesetFile{}
		}
		want, err := json.Marshal(ps)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("state %d:\n got %s\nwant %s", i, got, want)
		}

		type plainSnapshot struct {
			Resource string     `json:"resource"`
			State    plainState `json:"state"`
			FromSeq  int64      `json:"fromSeq"`
		}
		want, err = json.Marshal(struct {
			Snapshot plainSnapshot `json:"snapshot"`
		}{plainSnapshot{"ahp-changeset:/s/changeset/uncommitted", ps, int64(i)}})
		if err != nil {
			t.Fatal(err)
		}
		got, err = SubscribeResult{Snapshot: &Snapshot{Resource: "ahp-changeset:/s/changeset/uncommitted", State: st, FromSeq: int64(i)}}.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("subscribe result %d:\n got %s\nwant %s", i, got, want)
		}

		cc := ChangesetContentChanged{Files: st.Files, Operations: st.Operations, Error: st.Error}
		type plainCC ChangesetContentChanged
		pc := plainCC(cc)
		if pc.Files == nil {
			pc.Files = []ChangesetFile{}
		}
		want, err = json.Marshal(pc)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err = actionParts(cc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("contentChanged %d:\n got %s\nwant %s", i, got, want)
		}
		if viaJSON, err := json.Marshal(cc); err != nil || !bytes.Equal(viaJSON, want) {
			t.Fatalf("contentChanged %d through json.Marshal:\n got %s (%v)\nwant %s", i, viaJSON, err, want)
		}

		if st.Meta != nil {
			want, err := json.Marshal(st.Meta)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendJSONValue([]byte("x"), st.Meta)
			if err != nil || !bytes.Equal(got[1:], want) || got[0] != 'x' {
				t.Fatalf("AppendJSONValue %d:\n got %s (%v)\nwant %s", i, got, err, want)
			}
		}

		for _, f := range st.Files {
			type plainFileSet ChangesetFileSet
			want, err := json.Marshal(plainFileSet{File: f})
			if err != nil {
				t.Fatal(err)
			}
			_, got, err := actionParts(ChangesetFileSet{File: f})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("fileSet %d:\n got %s\nwant %s", i, got, want)
			}
		}
	}
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func randomFiles(rng *rand.Rand, n int) []ChangesetFile {
	var files []ChangesetFile
	side := func() *FileEditSide {
		if rng.IntN(4) == 0 {
			return nil
		}
		s := &FileEditSide{URI: "file:///r/" + randomString(rng), Content: ContentRef{URI: randomString(rng)}}
		if rng.IntN(2) == 0 {
			s.Content.SizeHint = Ptr(rng.Int64N(1 << 40))
		}
		if rng.IntN(3) == 0 {
			s.Content.ContentType = "inode/symlink"
		}
		if rng.IntN(2) == 0 {
			s.Content.Nonce = fmt.Sprintf("%040x", rng.Uint64())
		}
		return s
	}
	for range n {
		f := ChangesetFile{ID: randomString(rng)}
		f.Edit.Before, f.Edit.After = side(), side()
		if rng.IntN(3) > 0 {
			f.Edit.Diff = &FileEditDiffStats{}
			if rng.IntN(4) > 0 {
				f.Edit.Diff.Added = Ptr(rng.IntN(1000))
			}
			if rng.IntN(4) > 0 {
				f.Edit.Diff.Removed = Ptr(rng.IntN(1000) - 10)
			}
		}
		if rng.IntN(3) == 0 {
			f.Reviewed = Ptr(rng.IntN(2) == 0)
		}
		switch rng.IntN(4) {
		case 0:
		case 1:
			f.Meta = Object{}
		default:
			f.Meta = randomObject(rng, 3)
		}
		files = append(files, f)
	}
	return files
}

func randomObject(rng *rand.Rand, depth int) Object {
	o := Object{}
	for range rng.IntN(6) {
		o[randomString(rng)] = randomValue(rng, depth)
	}
	return o
}

func randomValue(rng *rand.Rand, depth int) any {
	type report struct {
		At    time.Time `json:"at"`
		Agent string    `json:"agent,omitempty"`
		N     float64   `json:"n"`
	}
	switch k := rng.IntN(22); {
	case k == 0 && depth > 0:
		return randomObject(rng, depth-1)
	case k == 1 && depth > 0:
		var xs []any
		for range rng.IntN(4) {
			xs = append(xs, randomValue(rng, depth-1))
		}
		return xs
	case k == 2:
		return nil
	case k == 3:
		return rng.IntN(2) == 0
	case k == 4:
		return rng.IntN(1<<20) - 1000
	case k == 5:
		return rng.Int64()
	case k == 6:
		return rng.Float64() * 1e22
	case k == 7:
		return []string{randomString(rng), randomString(rng)}
	case k == 8:
		return []string(nil)
	case k == 9:
		return Object(nil)
	case k == 10:
		return json.RawMessage(`[ 1, {"a" : "<b>"} ]`)
	case k == 11:
		return report{At: time.Unix(rng.Int64N(2e9), 0).UTC(), Agent: randomString(rng), N: 1.5}
	case k == 12:
		return (*bool)(nil)
	case k == 13:
		return Ptr(3)
	case k == 14:
		return int32(-7)
	case k == 15:
		return uint64(1 << 63)
	case k == 16:
		return []any(nil)
	case k == 17:
		return map[string]string{"b": "x", "a": "<y>"}
	case k == 18:
		return uint32(9)
	default:
		return randomString(rng)
	}
}

// randomString is mostly the plain ASCII paths and ids are made of,
// sometimes with what encoding/json escapes or replaces.
func randomString(rng *rand.Rand) string {
	parts := []string{"src/", "main.go", "a b", "ä", "日本", "<", ">", "&", `"`, `\`, "\n", "\t", "\x01", "\x7f", "\u2028", "\u2029", "\xff", "", "x", "changesetd", "patchUri", "ahp-changeset:/s/changeset/uncommitted"}
	var b []byte
	for range rng.IntN(5) {
		p := parts[rng.IntN(len(parts))]
		if rng.IntN(3) > 0 {
			p = parts[rng.IntN(6)+16] // mostly plain
		}
		b = append(b, p...)
	}
	return string(b)
}
