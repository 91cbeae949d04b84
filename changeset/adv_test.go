package changeset

import (
	"strings"
	"testing"
	"time"
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
		start := time.Now()
		r := Compare(&Side{Path: "f", Content: []byte(pair[0])}, &Side{Path: "f", Content: []byte(pair[1])}, Options{})
		if el := time.Since(start); el > 1500*time.Millisecond {
			t.Errorf("%s: Compare took %v", name, el)
		}
		if r.Precise && (r.Removed == len(splitLines(pair[0])) && r.Added == len(splitLines(pair[1]))) {
			t.Errorf("%s: whole-file replacement published as precise", name)
		}
		if got, err := Apply([]byte(pair[0]), r.Hunks); err != nil || string(got) != pair[1] {
			t.Errorf("%s: hunks do not apply: %v", name, err)
		}
	}
}
