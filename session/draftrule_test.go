package session

import (
	"strings"
	"testing"
)

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// The cursor rule on a file rewritten with two changed blocks, with a
// tail appended, with a tail deleted, and on a file that does not exist.
func TestDraftCursorRule(t *testing.T) {
	orig := lines(10, func(i int) string { return "line " + string(rune('0'+i%10)) })
	origLines := strings.SplitAfter(orig, "\n")[:10]

	t.Run("two blocks, written past the first", func(t *testing.T) {
		// Lines 2 and 3 are rewritten, line 7 too; the agent has written
		// up to line 5 and is in the middle of line 6.
		partial := origLines[0] + "TWO\nTHREE\n" + origLines[3] + origLines[4] + "line 6 is half"
		text, st, ok := draftText([]byte(orig), true, []byte(partial), false)
		want := origLines[0] + "TWO\nTHREE\n" + strings.Join(origLines[3:], "")
		if !ok || string(text) != want {
			t.Fatalf("draft %q (%v), want %q", text, ok, want)
		}
		if st.LinesWritten != 5 || *st.LinesTotal != 10 || *st.Percent != 50 {
			t.Errorf("stats %+v (total %d, percent %d)", st, *st.LinesTotal, *st.Percent)
		}
		// Further on, past the second block: both show.
		partial = origLines[0] + "TWO\nTHREE\n" + strings.Join(origLines[3:6], "") + "SEVEN\n" + origLines[7]
		text, st, _ = draftText([]byte(orig), true, []byte(partial), false)
		want = origLines[0] + "TWO\nTHREE\n" + strings.Join(origLines[3:6], "") + "SEVEN\n" + strings.Join(origLines[7:], "")
		if string(text) != want || *st.Percent != 80 {
			t.Errorf("past the second block: %q (%d%%), want %q", text, *st.Percent, want)
		}
	})
	t.Run("appended tail", func(t *testing.T) {
		partial := orig + "eleven\ntwel"
		text, st, ok := draftText([]byte(orig), true, []byte(partial), false)
		if !ok || string(text) != orig+"eleven\n" || *st.Percent != 100 || st.LinesWritten != 11 {
			t.Errorf("appended: %q %+v", text, st)
		}
		text, _, _ = draftText([]byte(orig), true, []byte(orig+"eleven\ntwelve\n"), true)
		if string(text) != orig+"eleven\ntwelve\n" {
			t.Errorf("appended, final: %q", text)
		}
	})
	t.Run("deleted tail", func(t *testing.T) {
		// Until final the rest of the original stays: a tail not written
		// yet cannot be told from a tail deleted.
		partial := strings.Join(origLines[:4], "")
		text, st, ok := draftText([]byte(orig), true, []byte(partial), false)
		if !ok || string(text) != orig || *st.Percent != 40 {
			t.Errorf("before final: %q %+v", text, st)
		}
		text, st, _ = draftText([]byte(orig), true, []byte(partial), true)
		if string(text) != partial || *st.Percent != 100 || st.LinesWritten != 4 {
			t.Errorf("final: %q %+v", text, st)
		}
	})
	t.Run("nothing survives yet", func(t *testing.T) {
		if _, _, ok := draftText([]byte(orig), true, []byte("all new\nand"), false); ok {
			t.Error("a draft sharing no line with the original was placed")
		}
		if _, _, ok := draftText([]byte(orig), true, []byte("half a li"), false); ok {
			t.Error("a draft without one whole line was placed")
		}
	})
	t.Run("non-existent file", func(t *testing.T) {
		text, st, ok := draftText(nil, false, []byte("package a\n\nfunc F() {\n\tret"), false)
		if !ok || string(text) != "package a\n\nfunc F() {\n" || st.LinesWritten != 3 || st.LinesTotal != nil || st.Percent != nil {
			t.Errorf("new file: %q %+v", text, st)
		}
	})
}
