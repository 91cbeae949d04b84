package annotation

import (
	"testing"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
)

func rng(l1, c1, l2, c2 int) protocol.TextRange {
	return protocol.TextRange{Start: protocol.TextPosition{Line: l1, Character: c1}, End: protocol.TextPosition{Line: l2, Character: c2}}
}

func ptr[T any](v T) *T { return &v }

func TestMapRange(t *testing.T) {
	old := []byte("a\nb\nc\nd\ne\n")
	cases := []struct {
		name string
		cur  string
		r    protocol.TextRange
		want protocol.AnnotationPlace
	}{
		{"same", "a\nb\nc\nd\ne\n", rng(1, 0, 3, 0), protocol.AnnotationPlace{Status: protocol.PlaceSame, Range: ptr(rng(1, 0, 3, 0))}},
		// Whole lines b..c (end at character 0 of d) moved down by two.
		{"moved, whole lines", "x\ny\na\nb\nc\nd\ne\n", rng(1, 0, 3, 0), protocol.AnnotationPlace{Status: protocol.PlaceMoved, Range: ptr(rng(3, 0, 5, 0))}},
		// A partial selection keeps its characters when its lines moved.
		{"moved, characters kept", "x\na\nb\nc\nd\ne\n", rng(1, 0, 2, 1), protocol.AnnotationPlace{Status: protocol.PlaceMoved, Range: ptr(rng(2, 0, 3, 1))}},
		// c rewritten: the span is widened to whole lines, ending at the
		// end of the last line (in UTF-16 units).
		{"edited", "a\nb\nc — é😀\nd\ne\n", rng(1, 1, 2, 1), protocol.AnnotationPlace{Status: protocol.PlaceEdited, Range: ptr(rng(1, 0, 2, 7))}},
		{"gone", "a\nd\ne\n", rng(1, 0, 3, 0), protocol.AnnotationPlace{Status: protocol.PlaceGone}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := MapRange(changeset.NewLineMapper(old, []byte(c.cur)), []byte(c.cur), c.r)
			if got.Status != c.want.Status || !SameRange(got.Range, c.want.Range) {
				t.Errorf("MapRange = %s %+v, want %s %+v", got.Status, got.Range, c.want.Status, c.want.Range)
			}
		})
	}
}
