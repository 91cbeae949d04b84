package source

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/changeset"
)

// A packed result unpacks to the result it was packed from: every hunk's
// place, section and lines, whatever the hunks, lines and texts.
func TestPackedResultUnpacksAsItWas(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	text := func() string {
		var b strings.Builder
		for range rng.IntN(60) {
			switch rng.IntN(4) {
			case 0:
				b.WriteString("func f() {\n")
			case 1:
				b.WriteString("\n")
			default:
				b.WriteString(strings.Repeat("x", rng.IntN(12)) + "\n")
			}
		}
		if rng.IntN(5) == 0 {
			b.WriteString("no end of line")
		}
		return b.String()
	}
	for i := range 500 {
		old, cur := text(), text()
		r := changeset.Compare(&changeset.Side{Path: "f.go", Content: []byte(old)}, &changeset.Side{Path: "f.go", Content: []byte(cur)}, changeset.Options{})
		p := pack(r)
		got := p.result()
		if len(r.Hunks) == 0 {
			if got.Hunks != nil {
				t.Fatalf("%d: no hunks unpack as %v", i, got.Hunks)
			}
			continue
		}
		if !reflect.DeepEqual(got.Hunks, r.Hunks) {
			t.Fatalf("%d: hunks\n%+v\nunpack as\n%+v", i, r.Hunks, got.Hunks)
		}
		got.Hunks, r.Hunks = nil, nil
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("%d: %+v unpacks as %+v", i, r, got)
		}
		// The patch written again from the unpacked hunks is the same.
		if a, b := p.result().PatchWith(changeset.Options{SrcPrefix: "/r/", DstPrefix: "/r/"}), changeset.Compare(&changeset.Side{Path: "f.go", Content: []byte(old)}, &changeset.Side{Path: "f.go", Content: []byte(cur)}, changeset.Options{SrcPrefix: "/r/", DstPrefix: "/r/"}).Patch; a != b {
			t.Fatalf("%d: patch from the unpacked hunks\n%s\nwant\n%s", i, a, b)
		}
	}
}
