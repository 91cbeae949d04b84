package changeset

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRepetitiveInputStaysBounded covers runs of one line or of a short
// period, which make a plain Myers search quadratic. git's line diff
// discards lines with many matches in a run of unmatched ones and caps
// the search cost, so they must finish well inside the budget, with git's
// counts, and a whole-file replacement must not be published as precise.
func TestRepetitiveInputStaysBounded(t *testing.T) {
	const n = 50000
	for name, pair := range map[string][2]string{
		"one line":   {strings.Repeat("x\n", n) + "y\n", "r\n" + strings.Repeat("x\n", 2*n) + "z\n"},
		"period two": {strings.Repeat("x\nw\n", n/2) + "y\n", "r\n" + strings.Repeat("x\nw\n", n) + "z\n"},
		"split run":  {"q\n" + strings.Repeat("x\n", n), strings.Repeat("x\n", n/2) + "m\n" + strings.Repeat("x\n", n/2) + "y\n"},
	} {
		start := time.Now()
		r := Compare(&Side{Path: "f", Content: []byte(pair[0])}, &Side{Path: "f", Content: []byte(pair[1])}, Options{Budget: time.Minute})
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s: took %v", name, el)
		}
		if r.Fallback {
			t.Errorf("%s: fell back to the anchored diff", name)
		}
		if _, err := exec.LookPath("git"); err == nil {
			dir := t.TempDir()
			for i, c := range pair {
				if err := os.WriteFile(filepath.Join(dir, string(rune('a'+i))), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if ga, gr := gitNoIndexNumstat(t, dir, "a", "b"); ga != r.Added || gr != r.Removed {
				t.Errorf("%s: +%d -%d, git numstat %d %d", name, r.Added, r.Removed, ga, gr)
			}
		}
		if r.Precise && (r.Removed == len(splitLines(pair[0])) && r.Added == len(splitLines(pair[1]))) {
			t.Errorf("%s: whole-file replacement published as precise", name)
		}
		if got, err := Apply([]byte(pair[0]), r.Hunks); err != nil || string(got) != pair[1] {
			t.Errorf("%s: hunks do not apply: %v", name, err)
		}
	}
}

// BenchmarkRepetitive measures a long run of one line.
func BenchmarkRepetitive(b *testing.B) {
	old := []byte(strings.Repeat("x\n", 50000) + "y\n")
	cur := []byte("r\n" + strings.Repeat("x\n", 100000) + "z\n")
	for b.Loop() {
		Compare(&Side{Path: "f", Content: old}, &Side{Path: "f", Content: cur}, Options{})
	}
}
