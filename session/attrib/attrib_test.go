package attrib

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// file makes a file of n numbered lines with some replaced: over maps a
// 1-based line to its new text ("" deletes it).
func file(n int, over map[int]string) []byte {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if t, ok := over[i]; ok {
			if t != "" {
				b.WriteString(t + "\n")
			}
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return []byte(b.String())
}

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// hunks returns the authors of each change of the result, in order.
func authorsOfChanges(r Result) []string {
	var out []string
	for _, s := range r.spans {
		out = append(out, strings.Join(r.spanAuthors(s), "+"))
	}
	return out
}

func check(t *testing.T, r Result, want ...string) {
	t.Helper()
	if got := authorsOfChanges(r); !slices.Equal(got, want) {
		t.Errorf("authors of the changes = %q, want %q", got, want)
	}
}

func TestNoEvidenceIsUnknown(t *testing.T) {
	old := file(30, nil)
	new := file(30, map[int]string{3: "mine", 20: "also mine"})
	r := Attribute(Input{Old: old, New: new})
	check(t, r, Unknown, Unknown)
}

func TestWholeFileWriteIsTheAgentsAndTheRestYours(t *testing.T) {
	old := file(30, nil)
	agent := file(30, map[int]string{3: "claude"})
	new := file(30, map[int]string{3: "claude", 25: "typed later"})
	r := Attribute(Input{
		Old: old, New: new, Evidence: true,
		Reports: []Report{{At: at(2), Agent: "claude", Content: agent, Known: true, Claimed: agent, HasClaimed: true}},
		Turns:   []Turn{{Agent: "claude", From: at(1), To: at(3), Reports: true}},
	})
	check(t, r, "claude", You)
	if got := r.Hunk(3, 1, 3, 1); !slices.Equal(got, []Author{"claude"}) {
		t.Errorf("hunk at line 3: %q", got)
	}
	if got := r.Lines(25, 25); !slices.Equal(got, []Author{You}) {
		t.Errorf("line 25: %q", got)
	}
}

// The user's edit before the agent's, with no report between, is told
// apart by the agent's replacement.
func TestReplacementSeparatesAnEarlierUnreportedEdit(t *testing.T) {
	old := file(30, nil)
	user := file(30, map[int]string{5: "user typed"})
	after := file(30, map[int]string{5: "user typed", 22: "gemini"})
	r := Attribute(Input{
		Old: old, New: after, Evidence: true,
		Reports: []Report{{At: at(5), Agent: "gemini", Content: after, Known: true, Replacements: []Replacement{{Old: "line 22\n", New: "gemini\n"}}}},
		Turns:   []Turn{{Agent: "gemini", From: at(1), To: at(6), Reports: true}},
	})
	_ = user
	check(t, r, You, "gemini")
}

// Two agents write the same file at once: the first one's report arrives
// after the second one's write, and the disk has both.
func TestConcurrentReportsResolvedByContent(t *testing.T) {
	old := file(40, nil)
	a := file(40, map[int]string{4: "from A"})
	both := file(40, map[int]string{4: "from A", 30: "from B"})
	r := Attribute(Input{
		Old: old, New: both, Evidence: true,
		Reports: []Report{
			{At: at(2), Agent: "A", Content: both, Known: true, Claimed: a, HasClaimed: true},
			{At: at(3), Agent: "B", Content: both, Known: true, Replacements: []Replacement{{Old: "line 30", New: "from B"}}},
		},
		Turns: []Turn{{Agent: "A", From: at(1), Reports: true}, {Agent: "B", From: at(1), Reports: true}},
	})
	check(t, r, "A", "B")
}

// An agent that reports nothing ran meanwhile: an unreported change may
// be its, so it is unknown, not yours.
func TestSilentAgentMakesUnreportedUnknown(t *testing.T) {
	old := file(30, nil)
	agent := file(30, map[int]string{3: "claude"})
	new := file(30, map[int]string{3: "claude", 25: "someone"})
	r := Attribute(Input{
		Old: old, New: new, Evidence: true,
		Reports: []Report{{At: at(2), Agent: "claude", Content: agent, Known: true}},
		Turns: []Turn{
			{Agent: "claude", From: at(1), To: at(3), Reports: true},
			{Agent: "codex", From: at(2), To: at(9)},
		},
	})
	check(t, r, "claude", Unknown)
	// Before codex ran, the same edit is yours.
	r = Attribute(Input{
		Old: old, New: new, Evidence: true, NewAt: at(20),
		Reports: []Report{{At: at(2), Agent: "claude", Content: agent, Known: true}},
		Turns: []Turn{
			{Agent: "claude", From: at(1), To: at(3), Reports: true},
			{Agent: "codex", From: at(30), To: at(40)},
		},
	})
	check(t, r, "claude", You)
}

func TestDeletionsAndReports(t *testing.T) {
	old := file(30, nil)
	afterA := file(30, map[int]string{10: ""})
	r := Attribute(Input{
		Old: old, New: afterA, Evidence: true,
		Reports: []Report{{At: at(2), Agent: "A", Content: afterA, Known: true}},
	})
	check(t, r, "A")
	if got := r.Hunk(7, 7, 7, 6); !slices.Equal(got, []Author{"A"}) {
		t.Errorf("the deletion's hunk: %q", got)
	}
	// A mismatching checksum, an unnamed agent and a lost version are
	// unknown, never guessed.
	for name, rep := range map[string]Report{
		"mismatch": {At: at(2), Agent: "A", Content: afterA, Known: true, Mismatch: true},
		"unnamed":  {At: at(2), Content: afterA, Known: true},
		"not kept": {At: at(2), Agent: "A"},
	} {
		r := Attribute(Input{Old: old, New: afterA, Evidence: true, Reports: []Report{rep}})
		if got := authorsOfChanges(r); !slices.Equal(got, []string{Unknown}) {
			t.Errorf("%s: %q", name, got)
		}
	}
}

// Reports outside the two sides' times do not count, and a line the
// agent wrote and the user then rewrote is the user's.
func TestWindowAndOverwrite(t *testing.T) {
	old := file(20, nil)
	agent := file(20, map[int]string{8: "agent"})
	new := file(20, map[int]string{8: "user again"})
	in := Input{
		Old: old, New: new, Evidence: true, OldAt: at(5),
		Reports: []Report{{At: at(2), Agent: "A", Content: agent, Known: true}},
	}
	check(t, Attribute(in), You) // the report is before the old side
	in.OldAt = time.Time{}
	check(t, Attribute(in), You) // rewritten after the report
	in.New = agent
	check(t, Attribute(in), "A")
}

func TestThreeAuthorsInOneFile(t *testing.T) {
	old := file(60, nil)
	v1 := file(60, map[int]string{5: "claude"})
	v2 := file(60, map[int]string{5: "claude", 30: "user"})
	v3 := file(60, map[int]string{5: "claude", 30: "user", 55: "gemini"})
	r := Attribute(Input{
		Old: old, New: v3, Evidence: true,
		Reports: []Report{
			{At: at(1), Agent: "claude", Content: v1, Known: true, Replacements: []Replacement{{Old: "line 5\n", New: "claude\n"}}},
			{At: at(3), Agent: "gemini", Content: v3, Known: true, Replacements: []Replacement{{Old: "line 55\n", New: "gemini\n"}}},
		},
	})
	_ = v2
	check(t, r, "claude", You, "gemini")
	if got := r.File(); !slices.Equal(got, []Author{"claude", You, "gemini"}) {
		t.Errorf("file authors %q", got)
	}
}

func TestRebuild(t *testing.T) {
	for _, c := range []struct {
		after string
		reps  []Replacement
		want  string
		ok    bool
	}{
		{"a X c", []Replacement{{Old: "b", New: "X"}}, "a b c", true},
		{"X X", []Replacement{{Old: "b", New: "X"}}, "", false},
		{"X X", []Replacement{{Old: "b", New: "X", All: true}}, "b b", true},
		{"a c", []Replacement{{Old: "b", New: ""}}, "", false},
		{"a Y c", []Replacement{{Old: "b", New: "X"}, {Old: "X", New: "Y"}}, "a b c", true},
	} {
		got, ok := rebuild([]byte(c.after), c.reps)
		if ok != c.ok || (ok && string(got) != c.want) {
			t.Errorf("rebuild(%q, %v) = %q, %v; want %q, %v", c.after, c.reps, got, ok, c.want, c.ok)
		}
	}
}
