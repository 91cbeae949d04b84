// Package attrib says who wrote each changed region of a file: an agent
// (named by its chat), the person at the keyboard ("you": a write no
// running agent reported), or nobody knows ("unknown").
//
// It is pure: the file's two sides, the agents' reports of their writes
// and the turns that ran go in; an author per line and per hunk comes
// out. It reads no file, holds no state and knows nothing of sessions.
//
// The versions of a file form a chain: the old side, then the file as it
// was when each report arrived, in order, then the new side. Each step of
// the chain has one author, and each line of the new side is credited to
// the author of the step that last put it there, as git blame does with
// commits:
//
//   - A reported write is its agent's when the content the agent says it
//     wrote is what was on disk when the report arrived. When the agent
//     says what it replaced (old and new strings), the file before its
//     write is rebuilt from that, and what changed before it is a step of
//     its own, unreported.
//   - When the report's content differs from the disk (another writer came
//     between), the agent's step ends at its content and what the disk
//     has beyond it is unreported: concurrent writers are told apart by
//     content.
//   - An unreported step is "you" when no agent whose writes go unreported
//     ran during it (every running agent reports its writes, so none of
//     them wrote it), and "unknown" otherwise. With no evidence at all
//     every step is unknown: there is no telling.
//   - What cannot be decided (a report whose agent is not named, a file
//     too large to diff, content that was not kept) is unknown, never
//     guessed.
package attrib

import (
	"bytes"
	"slices"
	"strings"
	"time"

	"github.com/changesetd/changesetd/changeset"
)

// Author is who wrote a region: You, Unknown, or an agent's name (the
// caller's: the daemon uses the agent's chat URI).
type Author = string

const (
	You     Author = "you"
	Unknown Author = "unknown"
	// base marks a line the old side already had.
	base Author = ""
)

// Replacement is one old-to-new string replacement an agent's edit tool
// made (Claude Code's Edit, Gemini CLI's replace, Copilot CLI's edit).
// All: every occurrence was replaced.
type Replacement struct {
	Old, New string
	All      bool
}

// Report is an agent's report of one write to the file.
type Report struct {
	At    time.Time
	Agent Author // "" when the report names no agent
	// Content is the file as the daemon read it when the report arrived;
	// Known false when it was not kept (too large, unreadable). Absent
	// marks a file that was not there.
	Content []byte
	Known   bool
	// Claimed is the content the agent says it wrote (a whole-file
	// write), when it said; Mismatch says the agent's checksum of its
	// content differs from the bytes read (when it gave only a checksum).
	Claimed    []byte
	HasClaimed bool
	Mismatch   bool
	// Replacements rebuild the file before the agent's write.
	Replacements []Replacement
}

// Turn is a span in which an agent ran. To zero: it still runs.
type Turn struct {
	Agent    Author
	From, To time.Time
	// Reports: the agent reports its writes (it sent a report at least
	// once); its unreported time is then nobody's but yours.
	Reports bool
}

// Input is one file's change and the evidence about it.
type Input struct {
	Old, New []byte // nil: absent on that side
	// OldAt and NewAt bound the reports that count: those after OldAt
	// (zero: all) and not after NewAt (zero: all).
	OldAt, NewAt time.Time
	Reports      []Report // in the order they arrived
	Turns        []Turn
	// Evidence: the session has some evidence of who writes (a report of
	// any agent, ever). Without it everything is Unknown.
	Evidence bool
}

// Result is who wrote what of the new side.
type Result struct {
	// Opaque: no line diff (binary or too large); Authors holds the
	// authors of the whole file.
	Opaque bool
	// lines[i] is the author of line i of the new side; base for lines
	// the old side had. gaps[i] are the authors of deletions just before
	// line i (i == len(lines): at the end).
	lines []Author
	gaps  [][]Author
	spans []span // the old side against the new, no context
	// whole are the authors of every step, for opaque files.
	whole []Author
}

type span struct{ ob, oe, nb, ne int }

// Attribute follows the chain of versions from in.Old to in.New.
func Attribute(in Input) Result {
	var reports []Report
	for _, r := range in.Reports {
		if (!in.OldAt.IsZero() && !r.At.After(in.OldAt)) || (!in.NewAt.IsZero() && r.At.After(in.NewAt)) {
			continue
		}
		reports = append(reports, r)
	}
	c := chain{in: in, cur: in.Old, at: in.OldAt}
	c.lines = make([]Author, lineCount(in.Old))
	c.gaps = make([][]Author, len(c.lines)+1)
	for _, r := range reports {
		c.report(r)
	}
	c.step(in.New, c.unreported(c.at, in.NewAt))
	res := Result{Opaque: c.opaque, whole: c.whole}
	if c.opaque {
		return res
	}
	res.lines, res.gaps = c.lines, c.gaps
	res.spans, res.Opaque = diffSpans(in.Old, in.New)
	if res.Opaque {
		res.lines, res.gaps = nil, nil
	}
	return res
}

type chain struct {
	in     Input
	cur    []byte
	at     time.Time
	lines  []Author
	gaps   [][]Author
	opaque bool
	whole  []Author
	// lost: a version in the chain was not kept; the next step cannot
	// be told apart from what came before it.
	lost bool
}

func (c *chain) report(r Report) {
	author := r.Agent
	if author == "" {
		author = Unknown
	}
	if !r.Known {
		c.lost = true
		c.at = r.At
		return
	}
	if pre, ok := rebuild(r.Content, r.Replacements); ok {
		c.step(pre, c.unreported(c.at, r.At))
		c.step(r.Content, author)
	} else if r.HasClaimed && !bytes.Equal(r.Claimed, r.Content) {
		// Someone wrote after the agent: its content is its own, the
		// rest of what the disk has is not.
		c.step(r.Claimed, author)
		c.step(r.Content, c.unreported(c.at, r.At))
	} else if r.Mismatch || len(r.Replacements) > 0 {
		// The bytes are not what the agent wrote, or its replacements
		// are not in them: there is no telling whose they are.
		c.step(r.Content, Unknown)
	} else {
		c.step(r.Content, author)
	}
	c.at = r.At
}

// unreported is the author of what changed, unreported, in (from, to].
func (c *chain) unreported(from, to time.Time) Author {
	if !c.in.Evidence {
		return Unknown
	}
	for _, t := range c.in.Turns {
		if t.Reports {
			continue
		}
		if (to.IsZero() || t.From.Before(to)) && (t.To.IsZero() || from.IsZero() || t.To.After(from)) {
			return Unknown // an agent that does not report its writes ran
		}
	}
	return You
}

// Unreported is the author of what changed, unreported, between the two
// sides: for a file no agent reported a write to.
func (in Input) Unreported() Author {
	c := chain{in: in}
	return c.unreported(in.OldAt, in.NewAt)
}

// step moves the chain to next, crediting what changed to author.
func (c *chain) step(next []byte, author Author) {
	if c.lost {
		author, c.lost = Unknown, false
	}
	if bytes.Equal(c.cur, next) && (c.cur == nil) == (next == nil) {
		return
	}
	defer func() { c.cur = next }()
	if !slices.Contains(c.whole, author) {
		c.whole = append(c.whole, author)
	}
	if c.opaque {
		return
	}
	spans, opaque := diffSpans(c.cur, next)
	if opaque {
		c.opaque = true
		return
	}
	lines := make([]Author, 0, lineCount(next))
	gaps := make([][]Author, 0, lineCount(next)+1)
	o := 0 // next old line to copy
	for _, s := range spans {
		for ; o < s.ob; o++ {
			gaps = append(gaps, c.gaps[o])
			lines = append(lines, c.lines[o])
		}
		if s.ob == s.oe { // an insertion
			for i := s.nb; i < s.ne; i++ {
				gaps = append(gaps, nil)
				lines = append(lines, author)
			}
			continue
		}
		// The deleted lines' own deletion marks go with them.
		var g []Author
		for ; o < s.oe; o++ {
			for _, a := range c.gaps[o] {
				g = addAuthor(g, a)
			}
		}
		if s.nb == s.ne { // a deletion: marked where it was
			g = addAuthor(g, author)
			for _, a := range c.gaps[o] {
				g = addAuthor(g, a)
			}
			c.gaps[o] = g
			continue
		}
		for i := s.nb; i < s.ne; i++ {
			gaps = append(gaps, g)
			g = nil
			lines = append(lines, author)
		}
	}
	for ; o < len(c.lines); o++ {
		gaps = append(gaps, c.gaps[o])
		lines = append(lines, c.lines[o])
	}
	gaps = append(gaps, c.gaps[len(c.lines)])
	c.lines, c.gaps = lines, gaps
}

func addAuthor(list []Author, a Author) []Author {
	if a == base || slices.Contains(list, a) {
		return list
	}
	return append(list, a)
}

// rebuild undoes an agent's replacements on the content after its write:
// the file as the agent found it. ok is false when there are none, or
// when one is not found exactly (the disk has changed since).
func rebuild(after []byte, reps []Replacement) ([]byte, bool) {
	if len(reps) == 0 || after == nil {
		return nil, false
	}
	s := string(after)
	for i := len(reps) - 1; i >= 0; i-- {
		r := reps[i]
		if r.New == "" || r.New == r.Old {
			return nil, false // a deletion cannot be found again
		}
		switch n := strings.Count(s, r.New); {
		case n == 0:
			return nil, false
		case r.All:
			s = strings.ReplaceAll(s, r.New, r.Old)
		case n == 1:
			s = strings.Replace(s, r.New, r.Old, 1)
		default:
			return nil, false // which occurrence is the agent's?
		}
	}
	return []byte(s), true
}

// diffSpans diffs two versions line by line, without context.
func diffSpans(a, b []byte) ([]span, bool) {
	var old, new *changeset.Side
	if a != nil {
		old = &changeset.Side{Path: "f", Content: a}
	}
	if b != nil {
		new = &changeset.Side{Path: "f", Content: b}
	}
	r := changeset.Compare(old, new, changeset.Options{Context: -1, NoFuncNames: true, MaxPatchBytes: 1})
	if r.Binary || r.TooLarge {
		return nil, true
	}
	out := make([]span, len(r.Hunks))
	for i, h := range r.Hunks {
		ob, nb := h.OldStart-1, h.NewStart-1
		if h.OldLines == 0 {
			ob = h.OldStart
		}
		if h.NewLines == 0 {
			nb = h.NewStart
		}
		out[i] = span{ob, ob + h.OldLines, nb, nb + h.NewLines}
	}
	return out, false
}

func lineCount(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// Line is the author of line i (0-based) of the new side, "" for a line
// the old side had.
func (r Result) Line(i int) Author {
	if r.Opaque || i < 0 || i >= len(r.lines) {
		return ""
	}
	return r.lines[i]
}

// Hunk returns the authors of the changes inside a hunk of the old side
// against the new, in git's "@@" numbers (1-based; a side with no lines
// names the line before it).
func (r Result) Hunk(oldStart, oldLines, newStart, newLines int) []Author {
	if r.Opaque {
		return slices.Clone(r.whole)
	}
	hob, hnb := oldStart-1, newStart-1
	if oldLines == 0 {
		hob = oldStart
	}
	if newLines == 0 {
		hnb = newStart
	}
	var out []Author
	for _, s := range r.spans {
		if s.ob < hob || s.oe > hob+oldLines || s.nb < hnb || s.ne > hnb+newLines {
			continue
		}
		out = append(out, r.spanAuthors(s)...)
	}
	return dedupe(out)
}

// File returns the authors of every change of the file.
func (r Result) File() []Author {
	if r.Opaque {
		return slices.Clone(r.whole)
	}
	var out []Author
	for _, s := range r.spans {
		out = append(out, r.spanAuthors(s)...)
	}
	return dedupe(out)
}

// Lines returns the authors of lines first..last (1-based, inclusive) of
// the new side that changed, and whether any did.
func (r Result) Lines(first, last int) []Author {
	if r.Opaque {
		return slices.Clone(r.whole)
	}
	var out []Author
	for _, s := range r.spans {
		lo, hi := s.nb, s.ne
		if lo == hi { // a deletion between lines lo and lo+1 (0-based)
			if lo >= first-1 && lo <= last {
				out = append(out, r.spanAuthors(s)...)
			}
			continue
		}
		if hi <= first-1 || lo >= last {
			continue
		}
		for i := max(lo, first-1); i < min(hi, last); i++ {
			out = append(out, orUnknown(r.lines[i]))
		}
	}
	return dedupe(out)
}

func (r Result) spanAuthors(s span) []Author {
	var out []Author
	for i := s.nb; i < s.ne; i++ {
		out = append(out, orUnknown(r.line(i)))
	}
	if s.nb == s.ne {
		g := r.gap(s.nb)
		if len(g) == 0 {
			return []Author{Unknown}
		}
		out = append(out, g...)
	}
	return out
}

func (r Result) line(i int) Author {
	if i < len(r.lines) {
		return r.lines[i]
	}
	return Unknown
}

func (r Result) gap(i int) []Author {
	if i < len(r.gaps) {
		return r.gaps[i]
	}
	return nil
}

// orUnknown: a line the diff of the two sides calls new but the chain
// says the old side had cannot be credited to anyone.
func orUnknown(a Author) Author {
	if a == base {
		return Unknown
	}
	return a
}

func dedupe(in []Author) []Author {
	var out []Author
	for _, a := range in {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// One is the author a list of authors amounts to: the only one, or ""
// when there are several (or none).
func One(authors []Author) Author {
	if len(authors) == 1 {
		return authors[0]
	}
	return ""
}
