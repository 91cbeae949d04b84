package session

import (
	"bytes"

	"github.com/changesetd/changesetd/changeset"
)

// The cursor rule of a draft (as Aider shows a file being rewritten): an
// agent streams the whole new text of a file, and while it does, the text
// so far replaces the original up to the last original line that still
// appears in it, in order; the rest of the original stays as it is. So a
// draft half-way through a file shows the changes made in that half and
// nothing else, instead of the second half deleted.

// draftStats is how far a draft has come.
type draftStats struct {
	Draft        bool `json:"draft"` // always true: the marker of a provisional file
	LinesWritten int  `json:"linesWritten"`
	LinesTotal   *int `json:"linesTotal,omitempty"` // the original's lines; nil for a new file
	Percent      *int `json:"percent,omitempty"`    // of the original covered; nil for a new file
}

// draftText is the provisional content of a file whose original is orig
// (exists: whether there is one) while partial, the new text so far, is
// written. Until final, partial's last line is still being written and
// does not count. ok is false when nothing of the original survives in
// partial yet: there is no telling where the draft is.
func draftText(orig []byte, exists bool, partial []byte, final bool) (text []byte, st draftStats, ok bool) {
	done := partial
	if !final {
		if i := bytes.LastIndexByte(done, '\n'); i >= 0 {
			done = done[:i+1]
		} else {
			done = nil
		}
	}
	st.Draft = true
	st.LinesWritten = countLines(done)
	origLines := splitLines(orig)
	if exists {
		n := len(origLines)
		st.LinesTotal = &n
	}
	if final {
		if exists {
			p := 100
			st.Percent = &p
		}
		return partial, st, true
	}
	if len(origLines) == 0 {
		// A new (or empty) file: all of it is being added.
		return done, st, true
	}
	k := lastSurviving(orig, done)
	if k < 0 {
		return nil, st, false
	}
	p := k * 100 / len(origLines)
	st.Percent = &p
	out := make([]byte, 0, len(done)+len(orig))
	out = append(out, done...)
	for _, l := range origLines[k:] {
		out = append(out, l...)
	}
	return out, st, true
}

// lastSurviving is how many lines of orig lie up to and including the
// last one that partial keeps (as a line diff matches them), -1 when it
// keeps none.
func lastSurviving(orig, partial []byte) int {
	if len(partial) == 0 {
		return -1
	}
	if bytes.Equal(orig, partial) {
		return len(splitLines(orig))
	}
	r := changeset.Compare(&changeset.Side{Path: "a", Content: orig}, &changeset.Side{Path: "a", Content: partial}, changeset.Options{Context: 1 << 30, NoFuncNames: true})
	last := -1
	for _, h := range r.Hunks {
		line := h.OldStart // 1-based; with every line as context, the hunk starts at the top
		if h.OldLines == 0 {
			line++
		}
		for _, l := range h.Lines {
			switch l.Op {
			case ' ':
				last = line
				line++
			case '-':
				line++
			}
		}
	}
	return last
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

func countLines(b []byte) int { return len(splitLines(b)) }
