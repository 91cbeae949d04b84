package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// dragRows selects the diff rows whose after-side lines (0-based) are
// first..last with the mouse, as a person does: the row to end on is
// aimed at where it is on screen before the button goes down, then the
// pointer moves there in steps with the button held and is released.
// The page must not move the rows meanwhile.
func dragRows(b *browser, first, last int) {
	b.t.Helper()
	var pos []float64
	b.waitFor(fmt.Sprintf("rows %d–%d on screen", first, last), fmt.Sprintf(`(() => {
		const s = document.querySelector('#diff tr.line[data-a="%d"] .code');
		const e = document.querySelector('#diff tr.line[data-a="%d"] .code');
		if (!s || !e) return false;
		s.scrollIntoView({ block: 'center' });
		return true;
	})()`, first, last))
	b.eval(fmt.Sprintf(`(() => {
		const r = (a) => document.querySelector('#diff tr.line[data-a="' + a + '"] .code').getBoundingClientRect();
		const s = r(%d), e = r(%d);
		return [s.left + 1, s.top + s.height / 2, e.left + 12, e.top + e.height / 2];
	})()`, first, last), &pos)
	x0, y0, x1, y1 := pos[0], pos[1], pos[2], pos[3]
	held := func(p *input.DispatchMouseEventParams) {
		p.Button = input.MouseButtonLeft
		p.Buttons = 1
	}
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.MouseEvent(chromedp.MouseMoved, x0, y0),
		chromedp.MouseEvent(chromedp.MousePressed, x0, y0, held, chromedp.ClickCount(1)),
	}
	for i := 1; i <= 6; i++ {
		f := float64(i) / 6
		steps = append(steps, chromedp.MouseEvent(chromedp.MouseMoved, x0+(x1-x0)*f, y0+(y1-y0)*f, held))
	}
	steps = append(steps, chromedp.MouseEvent(chromedp.MouseReleased, x1, y1, held, chromedp.ClickCount(1)))
	b.do(steps...)
	b.waitFor("the selection's buttons", `!document.getElementById('range-ops').hidden`)
}

// keyRows chooses the diff rows first..last (after-side lines, 0-based)
// with the keyboard: v starts at the current hunk's first row, ↓ moves,
// Shift+↓ extends.
func keyRows(b *browser, first, last int) {
	b.t.Helper()
	b.do(chromedp.KeyEvent("v"))
	var at int
	b.eval(`Number(document.querySelector('#diff tr.ksel').dataset.a)`, &at)
	if at > first {
		b.t.Fatalf("v chose row %d, below row %d", at, first)
	}
	for ; at < first; at++ {
		b.do(chromedp.KeyEvent(kb.ArrowDown))
	}
	for ; at < last; at++ {
		b.do(chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierShift)))
	}
	b.waitFor(fmt.Sprintf("rows %d–%d chosen", first, last), fmt.Sprintf(`(() => {
		const a = [...document.querySelectorAll('#diff tr.ksel')].map((r) => Number(r.dataset.a));
		return a.length === %d && a[0] === %d && a[a.length - 1] === %d;
	})()`, last-first+1, first, last))
}

// comment presses c on the lines selected and sends text.
func comment(b *browser, text string) {
	b.t.Helper()
	b.do(chromedp.KeyEvent("c"))
	b.waitFor("the comment box, focused", `document.activeElement && document.activeElement.matches('#diff .composer textarea')`)
	b.do(chromedp.SendKeys(`#diff .composer textarea`, text), chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	b.waitFor("the thread", fmt.Sprintf(`[...document.querySelectorAll('#diff .thread .etext')].some((e) => e.textContent === %s) && !document.querySelector('#diff .thread.pending')`, js(text)))
}

// feedbackHeadings maps each comment's text to the heading the agent
// reads above it ("`f.txt`, lines 3-4", with "(moved from …)" or
// "(changed since)" after it when so).
func feedbackHeadings(out string) map[string]string {
	got := map[string]string{}
	for _, sec := range strings.Split(out, "\n### ")[1:] {
		head, body, _ := strings.Cut(sec, "\n")
		for _, l := range strings.Split(body, "\n") {
			if _, text, ok := strings.Cut(l, "**Reviewer:** "); ok {
				got[text] = head
			}
		}
	}
	return got
}

// TestBrowserCommentsReachTheAgent selects lines with the mouse and with
// the keyboard — added, unchanged and around removed ones — on the
// uncommitted view with no turn running, on a turn and on a comparison
// of turns, comments on them, and checks the lines the agent is told
// about by "changesetd turn start --hook --feedback": the lines that
// were selected, as the file is now.
func TestBrowserCommentsReachTheAgent(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"f.txt": pageLines(40), "g.txt": pageLines(30)})
	d := startDaemon(t, repo)
	c := d.client(t, "ide")
	sum := onlySession(t, c)
	requireAnnotationsChannel(t, c, sum)
	b := newBrowser(t)
	hook := func(edge, id string) string {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"session_id": "agent-1", "cwd": repo, "hook_event_name": "UserPromptSubmit", "prompt": "go on"})
		if edge == "end" {
			return d.cliOK(t, string(in), "turn", "end", "--hook")
		}
		return d.cliOK(t, string(in), "turn", "start", "--hook", "--id", id, "--feedback")
	}
	// check compares what the agent reads above each comment with the
	// lines wanted, which a note on how they moved may follow.
	check := func(t *testing.T, out string, want map[string]string) {
		t.Helper()
		got := feedbackHeadings(out)
		for text, head := range want {
			if g := got[text]; g != head && !strings.HasPrefix(g, head+" (") {
				t.Errorf("the agent reads %q under %q, want %q", text, got[text], head)
			}
		}
		if t.Failed() {
			t.Logf("the feedback:\n%s", out)
		}
	}
	open := func(path string) {
		t.Helper()
		b.click(path, `#files li.file[data-path=`+js(path)+`]`)
		b.waitFor(path+"'s diff", `document.getElementById('diff-path').textContent === `+js(path)+` && !!document.querySelector('#diff tr.line')`)
	}

	// Since the session began: a new file of 20 lines, three lines put
	// in f.txt after its line 10, line 15 of g.txt deleted.
	var nl strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&nl, "new %d\n", i)
	}
	writeFile(t, repo, "new.txt", nl.String())
	writeFile(t, repo, "f.txt", strings.Replace(pageLines(40), "line 10\n", "line 10\nput A\nput B\nput C\n", 1))
	writeFile(t, repo, "g.txt", strings.Replace(pageLines(30), "line 15\n", "", 1))

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("three files", `document.querySelectorAll('#files li.file').length === 3`)

	t.Run("uncommitted, no turn running", func(t *testing.T) {
		b.t = t
		open("new.txt")
		dragRows(b, 14, 16)
		comment(b, "mouse on new lines")
		open("f.txt")
		keyRows(b, 10, 12)
		comment(b, "keys on added lines")
		dragRows(b, 13, 14)
		comment(b, "mouse on unchanged lines")
		keyRows(b, 9, 11)
		comment(b, "keys from an unchanged line into added ones")
		open("g.txt")
		// Line 14, the deleted line 15 and the line after it (line 15 now).
		dragRows(b, 13, 14)
		comment(b, "mouse around a removed line")
		check(t, hook("start", "t1"), map[string]string{
			"mouse on new lines":                          "`new.txt`, lines 15-17",
			"keys on added lines":                         "`f.txt`, lines 11-13",
			"mouse on unchanged lines":                    "`f.txt`, lines 14-15",
			"keys from an unchanged line into added ones": "`f.txt`, lines 10-12",
			"mouse around a removed line":                 "`g.txt`, lines 14-15 (changed since)",
		})
	})

	// The turn puts two lines at the top of new.txt and one after line 5
	// of g.txt.
	writeFile(t, repo, "new.txt", "top 1\ntop 2\n"+nl.String())
	writeFile(t, repo, "g.txt", strings.Replace(strings.Replace(pageLines(30), "line 15\n", "", 1), "line 5\n", "line 5\nturn line\n", 1))
	hook("end", "")

	t.Run("a turn", func(t *testing.T) {
		b.t = t
		b.click("the turn", `#turns li.turn .name`)
		b.waitFor("the turn's files", `document.getElementById('cs-label').textContent !== 'Uncommitted Changes' && document.querySelectorAll('#files li.file').length === 2`)
		open("new.txt")
		dragRows(b, 0, 2)
		comment(b, "mouse on the turn's lines")
		open("g.txt")
		keyRows(b, 5, 5)
		comment(b, "keys on the turn's line")
	})

	t.Run("the turn's comments reach the agent", func(t *testing.T) {
		check(t, hook("start", "t2"), map[string]string{
			"mouse on the turn's lines": "`new.txt`, lines 1-3",
			"keys on the turn's line":   "`g.txt`, line 6",
		})
	})
	// The second turn puts a line at the top of g.txt.
	writeFile(t, repo, "g.txt", "first\n"+strings.Replace(strings.Replace(pageLines(30), "line 15\n", "", 1), "line 5\n", "line 5\nturn line\n", 1))
	hook("end", "")
	t.Run("a comparison", func(t *testing.T) {
		b.t = t
		b.waitFor("two turns", `document.querySelectorAll('#turns li.turn').length === 2`)
		b.click("the first turn's tick", `#turns li.turn:nth-child(1) input`)
		b.click("the second turn's tick", `#turns li.turn:nth-child(2) input`)
		b.click("Compare", `#compare:not([disabled])`)
		b.waitFor("the comparison", `document.getElementById('cs-label').textContent.startsWith('Compare turns') && document.querySelectorAll('#files li.file').length >= 1`)
		open("g.txt")
		dragRows(b, 0, 1)
		comment(b, "mouse on the comparison")
		check(t, hook("start", "t3"), map[string]string{
			"mouse on the comparison": "`g.txt`, lines 1-2",
		})
	})
}
