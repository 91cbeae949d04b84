package changeset

// LineMap says where a range of lines of an old text lies in a new one.
type LineMap struct {
	// First and Last are the zero-based lines of the new text the range
	// occupies now: where its unchanged lines moved to, widened to the
	// lines that replaced its changed ones.
	First, Last int
	// Edited is set when some lines of the range were changed or deleted.
	Edited bool
	// Gone is set when every line of the range was deleted and nothing
	// replaced them; First and Last are then meaningless.
	Gone bool
}

// LineMapper maps line ranges of one old text to one new text; the diff is
// computed once, for any number of ranges.
type LineMapper struct {
	spans  []span
	n      int  // lines of old
	opaque bool // binary or too large: no line diff
}

// span is one change with zero context: old lines [ob, oe) replaced by new
// lines [nb, ne).
type span struct{ ob, oe, nb, ne int }

// NewLineMapper diffs old and new (the same diff Compare computes).
func NewLineMapper(old, new []byte) *LineMapper {
	r := Compare(&Side{Path: "a", Content: old}, &Side{Path: "a", Content: new}, Options{Context: -1, NoFuncNames: true})
	lm := &LineMapper{n: lineCount(old), opaque: r.TooLarge || r.Binary}
	lm.spans = make([]span, len(r.Hunks))
	for i, h := range r.Hunks {
		ob, nb := h.OldStart-1, h.NewStart-1
		if h.OldLines == 0 {
			ob = h.OldStart // an insertion after line OldStart
		}
		if h.NewLines == 0 {
			nb = h.NewStart
		}
		lm.spans[i] = span{ob, ob + h.OldLines, nb, nb + h.NewLines}
	}
	return lm
}

// Map maps the zero-based lines first..last of the old text. Lines past
// its end are taken as unchanged lines after it.
func (m *LineMapper) Map(first, last int) LineMap {
	if last < first {
		last = first
	}
	if m.opaque {
		return LineMap{First: first, Last: last, Edited: true}
	}
	spans := m.spans
	if last >= m.n {
		last = max(first, m.n-1)
	}
	lm := LineMap{First: -1, Last: -1}
	add := func(a, b int) { // new lines [a, b]
		if lm.First < 0 || a < lm.First {
			lm.First = a
		}
		if b > lm.Last {
			lm.Last = b
		}
	}
	delta, h := 0, 0
	for l := first; l <= last; l++ {
		for h < len(spans) && spans[h].oe <= l && !(spans[h].ob == spans[h].oe && spans[h].ob == l) {
			delta += (spans[h].ne - spans[h].nb) - (spans[h].oe - spans[h].ob)
			h++
		}
		// An insertion right before line l shifts it; inside the range it
		// is an edit of the range.
		for h < len(spans) && spans[h].ob == spans[h].oe && spans[h].ob == l {
			delta += spans[h].ne - spans[h].nb
			if l > first {
				lm.Edited = true
			}
			h++
		}
		if h < len(spans) && spans[h].ob <= l && l < spans[h].oe {
			lm.Edited = true
			if s := spans[h]; s.ne > s.nb {
				add(s.nb, s.ne-1)
			}
			continue
		}
		add(l+delta, l+delta)
	}
	if lm.First < 0 {
		return LineMap{Edited: true, Gone: true}
	}
	return lm
}

// lineCount is the number of lines of b, a last line without LF counted.
func lineCount(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}
