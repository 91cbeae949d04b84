package changeset

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// goFile is a small Go-like file whose lines repeat in places, as code
// does, so that whitespace-only edits meet the slider and hunk merging.
func goFile(n int) string {
	return numbered(n, func(i int) string {
		switch i % 7 {
		case 0:
			return "}\n"
		case 1:
			return fmt.Sprintf("func f%d() {\n", i)
		case 4:
			return "\n"
		}
		return fmt.Sprintf("\tx%d := %d\n", i, i)
	})
}

// editEach rewrites the 1-based lines of s named in edits.
func editEach(s string, edits map[int]func(string) string) string {
	lines := splitLines(s)
	for i, f := range edits {
		lines[i-1] = f(lines[i-1])
	}
	return strings.Join(lines, "")
}

func reindent(l string) string   { return "    " + strings.TrimLeft(l, "\t ") }
func trailing(l string) string   { return strings.TrimSuffix(l, "\n") + "  \t\n" }
func crlf(l string) string       { return strings.TrimSuffix(l, "\n") + "\r\n" }
func inner(l string) string      { return strings.Replace(l, " := ", ":=", 1) }
func realEdit(l string) string   { return strings.Replace(l, "x", "renamed", 1) }
func indentMore(l string) string { return "\t" + l }

func whitespaceCases() []gitCase {
	base := goFile(40)
	each := func(edits map[int]func(string) string) string { return editEach(base, edits) }
	return []gitCase{
		{name: "indent only", old: one("a.go", base), new: one("a.go", each(map[int]func(string) string{3: reindent, 5: reindent, 6: reindent}))},
		{name: "trailing spaces only", old: one("a.go", base), new: one("a.go", each(map[int]func(string) string{2: trailing, 30: trailing}))},
		{name: "CRLF everywhere", old: one("a.go", base), new: one("a.go", strings.ReplaceAll(base, "\n", "\r\n"))},
		{name: "spaces inside a line", old: one("a.go", base), new: one("a.go", each(map[int]func(string) string{10: inner}))},
		{name: "final newline dropped", old: one("a.go", base), new: one("a.go", strings.TrimSuffix(base, "\n"))},
		{name: "indent with a real change", old: one("a.go", base), new: one("a.go", each(map[int]func(string) string{
			2: indentMore, 3: indentMore, 4: indentMore, 5: realEdit, 6: indentMore, 20: trailing, 22: realEdit, 23: crlf,
		}))},
		{name: "real changes near whitespace ones merge as git merges", old: one("a.go", base), new: one("a.go", each(map[int]func(string) string{
			9: realEdit, 12: reindent, 13: reindent, 16: realEdit, 30: crlf, 38: realEdit,
		}))},
		{name: "block wrapped and reindented", old: one("a.go", base), new: one("a.go", strings.Replace(each(map[int]func(string) string{
			9: indentMore, 10: indentMore, 11: indentMore, 12: indentMore,
		}), "\t\tx9", "if ok {\n\t\tx9", 1))},
		{name: "whitespace-only with a mode change keeps the header", old: one("a.sh", base),
			new: []fileSpec{{path: "a.sh", content: each(map[int]func(string) string{3: trailing}), mode: ModeExecutable}}},
		{name: "whitespace-only rename keeps the header", renames: true, old: one("a.go", base), new: one("b.go", each(map[int]func(string) string{3: reindent}))},
		{name: "new file", old: nil, new: one("n.go", "  a\n\n b \n")},
		{name: "two files, one whitespace-only", old: []fileSpec{{path: "a.go", content: base}, {path: "b.go", content: base}},
			new: []fileSpec{{path: "a.go", content: each(map[int]func(string) string{7: reindent})}, {path: "b.go", content: each(map[int]func(string) string{7: realEdit, 8: reindent})}}},
	}
}

// TestGitIgnoreWhitespace: with Options.IgnoreWhitespace the patch is the
// one git diff -w prints, byte for byte (hunk headers counting the lines
// shown, context from the new side), and so are the counts.
func TestGitIgnoreWhitespace(t *testing.T) {
	repo := newGitRepo(t)
	for _, c := range whitespaceCases() {
		t.Run(c.name, func(t *testing.T) {
			repo.t = t
			c.opt.IgnoreWhitespace = true
			c.gitArgs = []string{"-w"}
			compareNoApply(t, repo, c)
		})
	}
}

// TestGitIgnoreWhitespaceRandom compares random whitespace and content
// edits of random texts with git diff -w.
func TestGitIgnoreWhitespaceRandom(t *testing.T) {
	repo := newGitRepo(t)
	rng := rand.New(rand.NewPCG(30, 7))
	spaced := []func(string) string{reindent, trailing, crlf, inner, indentMore, realEdit}
	for i := range 60 {
		old := randomText(rng, 10+rng.IntN(40))
		lines := splitLines(old)
		for range 1 + rng.IntN(6) {
			if len(lines) == 0 {
				break
			}
			k := rng.IntN(len(lines))
			lines[k] = spaced[rng.IntN(len(spaced))](lines[k])
		}
		c := gitCase{name: fmt.Sprint(i), old: one("r.txt", old), new: one("r.txt", mutateMaybe(rng, strings.Join(lines, "")))}
		c.opt.IgnoreWhitespace = true
		c.gitArgs = []string{"-w"}
		t.Run(c.name, func(t *testing.T) {
			repo.t = t
			compareNoApply(t, repo, c)
		})
	}
}

func mutateMaybe(rng *rand.Rand, s string) string {
	if rng.IntN(2) == 0 {
		return s
	}
	return mutate(rng, s)
}

// compareNoApply is runGitCase for a diff that does not turn the old tree
// into the new one (whitespace ignored): the patch and numstat must be
// git's, and nothing is applied.
func compareNoApply(t *testing.T, repo *gitRepo, c gitCase) {
	t.Helper()
	t1, t2 := repo.tree(c.old), repo.tree(c.new)
	renameArg := "--no-renames"
	if c.renames {
		renameArg = "-M"
	}
	want := repo.diff(false, append([]string{renameArg}, c.gitArgs...), t1, t2)
	gotNum := numstat(repo.diff(false, append([]string{renameArg, "--numstat"}, c.gitArgs...), t1, t2))
	var patch strings.Builder
	a, d := 0, 0
	for _, r := range ours(c.old, c.new, c.renames, c.opt) {
		patch.WriteString(r.Patch)
		a += r.Added
		d += r.Removed
	}
	if got := fmt.Sprintf("%d %d", a, d); got != gotNum {
		t.Errorf("numstat: ours %s, git %s", got, gotNum)
	}
	if patch.String() != want {
		t.Errorf("patch differs from git diff -w\n--- ours\n%s\n--- git\n%s", patch.String(), want)
	}
}
