package annotation

import (
	"fmt"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
)

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// A range selected on a version the file no longer has is carried to the
// lines the person selected, or refused when they are gone, were edited
// or the shown version cannot be read; a file still at the shown version
// keeps the range as sent.
func TestRebind(t *testing.T) {
	shownText := numbered(1, 20)
	shown := Shown{OID: changeset.BlobOID([]byte(shownText)), Content: []byte(shownText), Readable: true}
	sel := rng(9, 0, 12, 0) // lines 10–12 as shown, whole lines
	inserted := "new a\nnew b\nnew c\nnew d\nnew e\n" + shownText
	for _, c := range []struct {
		name   string
		shown  Shown
		cur    string
		want   protocol.TextRange
		reason string
	}{
		{"unchanged", shown, shownText, sel, ""},
		{"unchanged, unreadable", Shown{OID: shown.OID}, shownText, sel, ""},
		{"unchanged, CRLF on disk", Shown{OID: shown.OID}, strings.ReplaceAll(shownText, "\n", "\r\n"), sel, ""},
		{"five lines inserted above", shown, inserted, rng(14, 0, 17, 0), ""},
		{"lines below changed", shown, numbered(1, 15) + "tail\n", sel, ""},
		{"lines deleted", shown, numbered(1, 9) + numbered(13, 20), sel, "lines 10–12 as shown were deleted since"},
		{"a line edited", shown, numbered(1, 10) + "LINE 11\n" + numbered(12, 20), sel, "lines 10–12 as shown were edited since"},
		{"shown version unreadable", Shown{OID: shown.OID}, inserted, sel, "cannot be read to find lines 10–12"},
		{"shown without the file", Shown{}, inserted, sel, "the version shown had no such file"},
		{"binary now", shown, "\x00" + inserted, sel, "is binary"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, reason := Rebind(sel, c.shown, []byte(c.cur))
			switch {
			case c.reason == "" && reason != "":
				t.Errorf("refused: %s", reason)
			case c.reason != "" && !strings.Contains(reason, c.reason):
				t.Errorf("reason %q, want it to say %q", reason, c.reason)
			case c.reason == "" && got != c.want:
				t.Errorf("range %+v, want %+v", got, c.want)
			}
			if reason != "" && !strings.Contains(reason, "changed since it was shown") {
				t.Errorf("reason %q does not say the file changed since it was shown", reason)
			}
		})
	}
	// A partial selection keeps its characters when its lines moved.
	if got, reason := Rebind(rng(9, 2, 9, 6), shown, []byte(inserted)); reason != "" || got != rng(14, 2, 14, 6) {
		t.Errorf("a partial selection moved to %+v (%s), want %+v", got, reason, rng(14, 2, 14, 6))
	}
}
