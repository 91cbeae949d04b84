package changeset

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/diff"
)

// xfile is one side of a line diff: the lines, their interned ids, and
// git's "changed" flags with a false sentinel on each end (rchg[i+1] is
// line i).
type xfile struct {
	lines []string
	ids   []int32
	rchg  []bool
}

func (f *xfile) n() int             { return len(f.lines) }
func (f *xfile) changed(i int) bool { return f.rchg[i+1] }
func (f *xfile) set(i int, v bool)  { f.rchg[i+1] = v }
func (f *xfile) same(i, j int) bool { return f.ids[i] == f.ids[j] }
func newXfile(lines []string) *xfile {
	return &xfile{lines: lines, ids: make([]int32, len(lines)), rchg: make([]bool, len(lines)+2)}
}
func (f *xfile) markAll(from, to int) {
	for i := from; i < to; i++ {
		f.set(i, true)
	}
}

// lineDiff is the outcome of diffLines.
type lineDiff struct {
	a, b *xfile
	// ka and kb are the lines as they are compared when whitespace is
	// ignored (wsKey), nil when lines are compared as they are.
	ka, kb     []string
	fallback   bool // the anchored diff was used, not git's
	degenerate bool // the fallback replaced everything although lines are shared
}

// pooledIntern bounds the pairs of files whose line-interning map is
// reused: most files of a burst are small, and a map for each was a third
// of the bytes a diff allocated. A bigger pair's map is not kept, so a
// pooled map's size (which clearing it costs) stays that of small files.
const pooledIntern = 1024

var internMaps = sync.Pool{New: func() any { return map[string]int32{} }}

// internMap is an empty map for interning n lines.
func internMap(n int) map[string]int32 {
	if n > pooledIntern {
		return make(map[string]int32, n)
	}
	return internMaps.Get().(map[string]int32)
}

// putInternMap gives back a map internMap returned for n lines.
func putInternMap(m map[string]int32, n int) {
	if n > pooledIntern {
		return
	}
	clear(m)
	internMaps.Put(m)
}

// diffLines marks the changed lines of a and b as git's xdiff does (see
// xdiff.go), then slides the changes as git does. When the budget runs
// out, or the changed region is huge, go-internal's anchored diff marks
// them instead. With ignoreWS, lines that differ only in whitespace are
// the same line (git diff -w): they are compared by wsKey, while the
// indent heuristic still measures the lines as they are, as git's does.
func diffLines(a, b []string, budget time.Duration, ignoreWS bool) lineDiff {
	d := lineDiff{a: newXfile(a), b: newXfile(b)}
	if ignoreWS {
		d.ka, d.kb = wsKeys(a), wsKeys(b)
	}
	intern := internMap(len(a) + len(b))
	defer putInternMap(intern, len(a)+len(b))
	for k, f := range []*xfile{d.a, d.b} {
		keys := [][]string{d.ka, d.kb}[k]
		for i, l := range f.lines {
			if keys != nil {
				l = keys[i]
			}
			id, ok := intern[l]
			if !ok {
				id = int32(len(intern))
				intern[l] = id
			}
			f.ids[i] = id
		}
	}
	na, nb := len(a), len(b)
	p := 0
	for p < na && p < nb && d.a.ids[p] == d.b.ids[p] {
		p++
	}
	s := 0
	for s < na-p && s < nb-p && d.a.ids[na-1-s] == d.b.ids[nb-1-s] {
		s++
	}
	ea, eb := na-s, nb-s
	switch {
	case p == ea || p == eb:
		d.a.markAll(p, ea)
		d.b.markAll(p, eb)
	case ea-p > anchoredOnlyLines || eb-p > anchoredOnlyLines:
		d.anchored(p, ea, eb)
	default:
		if !d.xdiff(p, ea, eb, budgetSteps(budget)) {
			d.anchored(p, ea, eb)
		}
	}
	compact(d.a, d.b)
	compact(d.b, d.a)
	return d
}

// anchored runs go-internal's anchored diff on a[p:ea] and b[p:eb] and
// reads the changed lines back from its unified output.
func (d *lineDiff) anchored(p, ea, eb int) {
	d.fallback = true
	for i := p; i < ea; i++ {
		d.a.set(i, false)
	}
	for j := p; j < eb; j++ {
		d.b.set(j, false)
	}
	la, lb := d.a.lines, d.b.lines
	if d.ka != nil {
		la, lb = d.ka, d.kb
	}
	out := string(diff.Diff("a", []byte(strings.Join(la[p:ea], "")), "b", []byte(strings.Join(lb[p:eb], ""))))
	// Skip the "diff a b", "--- a" and "+++ b" header lines.
	for range 3 {
		out = out[strings.IndexByte(out, '\n')+1:]
	}
	i, j := p, p
	for len(out) > 0 {
		k := strings.IndexByte(out, '\n')
		if k < 0 {
			k = len(out)
		}
		l := out[:k]
		out = out[min(k+1, len(out)):]
		if l == "" {
			continue
		}
		switch l[0] {
		case '@':
			// "@@ -x,n +y,m @@"; an empty side gives the 0-based start.
			f := strings.Fields(l)
			i = p + hunkStart(f[1][1:])
			j = p + hunkStart(f[2][1:])
		case ' ':
			i++
			j++
		case '-':
			d.a.set(i, true)
			i++
		case '+':
			d.b.set(j, true)
			j++
		}
	}
	// A whole replacement of texts that share lines is not a diff anyone
	// should publish counts for.
	all := true
	for i := p; i < ea && all; i++ {
		all = d.a.changed(i)
	}
	for j := p; j < eb && all; j++ {
		all = d.b.changed(j)
	}
	if all {
		seen := make(map[int32]bool, ea-p)
		for i := p; i < ea; i++ {
			seen[d.a.ids[i]] = true
		}
		for j := p; j < eb; j++ {
			if seen[d.b.ids[j]] {
				d.degenerate = true
				break
			}
		}
	}
}

// wsKeys returns each line without its whitespace (git's space, tab, CR
// and LF), ended by one LF: two lines are the same for git diff -w
// exactly when their keys are equal. The LF keeps a key a line for the
// anchored diff.
func wsKeys(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		var sb strings.Builder
		sb.Grow(len(l))
		for j := 0; j < len(l); j++ {
			if !gitSpace(l[j]) {
				sb.WriteByte(l[j])
			}
		}
		sb.WriteByte('\n')
		out[i] = sb.String()
	}
	return out
}

// hunkStart turns "x,n" of go-internal's header into a 0-based line index.
func hunkStart(s string) int {
	x, n := s, "1"
	if c := strings.IndexByte(s, ','); c >= 0 {
		x, n = s[:c], s[c+1:]
	}
	v, _ := strconv.Atoi(x)
	if n != "0" {
		v--
	}
	return v
}

// A group is a run [start, end) of changed lines; start == end is an
// empty group between two unchanged lines.
type group struct{ start, end int }

func groupInit(f *xfile) group {
	g := group{}
	for f.changed(g.end) {
		g.end++
	}
	return g
}

func groupNext(f *xfile, g *group) bool {
	if g.end == f.n() {
		return false
	}
	g.start = g.end + 1
	g.end = g.start
	for f.changed(g.end) {
		g.end++
	}
	return true
}

func groupPrevious(f *xfile, g *group) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	g.start = g.end
	for f.changed(g.start - 1) {
		g.start--
	}
	return true
}

func groupSlideDown(f *xfile, g *group) bool {
	if g.end < f.n() && f.same(g.start, g.end) {
		f.set(g.start, false)
		f.set(g.end, true)
		g.start++
		g.end++
		for f.changed(g.end) {
			g.end++
		}
		return true
	}
	return false
}

func groupSlideUp(f *xfile, g *group) bool {
	if g.start > 0 && f.same(g.start-1, g.end-1) {
		g.start--
		g.end--
		f.set(g.start, true)
		f.set(g.end, false)
		for f.changed(g.start - 1) {
			g.start--
		}
		return true
	}
	return false
}

// compact slides the change groups of f as git's xdl_change_compact does
// with the indent heuristic (git's default): merge groups that can touch,
// align with a change in the other file when possible, otherwise place
// the group where the indentation makes the best split.
func compact(f, o *xfile) {
	g := groupInit(f)
	og := groupInit(o)
	for {
		if g.end != g.start {
			var groupsize, earliestEnd, endMatchingOther int
			for {
				groupsize = g.end - g.start
				endMatchingOther = -1
				for groupSlideUp(f, &g) {
					if !groupPrevious(o, &og) {
						panic("changeset: group sync broken sliding up")
					}
				}
				earliestEnd = g.end
				if og.end > og.start {
					endMatchingOther = g.end
				}
				for groupSlideDown(f, &g) {
					if !groupNext(o, &og) {
						panic("changeset: group sync broken sliding down")
					}
					if og.end > og.start {
						endMatchingOther = g.end
					}
				}
				if groupsize == g.end-g.start {
					break
				}
			}
			switch {
			case g.end == earliestEnd:
			case endMatchingOther != -1:
				for og.end == og.start {
					if !groupSlideUp(f, &g) {
						panic("changeset: match disappeared")
					}
					if !groupPrevious(o, &og) {
						panic("changeset: group sync broken sliding to match")
					}
				}
			default:
				shift := earliestEnd
				if g.end-groupsize-1 > shift {
					shift = g.end - groupsize - 1
				}
				if g.end-indentMaxSliding > shift {
					shift = g.end - indentMaxSliding
				}
				bestShift := -1
				var best splitScore
				for ; shift <= g.end; shift++ {
					var sc splitScore
					sc.add(measureSplit(f, shift))
					sc.add(measureSplit(f, shift-groupsize))
					if bestShift == -1 || sc.cmp(best) <= 0 {
						best = sc
						bestShift = shift
					}
				}
				for g.end > bestShift {
					if !groupSlideUp(f, &g) {
						panic("changeset: best shift unreached")
					}
					if !groupPrevious(o, &og) {
						panic("changeset: group sync broken sliding to blank line")
					}
				}
			}
		}
		if !groupNext(f, &g) {
			break
		}
		if !groupNext(o, &og) {
			panic("changeset: group sync broken moving to next group")
		}
	}
}

// Indent heuristic constants, as tuned in git's xdiff/xdiffi.c.
const (
	maxIndent                       = 200
	maxBlanks                       = 20
	startOfFilePenalty              = 1
	endOfFilePenalty                = 21
	totalBlankWeight                = -30
	postBlankWeight                 = 6
	relativeIndentPenalty           = -4
	relativeIndentWithBlankPenalty  = 10
	relativeOutdentPenalty          = 24
	relativeOutdentWithBlankPenalty = 17
	relativeDedentPenalty           = 23
	relativeDedentWithBlankPenalty  = 17
	indentWeight                    = 60
	indentMaxSliding                = 100
)

// gitSpace is git's isspace: only space, TAB, LF and CR.
func gitSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// indentOf is the indentation width of a line, or -1 if it is blank.
func indentOf(line string) int {
	ret := 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		if !gitSpace(c) {
			return ret
		}
		switch c {
		case ' ':
			ret++
		case '\t':
			ret += 8 - ret%8
		}
		if ret >= maxIndent {
			return maxIndent
		}
	}
	return -1
}

type splitMeasure struct {
	endOfFile  bool
	indent     int
	preBlank   int
	preIndent  int
	postBlank  int
	postIndent int
}

func measureSplit(f *xfile, split int) splitMeasure {
	var m splitMeasure
	if split >= f.n() {
		m.endOfFile = true
		m.indent = -1
	} else {
		m.indent = indentOf(f.lines[split])
	}
	m.preIndent = -1
	for i := split - 1; i >= 0; i-- {
		m.preIndent = indentOf(f.lines[i])
		if m.preIndent != -1 {
			break
		}
		m.preBlank++
		if m.preBlank == maxBlanks {
			m.preIndent = 0
			break
		}
	}
	m.postIndent = -1
	for i := split + 1; i < f.n(); i++ {
		m.postIndent = indentOf(f.lines[i])
		if m.postIndent != -1 {
			break
		}
		m.postBlank++
		if m.postBlank == maxBlanks {
			m.postIndent = 0
			break
		}
	}
	return m
}

type splitScore struct{ effectiveIndent, penalty int }

func (s *splitScore) add(m splitMeasure) {
	if m.preIndent == -1 && m.preBlank == 0 {
		s.penalty += startOfFilePenalty
	}
	if m.endOfFile {
		s.penalty += endOfFilePenalty
	}
	postBlank := 0
	if m.indent == -1 {
		postBlank = 1 + m.postBlank
	}
	totalBlank := m.preBlank + postBlank
	s.penalty += totalBlankWeight * totalBlank
	s.penalty += postBlankWeight * postBlank
	indent := m.indent
	if indent == -1 {
		indent = m.postIndent
	}
	anyBlanks := totalBlank != 0
	s.effectiveIndent += indent
	switch {
	case indent == -1, m.preIndent == -1, indent == m.preIndent:
	case indent > m.preIndent:
		if anyBlanks {
			s.penalty += relativeIndentWithBlankPenalty
		} else {
			s.penalty += relativeIndentPenalty
		}
	case m.postIndent != -1 && m.postIndent > indent:
		if anyBlanks {
			s.penalty += relativeOutdentWithBlankPenalty
		} else {
			s.penalty += relativeOutdentPenalty
		}
	default:
		if anyBlanks {
			s.penalty += relativeDedentWithBlankPenalty
		} else {
			s.penalty += relativeDedentPenalty
		}
	}
}

func (s splitScore) cmp(o splitScore) int {
	c := 0
	switch {
	case s.effectiveIndent > o.effectiveIndent:
		c = 1
	case s.effectiveIndent < o.effectiveIndent:
		c = -1
	}
	return indentWeight*c + (s.penalty - o.penalty)
}
