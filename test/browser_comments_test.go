package test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/changesetd/changesetd/protocol"
)

// commentOnRows selects the diff rows whose after-side lines (0-based)
// are first..last, presses c, types text and sends it with Ctrl+Enter.
func commentOnRows(b *browser, first, last int, text string) {
	b.t.Helper()
	b.waitFor(fmt.Sprintf("rows %d–%d selected", first, last), fmt.Sprintf(`(() => {
		const text = (sel) => {
			const td = document.querySelector(sel);
			return td && document.createTreeWalker(td, NodeFilter.SHOW_TEXT).nextNode();
		};
		const a = text('#diff tr.line[data-a="%d"] .code');
		const z = text('#diff tr.line[data-a="%d"] .code');
		if (!a || !z) return false;
		const r = document.createRange();
		r.setStart(a, 0);
		r.setEnd(z, Math.min(2, z.length));
		const s = document.getSelection();
		s.removeAllRanges();
		s.addRange(r);
		return !document.getElementById('range-ops').hidden;
	})()`, first, last))
	b.do(chromedp.KeyEvent("c"))
	b.waitFor("the comment box, focused", `document.activeElement && document.activeElement.matches('#diff .composer textarea')`)
	b.do(chromedp.SendKeys(`#diff .composer textarea`, text), chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
}

// TestBrowserCommentAnchors comments on lines of a file edited above
// them, in every kind of view, and checks what the comment is anchored
// to: an annotation names a turn's version of the file (or the
// baseline's) and lines of that version, so a comment on the working
// tree with no turn running goes on the baseline's lines the shown ones
// came from, one with a turn running on that turn (the working tree is
// its version), and one on a turn or a comparison on that turn's lines.
// The thread is then drawn under the lines that were selected.
func TestBrowserCommentAnchors(t *testing.T) {
	t.Parallel()
	base := pageLines(120)
	repo := gitRepo(t, map[string]string{"f.txt": base})
	d := startDaemon(t, repo)
	c := d.client(t, "ide")
	sum := onlySession(t, c)
	ann := requireAnnotationsChannel(t, c, sum)
	m := mirrorAnnotations(t, c, ann)
	b := newBrowser(t)
	fURI := "file://" + repo + "/f.txt"

	// Three lines more at the top, and line 100 (103 now) changed: new
	// lines 100–102 are the context above it, baseline lines 97–99.
	edited := "top 1\ntop 2\ntop 3\n" + strings.Replace(base, "line 100\n", "line one hundred\n", 1)
	writeFile(t, repo, "f.txt", edited)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("f.txt's diff", `document.getElementById('diff-path').textContent === 'f.txt' && !!document.querySelector('#diff tr.line.ctx[data-a="99"]')`)

	// anchored waits for the annotation with text and checks its anchor,
	// then that its thread shows under the row of after-side line row.
	anchored := func(t *testing.T, text, turnID string, want protocol.TextRange, row int) {
		t.Helper()
		st := m.Wait(text, func(st protocol.AnnotationsState) bool {
			return slices.ContainsFunc(st.Annotations, func(a protocol.Annotation) bool { return slices.Equal(entryTexts(&a), []string{text}) })
		})
		i := slices.IndexFunc(st.Annotations, func(a protocol.Annotation) bool { return slices.Equal(entryTexts(&a), []string{text}) })
		a := st.Annotations[i]
		if a.TurnID != turnID || a.Resource != fURI || a.Range == nil || *a.Range != want {
			t.Errorf("%q: turn %q resource %q range %+v, want turn %q resource %q range %+v", text, a.TurnID, a.Resource, a.Range, turnID, fURI, want)
		}
		b.waitFor("the thread under the selected lines", fmt.Sprintf(`(() => {
			const th = document.querySelector('#diff .thread[data-annotation=%s]');
			let tr = th && th.closest('tr');
			while (tr && tr.classList.contains('thread-row')) tr = tr.previousElementSibling;
			return tr && tr.dataset.a === '%d';
		})()`, js(a.ID), row))
	}
	lines := func(first, last int) protocol.TextRange {
		return protocol.TextRange{Start: protocol.TextPosition{Line: first}, End: protocol.TextPosition{Line: last + 1}}
	}

	t.Run("uncommitted, no turn: the baseline's lines", func(t *testing.T) {
		b.t, m.t = t, t
		commentOnRows(b, 99, 100, "on the working tree")
		anchored(t, "on the working tree", "baseline", lines(96, 97), 100)
	})

	t.Run("session: the baseline's lines", func(t *testing.T) {
		b.t, m.t = t, t
		b.click("Session Changes", `#catalog li[data-kind="session"]`)
		b.waitFor("the session's diff of f.txt", `document.getElementById('cs-label').textContent === 'Session Changes' && !!document.querySelector('#diff tr.line.ctx[data-a="101"]')`)
		commentOnRows(b, 101, 101, "on the session")
		anchored(t, "on the session", "baseline", lines(98, 98), 101)
	})

	d.turnCLI(t, "start", "--dir", repo, "--message", "running")
	_, active := chatTurns(t, c, sum.Resource)
	t.Run("uncommitted, a turn running: the turn's lines, as shown", func(t *testing.T) {
		b.t, m.t = t, t
		b.click("Uncommitted", `#catalog li[data-kind="uncommitted"]`)
		b.waitFor("the running turn", `!!document.querySelector('#turns li.turn.running')`)
		b.waitFor("the uncommitted diff of f.txt", `document.getElementById('cs-label').textContent === 'Uncommitted Changes' && !!document.querySelector('#diff tr.line.ctx[data-a="100"]')`)
		commentOnRows(b, 100, 101, "while a turn runs")
		anchored(t, "while a turn runs", active, lines(100, 101), 101)
	})
	// The turn puts two lines more at the top.
	writeFile(t, repo, "f.txt", "very top 1\nvery top 2\n"+edited)
	d.turnCLI(t, "end", "--dir", repo)

	t.Run("a turn: its lines, as shown", func(t *testing.T) {
		b.t, m.t = t, t
		b.click("the turn", `#turns li.turn .name`)
		b.waitFor("the turn's diff of f.txt", `document.getElementById('cs-label').textContent.includes('running') && !!document.querySelector('#diff tr.line.ctx[data-a="3"]')`)
		commentOnRows(b, 3, 4, "on the turn")
		anchored(t, "on the turn", active, lines(3, 4), 4)
	})

	// A second turn puts one line more at the top; the comparison of the
	// two turns ends at the second's version.
	second := d.turnCLI(t, "start", "--dir", repo, "--message", "second")
	writeFile(t, repo, "f.txt", "topmost\nvery top 1\nvery top 2\n"+edited)
	d.turnCLI(t, "end", "--dir", repo)
	t.Run("a comparison: the later turn's lines, as shown", func(t *testing.T) {
		b.t, m.t = t, t
		b.waitFor("two turns", `document.querySelectorAll('#turns li.turn').length === 2`)
		b.click("the first turn's tick", `#turns li.turn:nth-child(1) input`)
		b.click("the second turn's tick", `#turns li.turn:nth-child(2) input`)
		b.click("Compare", `#compare:not([disabled])`)
		b.waitFor("the comparison's diff of f.txt", `document.getElementById('cs-label').textContent.startsWith('Compare turns') && !!document.querySelector('#diff tr.line.ctx[data-a="2"]')`)
		commentOnRows(b, 1, 2, "on the comparison")
		anchored(t, "on the comparison", second, lines(1, 2), 2)
	})
}

// TestBrowserOldRange checks how the page maps lines of a diff's new side
// to its old side: through unchanged lines one to one, around added lines
// to where they were inserted.
func TestBrowserOldRange(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t)
	openBlank(t, b, d)
	// Old: a b c d e f g h. New: X a b C d e f Y Z g h (c changed,
	// X inserted at the top, Y Z inserted after f).
	patch := "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,4 +1,5 @@\n+X\n a\n b\n-c\n+C\n d\n@@ -5,3 +6,5 @@\n e\n f\n+Y\n+Z\n g\n"
	var got [][]int
	b.eval(`Promise.all([import('/assets/comments.js'), import('/assets/diff.js')]).then(([c, d]) => {
		const h = d.parsePatch(`+js(patch)+`);
		const r = (a, z) => { const x = c.oldRange(h, a, z); return [x.start.line, x.end.line]; };
		return [r(1, 2), r(0, 0), r(0, 1), r(3, 3), r(2, 4), r(7, 8), r(6, 8), r(9, 10), r(30, 30)];
	})`, &got)
	want := [][]int{
		{0, 2},   // a b: old lines 0–1
		{0, 0},   // X alone: inserted before old line 0
		{0, 1},   // X a: from the insertion to a
		{2, 3},   // C: ends on an added line, at the c it replaced
		{1, 4},   // b C d
		{6, 6},   // Y Z: inserted before g
		{5, 6},   // f Y Z: f
		{6, 8},   // g h, after the second hunk
		{27, 28}, // far below: the offset of both hunks
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("oldRange:\n got %v\nwant %v", got, want)
	}
}

// TestBrowserKeyboardLines chooses lines of the diff with the keyboard
// alone (v, Shift+↓, c) and comments on them.
func TestBrowserKeyboardLines(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": pageLines(20)})
	// Edited before the daemon starts: the baseline has these lines, so
	// the comment's lines are the ones shown.
	writeFile(t, repo, "a.txt", strings.Replace(pageLines(20), "line 10\n", "line ten\n", 1))
	d := startDaemon(t, repo)
	c := d.client(t, "ide")
	sum := onlySession(t, c)
	m := mirrorAnnotations(t, c, requireAnnotationsChannel(t, c, sum))
	b := newBrowser(t)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("a.txt's hunk", `document.querySelectorAll('#diff tr.hunk').length === 1`)
	b.do(chromedp.KeyEvent("v"))
	b.do(chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierShift)), chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierShift)))
	b.waitFor("three rows chosen, said in words", `document.querySelectorAll('#diff tr.ksel').length === 3 &&
		document.getElementById('diff-status').textContent.startsWith('Lines 7–9 chosen') && !document.getElementById('range-ops').hidden`)
	b.do(chromedp.KeyEvent("c"))
	b.waitFor("the comment box, focused", `document.activeElement && document.activeElement.matches('#diff .composer textarea')`)
	b.do(chromedp.SendKeys(`#diff .composer textarea`, "Chosen by keys."), chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	st := m.Wait("the comment", func(st protocol.AnnotationsState) bool { return len(st.Annotations) == 1 })
	if a := st.Annotations[0]; a.Range == nil || *a.Range != (protocol.TextRange{Start: protocol.TextPosition{Line: 6}, End: protocol.TextPosition{Line: 9}}) {
		t.Errorf("range %+v, want lines 6–8 (0-based, to the start of 9)", a.Range)
	}
}

// TestBrowserMarkdownText: a comment written in markdown is shown as text
// without its markup, and what markdown would not render as markup stays
// as written: code spans verbatim, underscores and stars inside words.
func TestBrowserMarkdownText(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t)
	openBlank(t, b, d)
	cases := []struct{ markdown, want string }{
		{"**Line 38** is `next`.", "Line 38 is next."},
		{"Rename `__init__.py` and `a*b*c`.", "Rename __init__.py and a*b*c."},
		{"my__private__name and snake_case_name stay", "my__private__name and snake_case_name stay"},
		{"*args and **kwargs", "*args and **kwargs"},
		{"See [the docs](https://example.com/x_y).", "See the docs (https://example.com/x_y)."},
	}
	for _, tc := range cases {
		var got string
		b.eval(`import('/assets/comments.js').then(c => c.plainText({markdown: `+js(tc.markdown)+`}))`, &got)
		if got != tc.want {
			t.Errorf("plainText(%q) = %q, want %q", tc.markdown, got, tc.want)
		}
	}
}
