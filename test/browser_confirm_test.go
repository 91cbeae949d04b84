package test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// confirmation clicks sel, waits for the confirmation and returns its
// text, leaving the dialog open.
func confirmation(b *browser, what, sel string) string {
	b.t.Helper()
	b.click(what, sel)
	b.waitFor("the confirmation of "+what, `document.getElementById('confirm').open`)
	var text string
	b.eval(`document.getElementById('confirm-text').textContent`, &text)
	return text
}

func cancelConfirmation(b *browser) {
	b.t.Helper()
	b.click("Cancel", `#confirm-cancel`)
	b.waitFor("the confirmation closed", `!document.getElementById('confirm').open`)
}

// says checks that text has every one of want and none of not.
func says(t *testing.T, what, text string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s: %q does not say %q", what, text, w)
		}
	}
	for _, n := range not {
		if strings.Contains(text, n) {
			t.Errorf("%s: %q says %q", what, text, n)
		}
	}
}

// TestBrowserConfirmationsSayWhatHappens asks for each kind of revert on
// the page and reads the confirmation: a file's revert names that file
// and no other, a hunk's Undo and Revert selected lines name the lines
// and what happens to them, and on a turn a file's revert and the rewind
// of the whole turn say different things; the note after a hunk's undo
// names the hunk, not "1 file".
func TestBrowserConfirmationsSayWhatHappens(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": pageLines(40), "c.txt": "see\n", "d.txt": "dee\n"})
	writeFile(t, repo, "a.txt", strings.Replace(strings.Replace(pageLines(40), "line 3\n", "line three\n", 1), "line 35\n", "line thirty-five\nline 35.5\n", 1))
	writeFile(t, repo, "new.txt", "one\ntwo\n")
	d := startDaemon(t, repo)
	open := func(path string) {
		t.Helper()
		b.click(path, `#files li.file[data-path=`+js(path)+`]`)
		b.waitFor(path+"'s diff", `document.getElementById('diff-path').textContent === `+js(path)+` && !!document.querySelector('#diff tr.line') && !!document.querySelector('#file-ops button[data-op="revert"]:not(:disabled)')`)
	}

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("two files", `document.querySelectorAll('#files li.file').length === 2`)

	open("a.txt")
	text := confirmation(b, "a.txt's Revert", `#file-ops button[data-op="revert"]`)
	says(t, "reverting a.txt", text, []string{"a.txt", "(+3 −2)", "last committed"}, []string{"new.txt", "Each file"})
	cancelConfirmation(b)

	open("new.txt")
	text = confirmation(b, "new.txt's Revert", `#file-ops button[data-op="revert"]`)
	says(t, "reverting new.txt", text, []string{"Delete new.txt", "removes the file"}, []string{"a.txt"})
	cancelConfirmation(b)

	open("a.txt")
	b.waitFor("the hunks' Undo", `document.querySelectorAll('#diff tr.hunk button.hunk-undo:not([hidden]):not(:disabled)').length === 2`)
	text = confirmation(b, "Undo on the second hunk", `#diff tr.hunk[data-hunk="1"] button.hunk-undo`)
	says(t, "undoing hunk 2", text, []string{"Undo hunk 2 of a.txt (lines 35–36)", "2 added lines are removed and 1 removed line is put back", "The rest of the file is left alone"}, []string{"new.txt", "Each file"})
	cancelConfirmation(b)

	// Lines 2–3 chosen with the keyboard: they touch the first hunk only.
	b.do(chromedp.KeyEvent("v"), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierShift)))
	b.waitFor("lines 2–3 chosen", `document.getElementById('diff-status').textContent.startsWith('Lines 2–3 chosen')`)
	text = confirmation(b, "Revert selected lines", `#range-revert:not(:disabled)`)
	says(t, "reverting lines 2–3", text, []string{"Revert lines 2–3 of a.txt", "hunk 1 (line 3, +1 −1)", "1 added line is removed and 1 removed line is put back"}, []string{"hunk 2", "new.txt", "Each file"})
	cancelConfirmation(b)
	b.do(chromedp.KeyEvent(kb.Escape))

	text = confirmation(b, "Undo on the second hunk", `#diff tr.hunk[data-hunk="1"] button.hunk-undo`)
	says(t, "undoing the second hunk", text, []string{"a.txt"}, []string{"Each file"})
	b.click("Confirm", `#confirm-ok`)
	b.waitFor("the note after the undo", `[...document.querySelectorAll('#toasts .toast')].some((e) => e.textContent.startsWith('Reverted'))`)
	var note string
	b.eval(`[...document.querySelectorAll('#toasts .toast')].map((e) => e.textContent).find((t) => t.startsWith('Reverted'))`, &note)
	if !strings.HasPrefix(note, "Reverted hunk 2 of a.txt.") || strings.Contains(note, "file.") {
		t.Errorf("after the hunk's undo the page says %q, want it to begin %q", note, "Reverted hunk 2 of a.txt.")
	}

	// A turn changes c.txt and d.txt.
	in, _ := json.Marshal(map[string]any{"session_id": "agent-1", "cwd": repo, "hook_event_name": "UserPromptSubmit", "prompt": "fix it"})
	d.cliOK(t, string(in), "turn", "start", "--hook", "--id", "t1")
	writeFile(t, repo, "c.txt", "sea\n")
	writeFile(t, repo, "d.txt", "dee\ndum\n")
	d.cliOK(t, string(in), "turn", "end", "--hook")
	b.click("the turn", `#turns li.turn .name`)
	b.waitFor("the turn's files", `document.getElementById('cs-label').textContent.startsWith('Turn') && document.querySelectorAll('#files li.file').length === 2`)
	open("c.txt")
	file := confirmation(b, "c.txt's Revert on the turn", `#file-ops button[data-op="revert"]:not(:disabled)`)
	says(t, "reverting c.txt on the turn", file, []string{"Revert c.txt?", "before this turn", "(+1 −1)"}, []string{"d.txt", "rewind"})
	cancelConfirmation(b)
	rewind := confirmation(b, "the turn's Revert", `#cs-ops button[data-op="revert"]:not(:disabled)`)
	says(t, "rewinding the turn", rewind, []string{"Rewind turn “fix it”", "2 files: c.txt, d.txt"}, nil)
	cancelConfirmation(b)
}
