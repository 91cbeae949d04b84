package changeset

import (
	"fmt"
	"strings"
	"testing"
)

func lines(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func text(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

func TestMapLines(t *testing.T) {
	base := lines(20, "line ")
	with := func(f func([]string) []string) []byte { return text(f(append([]string(nil), base...))) }
	cases := []struct {
		name        string
		new         []byte
		first, last int
		want        LineMap
	}{
		{"unchanged", text(base), 5, 7, LineMap{First: 5, Last: 7}},
		{"three lines inserted above", with(func(l []string) []string {
			return append(append(append([]string{}, l[:2]...), "a", "b", "c"), l[2:]...)
		}), 5, 7, LineMap{First: 8, Last: 10}},
		{"inserted right above the first line", with(func(l []string) []string {
			return append(append(append([]string{}, l[:5]...), "a"), l[5:]...)
		}), 5, 7, LineMap{First: 6, Last: 8}},
		{"two lines deleted above", with(func(l []string) []string {
			return append(append([]string{}, l[:1]...), l[3:]...)
		}), 5, 7, LineMap{First: 3, Last: 5}},
		{"changes below", with(func(l []string) []string { l[15] = "x"; return l[:18] }), 5, 7, LineMap{First: 5, Last: 7}},
		{"all lines deleted", with(func(l []string) []string {
			return append(append([]string{}, l[:5]...), l[8:]...)
		}), 5, 7, LineMap{Edited: true, Gone: true}},
		{"middle line rewritten", with(func(l []string) []string { l[6] = "rewritten"; return l }), 5, 7, LineMap{First: 5, Last: 7, Edited: true}},
		{"block replaced by two lines, after an insertion above", with(func(l []string) []string {
			return append(append(append([]string{"top"}, l[:5]...), "x", "y"), l[8:]...)
		}), 5, 7, LineMap{First: 6, Last: 7, Edited: true}},
		{"line added inside", with(func(l []string) []string {
			return append(append(append([]string{}, l[:6]...), "inside"), l[6:]...)
		}), 5, 7, LineMap{First: 5, Last: 8, Edited: true}},
		{"last line deleted", with(func(l []string) []string {
			return append(append([]string{}, l[:7]...), l[8:]...)
		}), 5, 7, LineMap{First: 5, Last: 6, Edited: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := NewLineMapper(text(base), c.new).Map(c.first, c.last)
			if got != c.want {
				t.Errorf("Map(%d..%d) = %+v, want %+v", c.first, c.last, got, c.want)
			}
		})
	}
}

// TestMapLinesFollowsUnchangedLines checks, on random edits, that every
// line of the range that survives unchanged is found at the mapped place.
func TestMapLinesFollowsUnchangedLines(t *testing.T) {
	for seed := 0; seed < 200; seed++ {
		old := lines(40, "l")
		cur := append([]string(nil), old...)
		r := seed
		next := func(n int) int { r = (r*1103515245 + 12345) & 0x7fffffff; return r % n }
		for k := 0; k < 4; k++ {
			at := next(len(cur))
			switch next(3) {
			case 0:
				cur = append(cur[:at], append([]string{fmt.Sprintf("ins%d-%d", seed, k)}, cur[at:]...)...)
			case 1:
				cur = append(cur[:at], cur[at+1:]...)
			default:
				cur[at] = fmt.Sprintf("chg%d-%d", seed, k)
			}
		}
		first := next(30)
		last := first + next(8)
		lm := NewLineMapper(text(old), text(cur)).Map(first, last)
		if lm.Gone {
			continue
		}
		if !lm.Edited {
			for i := first; i <= last; i++ {
				if got := cur[lm.First+i-first]; got != old[i] {
					t.Fatalf("seed %d: unedited range %d..%d mapped to %d..%d, but line %d is %q there", seed, first, last, lm.First, lm.Last, i, got)
				}
			}
		}
		for i := first; i <= last; i++ {
			for j, l := range cur {
				if l == old[i] && (j < lm.First || j > lm.Last) {
					t.Fatalf("seed %d: line %q of the range is at %d, outside the mapped %d..%d", seed, old[i], j, lm.First, lm.Last)
				}
			}
		}
	}
}
