package changeset

import (
	"strings"
	"testing"
)

// TestRepetitiveInputStaysBounded covers inputs on which go-diff's
// substring and half-match steps are quadratic and ignore its deadline:
// runs of one line or of a short period. They must go to the anchored
// diff (or finish inside the budget), and a whole-file replacement must
// not be published as precise.
func TestRepetitiveInputStaysBounded(t *testing.T) {
	const n = 50000
	for name, pair := range map[string][2]string{
		"one line":   {strings.Repeat("x\n", n) + "y\n", "r\n" + strings.Repeat("x\n", 2*n) + "z\n"},
		"period two": {strings.Repeat("x\nw\n", n/2) + "y\n", "r\n" + strings.Repeat("x\nw\n", n) + "z\n"},
		"split run":  {"q\n" + strings.Repeat("x\n", n), strings.Repeat("x\n", n/2) + "m\n" + strings.Repeat("x\n", n/2) + "y\n"},
	} {
		r := Compare(&Side{Path: "f", Content: []byte(pair[0])}, &Side{Path: "f", Content: []byte(pair[1])}, Options{})
		// Bounded means routed to the anchored diff, decided from the
		// input's shape rather than from a clock (BenchmarkRepetitive
		// measures the time).
		if !r.Fallback {
			t.Errorf("%s: repetitive input was not routed to the anchored diff", name)
		}
		if r.Precise && (r.Removed == len(splitLines(pair[0])) && r.Added == len(splitLines(pair[1]))) {
			t.Errorf("%s: whole-file replacement published as precise", name)
		}
		if got, err := Apply([]byte(pair[0]), r.Hunks); err != nil || string(got) != pair[1] {
			t.Errorf("%s: hunks do not apply: %v", name, err)
		}
	}
}

// BenchmarkRepetitive measures the worst inputs of go-diff's pre-passes.
func BenchmarkRepetitive(b *testing.B) {
	old := []byte(strings.Repeat("x\n", 50000) + "y\n")
	cur := []byte("r\n" + strings.Repeat("x\n", 100000) + "z\n")
	for b.Loop() {
		Compare(&Side{Path: "f", Content: old}, &Side{Path: "f", Content: cur}, Options{})
	}
}
