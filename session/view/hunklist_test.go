package view

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestHunkListEncodesAsItsSlice: a hunk list encodes, alone and inside a
// file list written by the protocol's own encoder, byte for byte as
// encoding/json writes the []Hunk it holds, and HunksOf reads it back.
func TestHunkListEncodesAsItsSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	texts := []string{"", "h0123456789abcdef0123", "agent <a&b>", "ünïcode", "quote\"back\\slash", "line\nbreak", "\u2028"}
	pick := func() string { return texts[rng.IntN(len(texts))] }
	for i := range 500 {
		var hs []Hunk
		if i%7 != 0 {
			hs = []Hunk{}
		}
		for range rng.IntN(4) {
			h := Hunk{ID: pick(), OldStart: rng.IntN(1 << 20), OldLines: rng.IntN(100), NewStart: rng.IntN(1 << 20), NewLines: rng.IntN(100), Reviewed: rng.IntN(2) == 0, Author: pick()}
			switch rng.IntN(3) {
			case 0:
				h.Authors = []string{}
			case 1:
				h.Authors = []string{pick(), pick()}
			}
			hs = append(hs, h)
		}
		want, err := json.Marshal(hs)
		if err != nil {
			t.Fatal(err)
		}
		if got := HunkList(hs).AppendJSONValue(nil); string(got) != string(want) {
			t.Fatalf("hunks %d:\n got %s\nwant %s", i, got, want)
		}
		meta := func(v any) protocol.Object {
			return protocol.Object{"changesetd": protocol.Object{MetaHunks: v, "operation": "modify"}}
		}
		withSlice := protocol.ChangesetState{Files: []protocol.ChangesetFile{{ID: "f", Meta: meta(hs)}}}
		withList := protocol.ChangesetState{Files: []protocol.ChangesetFile{{ID: "f", Meta: meta(HunkList(hs))}}}
		want, err = withSlice.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := withList.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("hunks %d in a file list:\n got %s\nwant %s", i, got, want)
		}
		if back := HunksOf(meta(HunkList(hs))); len(back) != len(hs) || (len(hs) > 0 && back[0].ID != hs[0].ID) {
			t.Fatalf("hunks %d: HunksOf gave %+v, want %+v", i, back, hs)
		}
	}
}

// BenchmarkHunkList: a thousand files' list, each with two hunks, encoded
// with the hunks as a []Hunk (encoding/json) and as a HunkList.
func BenchmarkHunkList(b *testing.B) {
	files := func(list bool) protocol.ChangesetState {
		var st protocol.ChangesetState
		for i := range 1000 {
			hs := []Hunk{{ID: "h0123456789abcdef0123", OldStart: i, OldLines: 3, NewStart: i, NewLines: 4, Author: "agent"}, {ID: "h3210fedcba9876543210", OldStart: i + 50, OldLines: 1, NewStart: i + 51, NewLines: 2, Author: "you"}}
			var v any = hs
			if list {
				v = HunkList(hs)
			}
			st.Files = append(st.Files, protocol.ChangesetFile{ID: "file:///f" + strconv.Itoa(i), Meta: protocol.Object{"changesetd": protocol.Object{MetaHunks: v, "operation": "modify"}}})
		}
		return st
	}
	for _, c := range []struct {
		name string
		list bool
	}{{"slice", false}, {"HunkList", true}} {
		st := files(c.list)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := st.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
