package changeset

import (
	"errors"
	"fmt"
	"strings"
)

// ErrHunkMismatch reports hunks that do not fit the content they are
// applied to.
var ErrHunkMismatch = errors.New("changeset: hunk does not match content")

// Apply applies hunks to old, strictly: every context and removed line
// must match at the hunk's position, including a missing final newline.
// Apply(old, Compare(old, new).Hunks) returns new.
func Apply(old []byte, hunks []Hunk) ([]byte, error) {
	a := splitLines(string(old))
	var out strings.Builder
	out.Grow(len(old))
	pos := 0 // next line of a to copy
	for k, h := range hunks {
		at := h.OldStart - 1
		if h.OldLines == 0 {
			at = h.OldStart
		}
		if at < pos || at > len(a) {
			return nil, fmt.Errorf("%w: hunk %d starts at old line %d", ErrHunkMismatch, k+1, h.OldStart)
		}
		for ; pos < at; pos++ {
			out.WriteString(a[pos])
		}
		nOld, nNew := 0, 0
		for _, l := range h.Lines {
			text := l.Text
			if !l.NoEOL {
				text += "\n"
			}
			if l.Op == ' ' || l.Op == '-' {
				if pos >= len(a) || a[pos] != text {
					return nil, fmt.Errorf("%w: hunk %d, old line %d", ErrHunkMismatch, k+1, pos+1)
				}
				pos++
				nOld++
			}
			if l.Op == ' ' || l.Op == '+' {
				out.WriteString(text)
				nNew++
			}
			if l.Op != ' ' && l.Op != '-' && l.Op != '+' {
				return nil, fmt.Errorf("%w: hunk %d has op %q", ErrHunkMismatch, k+1, l.Op)
			}
		}
		if nOld != h.OldLines || nNew != h.NewLines {
			return nil, fmt.Errorf("%w: hunk %d counts -%d +%d, header says -%d +%d", ErrHunkMismatch, k+1, nOld, nNew, h.OldLines, h.NewLines)
		}
	}
	for ; pos < len(a); pos++ {
		out.WriteString(a[pos])
	}
	return []byte(out.String()), nil
}
