package changeset

import (
	"strconv"
	"strings"
)

// change is one run of changed lines: a[i1:i1+n1] replaced by b[i2:i2+n2].
type change struct{ i1, i2, n1, n2 int }

// script lists the changes of d in order.
func script(d lineDiff) []change {
	var cs []change
	i, j := 0, 0
	for i < d.a.n() || j < d.b.n() {
		if d.a.changed(i) || d.b.changed(j) {
			c := change{i1: i, i2: j}
			for d.a.changed(i) {
				i++
			}
			for d.b.changed(j) {
				j++
			}
			c.n1, c.n2 = i-c.i1, j-c.i2
			cs = append(cs, c)
			continue
		}
		i++
		j++
	}
	return cs
}

// buildHunks groups the changes into hunks as git's xdl_emit_diff does:
// changes at most 2*context lines apart share a hunk.
func buildHunks(a, b []string, d lineDiff, opt Options) []Hunk {
	cs := script(d)
	ctx := opt.context()
	var hunks []Hunk
	funcPrev := -1
	var funcLine string
	for k := 0; k < len(cs); {
		first := cs[k]
		last := k
		for last+1 < len(cs) && cs[last+1].i1-(cs[last].i1+cs[last].n1) <= 2*ctx {
			last++
		}
		lc := cs[last]
		s1 := max(first.i1-ctx, 0)
		s2 := max(first.i2-ctx, 0)
		e1 := min(lc.i1+lc.n1+ctx, len(a))
		e2 := min(lc.i2+lc.n2+ctx, len(b))
		if !opt.NoFuncNames {
			if text, ok := findFuncLine(a, s1-1, funcPrev); ok {
				funcLine = text
			}
			funcPrev = s1 - 1
		}
		h := Hunk{OldLines: e1 - s1, NewLines: e2 - s2, OldStart: s1, NewStart: s2, Section: funcLine}
		if h.OldLines > 0 {
			h.OldStart++
		}
		if h.NewLines > 0 {
			h.NewStart++
		}
		h.Lines = make([]Line, 0, (e1-s1)+(e2-s2))
		for j := s2; j < first.i2; j++ {
			h.Lines = append(h.Lines, mkLine(' ', b[j]))
		}
		for c := k; c <= last; c++ {
			ch := cs[c]
			if c > k {
				prev := cs[c-1]
				for j := prev.i2 + prev.n2; j < ch.i2; j++ {
					h.Lines = append(h.Lines, mkLine(' ', b[j]))
				}
			}
			for i := ch.i1; i < ch.i1+ch.n1; i++ {
				h.Lines = append(h.Lines, mkLine('-', a[i]))
			}
			for j := ch.i2; j < ch.i2+ch.n2; j++ {
				h.Lines = append(h.Lines, mkLine('+', b[j]))
			}
		}
		for j := lc.i2 + lc.n2; j < e2; j++ {
			h.Lines = append(h.Lines, mkLine(' ', b[j]))
		}
		ownText(&h)
		hunks = append(hunks, h)
		k = last + 1
	}
	return hunks
}

// ownText gives h's lines and section text of their own, copied into one
// string: the sides' texts are whole files, and a line that pointed into
// one would keep all of it alive as long as the hunk, which the diff
// cache keeps long after the sides are let go.
func ownText(h *Hunk) {
	n := len(h.Section)
	for _, l := range h.Lines {
		n += len(l.Text)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(h.Section)
	for _, l := range h.Lines {
		b.WriteString(l.Text)
	}
	s := b.String()
	h.Section, s = s[:len(h.Section)], s[len(h.Section):]
	for i := range h.Lines {
		n := len(h.Lines[i].Text)
		h.Lines[i].Text, s = s[:n], s[n:]
	}
}

func mkLine(op byte, l string) Line {
	if strings.HasSuffix(l, "\n") {
		return Line{Op: op, Text: l[:len(l)-1]}
	}
	return Line{Op: op, Text: l, NoEOL: true}
}

// findFuncLine is git's default funcname search: walking back from start
// (exclusive limit), the first line that begins with an ASCII letter, '_'
// or '$', cut to 80 bytes and stripped of trailing whitespace.
func findFuncLine(a []string, start, limit int) (string, bool) {
	for l := start; l > limit && l >= 0 && l < len(a); l-- {
		s := a[l]
		if s == "" {
			continue
		}
		c := s[0]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$') {
			continue
		}
		s = s[:min(len(s), 80)]
		for len(s) > 0 && gitSpace(s[len(s)-1]) {
			s = s[:len(s)-1]
		}
		return s, true
	}
	return "", false
}

// writeHunkHeader writes "@@ -s,n +s,n @@ section" without the LF,
// leaving out ",1" and keeping the line under git's 128-byte buffer.
func writeHunkHeader(sb *strings.Builder, h Hunk) {
	start := sb.Len()
	sb.WriteString("@@ -")
	writeRange(sb, h.OldStart, h.OldLines)
	sb.WriteString(" +")
	writeRange(sb, h.NewStart, h.NewLines)
	sb.WriteString(" @@")
	if h.Section != "" {
		sb.WriteByte(' ')
		room := 128 - (sb.Len() - start) - 1
		sb.WriteString(h.Section[:min(len(h.Section), room)])
	}
}

func writeRange(sb *strings.Builder, start, n int) {
	var buf [20]byte
	sb.Write(strconv.AppendInt(buf[:0], int64(start), 10))
	if n != 1 {
		sb.WriteByte(',')
		sb.Write(strconv.AppendInt(buf[:0], int64(n), 10))
	}
}

const noNewline = "\\ No newline at end of file\n"

// patchText renders the whole patch of a text change, its header then its
// hunks, into one buffer sized for them: a burst renders ten thousand.
func patchText(r *Result, opt Options) string {
	var sb strings.Builder
	sb.Grow(headerSize(r, opt) + hunksSize(r, opt))
	appendHeader(&sb, r, opt)
	appendHunks(&sb, r, opt)
	return sb.String()
}

// headerSize is about the length of r's header: enough for one that
// needs no quoting and no rename lines.
func headerSize(r *Result, opt Options) int {
	n := 160 + 2*len(opt.srcPrefix()) + 2*len(opt.dstPrefix())
	if r.Old != nil {
		n += 2 * len(r.Old.Path)
	}
	if r.New != nil {
		n += 2 * len(r.New.Path)
	}
	return n
}

// hunksSize is about the length of r's ---/+++ lines and hunks.
func hunksSize(r *Result, opt Options) int {
	if len(r.Hunks) == 0 {
		return 0
	}
	n := headerSize(r, opt)
	for _, h := range r.Hunks {
		n += 32 + len(h.Section)
		for _, l := range h.Lines {
			n += len(l.Text) + 2
			if l.NoEOL {
				n += len(noNewline)
			}
		}
	}
	return n
}

// appendHunks writes the ---/+++ lines and the hunks into sb.
func appendHunks(sb *strings.Builder, r *Result, opt Options) {
	if len(r.Hunks) == 0 {
		return
	}
	sb.WriteString("--- ")
	if r.Old != nil {
		writeQuotedLine(sb, opt.srcPrefix(), r.Old.Path, opt)
	} else {
		sb.WriteString("/dev/null\n")
	}
	sb.WriteString("+++ ")
	if r.New != nil {
		writeQuotedLine(sb, opt.dstPrefix(), r.New.Path, opt)
	} else {
		sb.WriteString("/dev/null\n")
	}
	for _, h := range r.Hunks {
		writeHunkHeader(sb, h)
		sb.WriteByte('\n')
		for _, l := range h.Lines {
			sb.WriteByte(l.Op)
			sb.WriteString(l.Text)
			sb.WriteByte('\n')
			if l.NoEOL {
				sb.WriteString(noNewline)
			}
		}
	}
}

// writeQuotedLine writes the rest of a ---/+++ line: quoteTwo(prefix,
// name), a tab when that has a space (as git marks such a name's end),
// and the LF.
func writeQuotedLine(sb *strings.Builder, prefix, name string, opt Options) {
	writeQuoteTwo(sb, prefix, name, opt)
	name = strings.TrimPrefix(name, "/")
	if strings.IndexByte(prefix, ' ') >= 0 || strings.IndexByte(name, ' ') >= 0 {
		sb.WriteByte('\t')
	}
	sb.WriteByte('\n')
}

// writeHeader renders the "diff --git" line and the extended header lines
// in git's order.
func writeHeader(r *Result, opt Options) string {
	var sb strings.Builder
	sb.Grow(headerSize(r, opt))
	appendHeader(&sb, r, opt)
	return sb.String()
}

// appendHeader is writeHeader into sb.
func appendHeader(sb *strings.Builder, r *Result, opt Options) {
	old, new := r.Old, r.New
	if old == nil && new == nil {
		return
	}
	na, nb := "", ""
	if old != nil {
		na = old.Path
	}
	if new != nil {
		nb = new.Path
	}
	if na == "" {
		na = nb
	}
	if nb == "" {
		nb = na
	}
	if old != nil && new != nil && na == nb && old.mode() == new.mode() && old.oid() == new.oid() {
		return // nothing changed
	}
	sb.WriteString("diff --git ")
	writeQuoteTwo(sb, opt.srcPrefix(), na, opt)
	sb.WriteByte(' ')
	writeQuoteTwo(sb, opt.dstPrefix(), nb, opt)
	sb.WriteByte('\n')
	switch {
	case old == nil:
		sb.WriteString("new file mode " + modeString(new.mode()) + "\n")
	case new == nil:
		sb.WriteString("deleted file mode " + modeString(old.mode()) + "\n")
	default:
		if old.mode() != new.mode() {
			sb.WriteString("old mode " + modeString(old.mode()) + "\n")
			sb.WriteString("new mode " + modeString(new.mode()) + "\n")
		}
		if old.Path != new.Path {
			sb.WriteString("similarity index " + strconv.Itoa(r.Similarity) + "%\n")
			sb.WriteString("rename from " + quoteName(old.Path, opt) + "\n")
			sb.WriteString("rename to " + quoteName(new.Path, opt) + "\n")
		}
	}
	var oa, ob string
	switch {
	case old == nil:
		ob = new.oid()
		oa = zeroOID(ob)
	case new == nil:
		oa = old.oid()
		ob = zeroOID(oa)
	default:
		oa, ob = old.oid(), new.oid()
	}
	if oa != ob {
		sb.WriteString("index ")
		sb.WriteString(oa)
		sb.WriteString("..")
		sb.WriteString(ob)
		if old != nil && new != nil && old.mode() == new.mode() {
			sb.WriteByte(' ')
			sb.WriteString(modeString(old.mode()))
		}
		sb.WriteByte('\n')
	}
}

func modeString(m uint32) string {
	switch m { // the common ones, without allocating
	case 0o100644:
		return "100644"
	case 0o100755:
		return "100755"
	case 0o120000:
		return "120000"
	case 0o160000:
		return "160000"
	}
	s := strconv.FormatUint(uint64(m), 8)
	for len(s) < 6 {
		s = "0" + s
	}
	return s
}

// writeQuoteTwo writes git's quote_two: prefix and name, double-quoted
// together when the name needs quoting. One leading '/' of the name is
// dropped.
func writeQuoteTwo(sb *strings.Builder, prefix, name string, opt Options) {
	name = strings.TrimPrefix(name, "/")
	if !needsQuote(prefix, opt) && !needsQuote(name, opt) {
		sb.WriteString(prefix)
		sb.WriteString(name)
		return
	}
	sb.WriteByte('"')
	sb.WriteString(cQuote(prefix+name, opt))
	sb.WriteByte('"')
}

// quoteName is git's quote_c_style of a bare name.
func quoteName(name string, opt Options) string {
	if !needsQuote(name, opt) {
		return name
	}
	return `"` + cQuote(name, opt) + `"`
}

func needsQuote(name string, opt Options) bool {
	for i := 0; i < len(name); i++ {
		if quoteByte(name[i], opt) {
			return true
		}
	}
	return false
}

func quoteByte(c byte, opt Options) bool {
	return c < 0x20 || c == '"' || c == '\\' || c == 0x7f || (c >= 0x80 && opt.QuoteNonASCII)
}

func cQuote(name string, opt Options) string {
	var sb strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !quoteByte(c, opt) {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('\\')
		switch c {
		case '\a':
			sb.WriteByte('a')
		case '\b':
			sb.WriteByte('b')
		case '\t':
			sb.WriteByte('t')
		case '\n':
			sb.WriteByte('n')
		case '\v':
			sb.WriteByte('v')
		case '\f':
			sb.WriteByte('f')
		case '\r':
			sb.WriteByte('r')
		case '"', '\\':
			sb.WriteByte(c)
		default:
			sb.WriteByte('0' + c>>6)
			sb.WriteByte('0' + (c>>3)&7)
			sb.WriteByte('0' + c&7)
		}
	}
	return sb.String()
}
