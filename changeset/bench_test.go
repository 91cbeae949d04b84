package changeset

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// realisticPair is a 2000-line Go-like file and a copy with 20 edits:
// replaced, inserted and deleted lines spread over the file.
func realisticPair() (old, new []byte) {
	rng := rand.New(rand.NewPCG(7, 7))
	var lines []string
	for f := 0; len(lines) < 2000; f++ {
		lines = append(lines, fmt.Sprintf("// fn%d does step %d.", f, f), fmt.Sprintf("func fn%d(ctx context.Context, x int) (int, error) {", f))
		for s := range 3 + rng.IntN(8) {
			switch rng.IntN(4) {
			case 0:
				lines = append(lines, "\tif err != nil {", "\t\treturn 0, err", "\t}")
			case 1:
				lines = append(lines, fmt.Sprintf("\tx += %d // step %d", rng.IntN(1000), s))
			case 2:
				lines = append(lines, "")
			default:
				lines = append(lines, fmt.Sprintf("\tlog.Printf(\"fn%d step %d: %%d\", x)", f, s))
			}
		}
		lines = append(lines, "\treturn x, nil", "}", "")
	}
	lines = lines[:2000]
	edited := append([]string(nil), lines...)
	for e := range 20 {
		i := 50 + e*95 + rng.IntN(40)
		switch e % 3 {
		case 0:
			edited[i] = edited[i] + " // edited"
		case 1:
			edited = append(edited[:i], append([]string{"\tx *= 2", "\tx -= 1"}, edited[i:]...)...)
		default:
			edited = append(edited[:i], edited[i+1:]...)
		}
	}
	return []byte(strings.Join(lines, "\n") + "\n"), []byte(strings.Join(edited, "\n") + "\n")
}

func BenchmarkCompare(b *testing.B) {
	old, new := realisticPair()
	o := &Side{Path: "pkg/file.go", Content: old}
	n := &Side{Path: "pkg/file.go", Content: new}
	b.SetBytes(int64(len(old) + len(new)))
	b.ReportAllocs()
	var r Result
	for b.Loop() {
		r = Compare(o, n, Options{})
	}
	if r.Fallback || !r.Precise || len(r.Hunks) == 0 {
		b.Fatalf("unexpected result: fallback %v precise %v hunks %d", r.Fallback, r.Precise, len(r.Hunks))
	}
	b.ReportMetric(float64(r.Added+r.Removed), "changed-lines")
}

// TestRealisticPairAgainstGit keeps the benchmark input honest: our patch
// for it is git's.
func TestRealisticPairAgainstGit(t *testing.T) {
	old, new := realisticPair()
	runGitCase(t, newGitRepo(t), gitCase{old: one("pkg/file.go", string(old)), new: one("pkg/file.go", string(new))})
}
