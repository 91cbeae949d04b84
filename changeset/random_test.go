package changeset

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomText builds a file from a small vocabulary so that lines repeat,
// as braces and blank lines do in code, with CRLF and a missing final
// newline mixed in.
func randomText(rng *rand.Rand, n int) string {
	vocab := []string{"", "}", "{", "\treturn nil", "x := 1", "// comment", "func f() {", "\tif err != nil {", "\t\tpanic(err)", "\t}", "a", "b", "c", "  indented", "end\r"}
	var sb strings.Builder
	for range n {
		sb.WriteString(vocab[rng.IntN(len(vocab))])
		sb.WriteByte('\n')
	}
	s := sb.String()
	if rng.IntN(5) == 0 && len(s) > 0 {
		s = s[:len(s)-1]
	}
	return s
}

// mutate applies a few line edits to s.
func mutate(rng *rand.Rand, s string) string {
	lines := splitLines(s)
	for range rng.IntN(6) + 1 {
		switch op := rng.IntN(4); {
		case op == 0 && len(lines) > 0:
			i := rng.IntN(len(lines))
			lines = append(lines[:i], lines[i+1:]...)
		case op == 1:
			i := rng.IntN(len(lines) + 1)
			lines = append(lines[:i], append([]string{randomText(rng, 1+rng.IntN(3))}, lines[i:]...)...)
		case op == 2 && len(lines) > 0:
			lines[rng.IntN(len(lines))] = fmt.Sprintf("changed %d\n", rng.IntN(100))
		default:
			if len(lines) > 1 {
				i, j := rng.IntN(len(lines)), rng.IntN(len(lines))
				lines[i], lines[j] = lines[j], lines[i]
			}
		}
	}
	out := strings.Join(lines, "")
	if rng.IntN(6) == 0 {
		out = strings.TrimSuffix(out, "\n")
	}
	return out
}

// TestGitCompatRandom compares many random edits with git. Minimal diffs
// may legitimately differ from git's, whose Myers is not minimal on dense
// changes; the test then checks git's invariants instead: the same
// added-removed balance, never more changed lines than git, and a patch
// that git applies to the old tree to give the new one.
func TestGitCompatRandom(t *testing.T) {
	repo := newGitRepo(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 300
	var old, new []fileSpec
	for i := range n {
		a := randomText(rng, rng.IntN(60))
		b := mutate(rng, a)
		if i%10 == 0 {
			b = randomText(rng, rng.IntN(60)) // unrelated texts
		}
		p := fmt.Sprintf("r%03d.txt", i)
		old = append(old, fileSpec{path: p, content: a})
		new = append(new, fileSpec{path: p, content: b})
	}
	t1, t2 := repo.tree(old), repo.tree(new)
	gitPatch := repo.diff(false, []string{"--no-renames"}, t1, t2)
	sections := map[string]string{}
	for _, sec := range strings.Split(gitPatch, "diff --git ")[1:] {
		sections[sec[2:strings.IndexByte(sec, ' ')]] = "diff --git " + sec
	}
	nums := map[string][2]int{}
	for _, l := range strings.Split(strings.TrimSpace(repo.diff(false, []string{"--no-renames", "--numstat"}, t1, t2)), "\n") {
		var a, d int
		var p string
		fmt.Sscanf(l, "%d\t%d\t%s", &a, &d, &p)
		nums[p] = [2]int{a, d}
	}
	exact, changed, sameCounts := 0, 0, 0
	var all strings.Builder
	for i := range old {
		r := Compare(sideOf(old[i]), sideOf(new[i]), Options{})
		all.WriteString(r.Patch)
		if r.Patch == "" {
			continue
		}
		changed++
		p := old[i].path
		g := nums[p]
		if r.Added-r.Removed != g[0]-g[1] || r.Added+r.Removed > g[0]+g[1] {
			t.Errorf("%s: ours +%d -%d, git +%d -%d", p, r.Added, r.Removed, g[0], g[1])
		}
		if r.Patch == sections[p] {
			exact++
		} else if r.Added == g[0] {
			sameCounts++
		}
		if got, err := Apply(old[i].contentBytes(), r.Hunks); err != nil || string(got) != new[i].content {
			t.Errorf("%s: Apply: %v", p, err)
		}
	}
	checkApply(t, repo, t1, t2, all.String(), false)
	t.Logf("%d of %d changed files byte-identical to git's patch; %d more with git's counts but another equally minimal alignment", exact, changed, sameCounts)
	if exact*10 < changed*8 {
		t.Errorf("only %d of %d patches match git byte for byte", exact, changed)
	}
}

func (f fileSpec) contentBytes() []byte { return []byte(f.content) }

// TestGitCompatBlockInsertions inserts blocks into code-like text with
// many repeated lines ("}", blank, "\t}"), where a block can slide and
// git places it with its indent heuristic. A pure insertion has a single
// minimal alignment up to sliding, so every patch must equal git's.
func TestGitCompatBlockInsertions(t *testing.T) {
	repo := newGitRepo(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var old, new []fileSpec
	for i := range 300 {
		a := randomText(rng, 10+rng.IntN(50)) + "\n"
		lines := splitLines(a)
		k := rng.IntN(len(lines) + 1)
		ins := randomText(rng, 2+rng.IntN(5)) + "\n"
		b := strings.Join(lines[:k], "") + ins + strings.Join(lines[k:], "")
		if i%2 == 1 {
			a, b = b, a // and as many block deletions
		}
		p := fmt.Sprintf("h%03d.txt", i)
		old = append(old, fileSpec{path: p, content: a})
		new = append(new, fileSpec{path: p, content: b})
	}
	t1, t2 := repo.tree(old), repo.tree(new)
	sections := map[string]string{}
	for _, sec := range strings.Split(repo.diff(false, []string{"--no-renames"}, t1, t2), "diff --git ")[1:] {
		sections[sec[2:strings.IndexByte(sec, ' ')]] = "diff --git " + sec
	}
	for i := range old {
		r := Compare(sideOf(old[i]), sideOf(new[i]), Options{})
		if want := sections[old[i].path]; r.Patch != want {
			t.Errorf("%s differs from git\n--- ours\n%s--- git\n%s", old[i].path, r.Patch, want)
		}
	}
}
