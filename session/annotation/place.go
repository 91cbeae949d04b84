package annotation

import (
	"bytes"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
)

// MapRange says where range r of the old text lies in cur, through m. A
// range whose end is at character 0 of a later line ends at the line
// before (the usual way to select whole lines).
func MapRange(m *changeset.LineMapper, cur []byte, r protocol.TextRange) protocol.AnnotationPlace {
	first, last := r.Start.Line, r.End.Line
	wholeLines := r.End.Character == 0 && r.End.Line > r.Start.Line
	if wholeLines {
		last--
	}
	lm := m.Map(first, last)
	switch {
	case lm.Gone:
		return protocol.AnnotationPlace{Status: protocol.PlaceGone}
	case !lm.Edited && lm.First == first:
		return protocol.AnnotationPlace{Status: protocol.PlaceSame, Range: &r}
	}
	out := r
	out.Start.Line = lm.First
	out.End.Line = lm.Last
	if wholeLines {
		out.End.Line++
	}
	status := protocol.PlaceMoved
	if lm.Edited {
		status = protocol.PlaceEdited
		out.Start.Character = 0
		if !wholeLines {
			out.End.Character = lineLength(cur, lm.Last)
		}
	}
	return protocol.AnnotationPlace{Status: status, Range: &out}
}

// lineLength is the length of line n (zero-based) of b in UTF-16 code
// units, as TextPosition.character counts.
func lineLength(b []byte, n int) int {
	for ; n > 0; n-- {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return 0
		}
		b = b[i+1:]
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	u := 0
	for _, r := range string(bytes.TrimSuffix(b, []byte("\r"))) {
		u++
		if r > 0xFFFF {
			u++
		}
	}
	return u
}
