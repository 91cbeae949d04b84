package changeset

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// propVocab is deliberately small so that lines repeat (braces, blank
// lines, returns), which is where diff algorithms disagree most. One entry
// carries a lone CR inside the line.
var propVocab = []string{
	"", "", "}", "}", "{", "\treturn nil", "\treturn err", "x := 1", "x := 2",
	"// comment", "func f() {", "\tif err != nil {", "\t}", "a", "b", "a", "c",
	"mid\rline", "end",
}

func propLines(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = propVocab[rng.IntN(len(propVocab))]
	}
	return out
}

// propEdit applies 1–6 random line edits: insertions, deletions and
// replacements of short runs, duplicated blocks and swaps.
func propEdit(rng *rand.Rand, lines []string) []string {
	out := append([]string(nil), lines...)
	for range 1 + rng.IntN(6) {
		run := 1 + rng.IntN(4)
		switch op := rng.IntN(5); {
		case op == 0: // insert
			i := rng.IntN(len(out) + 1)
			out = append(out[:i], append(propLines(rng, run), out[i:]...)...)
		case op == 1 && len(out) > 0: // delete
			i := rng.IntN(len(out))
			j := min(len(out), i+run)
			out = append(out[:i], out[j:]...)
		case op == 2 && len(out) > 0: // replace
			i := rng.IntN(len(out))
			j := min(len(out), i+run)
			out = append(out[:i], append(propLines(rng, run), out[j:]...)...)
		case op == 3 && len(out) > 0: // duplicate a block elsewhere
			i := rng.IntN(len(out))
			j := min(len(out), i+run)
			blk := append([]string(nil), out[i:j]...)
			k := rng.IntN(len(out) + 1)
			out = append(out[:k], append(blk, out[k:]...)...)
		case len(out) > 1: // swap
			i, j := rng.IntN(len(out)), rng.IntN(len(out))
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// propJoin renders lines with LF, CRLF or a per-line mix, optionally
// without the final newline.
func propJoin(rng *rand.Rand, lines []string, eol int, noFinal bool) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		switch {
		case eol == 1, eol == 2 && rng.IntN(2) == 0:
			b.WriteString("\r\n")
		default:
			b.WriteByte('\n')
		}
	}
	out := b.Bytes()
	if noFinal && len(out) > 0 {
		out = bytes.TrimSuffix(out, []byte("\n"))
	}
	return out
}

// propPair generates one old/new pair.
func propPair(rng *rand.Rand) (old, new []byte) {
	base := propLines(rng, rng.IntN(40))
	edited := propEdit(rng, base)
	eolOld := [...]int{0, 0, 0, 1, 2}[rng.IntN(5)]
	eolNew := eolOld
	if rng.IntN(6) == 0 { // convert line endings as well
		eolNew = rng.IntN(3)
	}
	old = propJoin(rng, base, eolOld, rng.IntN(5) == 0)
	new = propJoin(rng, edited, eolNew, rng.IntN(5) == 0)
	switch rng.IntN(20) {
	case 0:
		old = nil
	case 1:
		new = nil
	case 2:
		new = append([]byte(nil), old...) // identical
	}
	return old, new
}

// gitNoIndexNumstat runs "git diff --no-index --numstat a b"; exit code 1
// means the files differ, 0 that they are equal.
func gitNoIndexNumstat(t *testing.T, dir, a, b string) (added, removed int) {
	t.Helper()
	cmd := exec.Command("git", "-c", "core.autocrlf=false", "-c", "diff.algorithm=myers",
		"diff", "--no-index", "--no-ext-diff", "--no-renames", "--numstat", "--", a, b)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir, "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case err == nil:
		if len(bytes.TrimSpace(out)) != 0 {
			t.Fatalf("git diff exited 0 but printed %q", out)
		}
		return 0, 0
	case errors.As(err, &ee) && ee.ExitCode() == 1:
	default:
		t.Fatalf("git diff --no-index: %v\n%s", err, stderr.String())
	}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		t.Fatalf("git numstat output %q", out)
	}
	added, err1 := strconv.Atoi(f[0])
	removed, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("git numstat output %q is not numeric (binary?)", out)
	}
	return added, removed
}

// TestPropertyAgainstGitNoIndex checks the engine against git on many
// generated pairs: the counts are git's exactly (the line diff follows
// git's xdiff), and the hunks turn old into new exactly.
func TestPropertyAgainstGitNoIndex(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not found")
	}
	const pairs = 300
	rng := rand.New(rand.NewPCG(20240917, 7))
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	var fallbacks int
	for i := range pairs {
		old, new := propPair(rng)
		if err := os.WriteFile(a, old, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b, new, 0o644); err != nil {
			t.Fatal(err)
		}
		ga, gr := gitNoIndexNumstat(t, dir, "a", "b")
		r := Compare(&Side{Path: "f", Content: old}, &Side{Path: "f", Content: new}, Options{})
		desc := func() string { return fmt.Sprintf("pair %d\nold=%q\nnew=%q", i, old, new) }
		if r.Binary {
			t.Errorf("%s: classified binary", desc())
			continue
		}
		if r.Added-r.Removed != ga-gr {
			t.Errorf("%s: ours +%d -%d, git +%d -%d: balance differs", desc(), r.Added, r.Removed, ga, gr)
		}
		if r.Fallback {
			// Equality only holds for a diff that did not run out of its
			// budget.
			fallbacks++
		} else if r.Added != ga || r.Removed != gr {
			t.Errorf("%s: ours +%d -%d, git numstat +%d -%d", desc(), r.Added, r.Removed, ga, gr)
		}
		got, err := Apply(old, r.Hunks)
		if err != nil {
			t.Errorf("%s: Apply: %v", desc(), err)
		} else if !bytes.Equal(got, new) {
			t.Errorf("%s: Apply gave %q", desc(), got)
		}
		if t.Failed() && i > 20 {
			t.FailNow() // enough examples
		}
	}
	t.Logf("%d pairs; %d budget fallbacks", pairs, fallbacks)
}

// TestHeuristicsAgainstGit diffs large, heavily edited pairs, where git's
// search passes its cost thresholds (256, and the square root of the
// diagonals) and takes heuristic splits: the counts must still be git's.
// The last pairs are long enough (over 32,768 lines a side) for the
// square-root limit to exceed 256, so the snake heuristic runs first.
func TestHeuristicsAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not found")
	}
	rng := rand.New(rand.NewPCG(5, 11))
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for i := range 12 {
		n := 2000 + rng.IntN(6000)
		if i >= 9 {
			n = 40000 + rng.IntN(20000)
		}
		vocab := 50 + rng.IntN(5000) // few distinct lines: many multiple matches
		if i >= 9 {
			vocab = 2000
		}
		line := func() string { return fmt.Sprintf("v%d\n", rng.IntN(vocab)) }
		var old, cur strings.Builder
		if i >= 9 {
			// Long unique runs between blocks of shared vocabulary lines:
			// the search meets long snakes at a high cost.
			for blk := 0; blk*120 < n; blk++ {
				for k := range 100 {
					l := fmt.Sprintf("u%d.%d\n", blk, k)
					old.WriteString(l)
					cur.WriteString(l)
				}
				for range 20 {
					old.WriteString(line())
					cur.WriteString(line())
				}
			}
		}
		for len := 0; len < n && i < 9; {
			run := 1 + rng.IntN(40)
			switch rng.IntN(4) {
			case 0: // same on both sides
				for range run {
					l := line()
					old.WriteString(l)
					cur.WriteString(l)
				}
			case 1: // replaced
				for range run {
					old.WriteString(line())
					cur.WriteString(line())
				}
			case 2: // deleted
				for range run {
					old.WriteString(line())
				}
			default: // inserted
				for range run {
					cur.WriteString(line())
				}
			}
			len += run
		}
		if err := os.WriteFile(a, []byte(old.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b, []byte(cur.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		ga, gr := gitNoIndexNumstat(t, dir, "a", "b")
		r := Compare(&Side{Path: "f", Content: []byte(old.String())}, &Side{Path: "f", Content: []byte(cur.String())}, Options{Budget: time.Minute})
		if r.Fallback || r.Added != ga || r.Removed != gr {
			t.Errorf("pair %d (%d lines, %d distinct): fallback %v +%d -%d, git numstat %d %d", i, n, vocab, r.Fallback, r.Added, r.Removed, ga, gr)
		}
	}
}
