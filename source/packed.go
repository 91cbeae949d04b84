package source

import (
	"strings"

	"github.com/changesetd/changesetd/changeset"
)

// A diff result kept between computations (the diff cache, the
// last-known view) holds its hunks' lines for as long as it is kept:
// one slice per hunk and a string per line, each pointing into the
// content the side was read into, so a kept result kept both sides'
// content alive and gave the collector a pointer per line to trace on
// every cycle. A packed result holds the same in one string and two
// slices without pointers; unpacking it gives the lines back as
// substrings of that string.

// packed is a Result as it is kept: the Result without its hunks, and
// the hunks' sections and line texts one after the other in text, the
// hunks and lines as offsets into it.
type packed struct {
	r     changeset.Result // Hunks nil
	text  string
	hunks []packedHunk
	lines []packedLine
}

type packedHunk struct {
	oldStart, oldLines, newStart, newLines int
	section                                int // end of the section in text
	lines                                  int // end of the hunk's lines in lines
}

type packedLine struct {
	end   int // in text
	op    byte
	noEOL bool
}

// pack returns r packed. r's hunks are not modified.
func pack(r changeset.Result) packed {
	p := packed{r: r}
	p.r.Hunks = nil
	if len(r.Hunks) == 0 {
		return p
	}
	n, nl := 0, 0
	for _, h := range r.Hunks {
		n += len(h.Section)
		nl += len(h.Lines)
		for _, l := range h.Lines {
			n += len(l.Text)
		}
	}
	var b strings.Builder
	b.Grow(n)
	p.hunks = make([]packedHunk, 0, len(r.Hunks))
	p.lines = make([]packedLine, 0, nl)
	for _, h := range r.Hunks {
		b.WriteString(h.Section)
		section := b.Len()
		for _, l := range h.Lines {
			b.WriteString(l.Text)
			p.lines = append(p.lines, packedLine{end: b.Len(), op: l.Op, noEOL: l.NoEOL})
		}
		p.hunks = append(p.hunks, packedHunk{oldStart: h.OldStart, oldLines: h.OldLines, newStart: h.NewStart, newLines: h.NewLines, section: section, lines: len(p.lines)})
	}
	p.text = b.String()
	return p
}

// result is the Result p was packed from, its lines' texts substrings of
// p's text. Its sides are p's own: callers that change them copy them.
func (p *packed) result() changeset.Result {
	r := p.r
	if len(p.hunks) == 0 {
		return r
	}
	r.Hunks = make([]changeset.Hunk, len(p.hunks))
	lines := make([]changeset.Line, len(p.lines))
	at, li := 0, 0
	for i, ph := range p.hunks {
		h := &r.Hunks[i]
		h.OldStart, h.OldLines, h.NewStart, h.NewLines = ph.oldStart, ph.oldLines, ph.newStart, ph.newLines
		h.Section = p.text[at:ph.section]
		at = ph.section
		first := li
		for ; li < ph.lines; li++ {
			pl := p.lines[li]
			lines[li] = changeset.Line{Op: pl.op, Text: p.text[at:pl.end], NoEOL: pl.noEOL}
			at = pl.end
		}
		h.Lines = lines[first:li:li]
	}
	return r
}

// bytes estimates what p holds in memory, as resultBytes does for a
// Result.
func (p *packed) bytes() int64 {
	return int64(len(p.r.Patch)+len(p.text)) + 256 + int64(len(p.hunks))*48 + int64(len(p.lines))*16
}
