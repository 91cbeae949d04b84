package test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserFavicon: the icon browsers ask for is served.
func TestBrowserFavicon(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t)
	openBlank(t, b, d)
	var got string
	b.eval(`fetch('/favicon.ico').then((r) => r.status + ' ' + r.headers.get('content-type'))`, &got)
	if got != "200 image/png" {
		t.Errorf("GET /favicon.ico: %s", got)
	}
}

// TestBrowserWrongToken: a refused token shows the token form alone, not
// over the empty page, and the connection badge does not say it is
// retrying.
func TestBrowserWrongToken(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t)
	b.do(chromedp.Navigate("http://" + d.Addr + "/#token=wrong"))
	b.waitFor("the token form", `!document.getElementById('login').hidden && document.getElementById('login-message').textContent.includes('refused')`)
	var state struct {
		App   bool   `json:"app"`
		Conn  string `json:"conn"`
		Shown bool   `json:"shown"`
	}
	b.eval(`({ app: document.getElementById('app').hidden, conn: document.getElementById('conn').textContent, shown: document.getElementById('conn').checkVisibility() })`, &state)
	if !state.App {
		t.Errorf("the page's shell is shown under the token form")
	}
	if state.Shown && (strings.Contains(state.Conn, "retry") || strings.Contains(state.Conn, "connecting")) {
		t.Errorf("the connection badge says %q while the token form asks for a token", state.Conn)
	}
}

// TestBrowserNoToken: the page opened without a token shows the token
// form, visible at once, and not over the empty page.
func TestBrowserNoToken(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t)
	b.do(chromedp.Navigate("http://" + d.Addr + "/"))
	b.waitFor("the token form, shown", `!document.getElementById('login').hidden && document.getElementById('login-token').checkVisibility({ visibilityProperty: true })`)
	var app bool
	b.eval(`document.getElementById('app').hidden`, &app)
	if !app {
		t.Errorf("the page's shell is shown under the token form")
	}
}

// TestBrowserSmallThings: lines chosen in one file are not said to be
// chosen in the next; a file created whole has no "↓ more lines" below
// it; the whole file in side-by-side is side by side; an agent named by
// a UUID is shown by its first eight digits.
func TestBrowserSmallThings(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": pageLines(20)})
	writeFile(t, repo, "a.txt", strings.Replace(pageLines(20), "line 10\n", "line ten\n", 1))
	writeFile(t, repo, "new.txt", "one\ntwo\nthree\n")
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("a.txt's hunk", `document.getElementById('diff-path').textContent === 'a.txt' && document.querySelectorAll('#diff tr.hunk').length === 1`)
	b.do(chromedp.KeyEvent("v"), chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierShift)))
	b.waitFor("lines chosen", `document.getElementById('diff-status').textContent.includes('chosen')`)
	b.do(chromedp.KeyEvent("j"))
	b.waitFor("new.txt's diff", `document.getElementById('diff-path').textContent === 'new.txt' && !!document.querySelector('#diff tr.line')`)
	var status string
	b.eval(`document.getElementById('diff-status').textContent`, &status)
	if status != "" {
		t.Errorf("after moving to new.txt the page says %q", status)
	}
	var tail bool
	b.eval(`!!document.querySelector('#diff tr.hunk-tail')`, &tail)
	if tail {
		t.Errorf("new.txt, created whole, offers more lines below its only hunk")
	}

	b.do(chromedp.KeyEvent("k"))
	b.waitFor("a.txt again", `document.getElementById('diff-path').textContent === 'a.txt' && !!document.querySelector('#diff tr.hunk')`)
	b.do(chromedp.KeyEvent("s"))
	b.waitFor("side by side", `!!document.querySelector('#diff table.split')`)
	b.do(chromedp.KeyEvent("f"))
	b.waitFor("the whole file, side by side", `!!document.querySelector('#diff table.fullfile.split') && !document.querySelector('#diff table.unified')`)
	b.do(chromedp.KeyEvent("f"), chromedp.KeyEvent("s"))

	const id = "3f2a9c1e-4b5d-4e6f-8a7b-9c0d1e2f3a4b"
	in, _ := json.Marshal(map[string]any{"session_id": id, "cwd": repo, "hook_event_name": "UserPromptSubmit", "prompt": "tidy"})
	d.cliOK(t, string(in), "turn", "start", "--hook")
	b.waitFor("the running turn", `!!document.querySelector('#turns li.turn')`)
	var turn string
	b.eval(`document.querySelector('#turns li.turn').textContent`, &turn)
	if !strings.Contains(turn, "agent 3f2a9c1e") || strings.Contains(turn, id) {
		t.Errorf("the turn reads %q: want the agent as 'agent 3f2a9c1e'", turn)
	}
	d.cliOK(t, string(in), "turn", "end", "--hook")
}

// TestBrowserOpensServedSession: a session an agent's hook made in
// another directory is newer than the one serve was given, but the page
// the printed URL opens shows the one serve was given.
func TestBrowserOpensServedSession(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	other := gitRepo(t, map[string]string{"b.txt": "b\n"})
	d := startDaemon(t, repo)
	in, _ := json.Marshal(map[string]any{"session_id": "agent-2", "cwd": other, "hook_event_name": "UserPromptSubmit", "prompt": "elsewhere"})
	d.cliOK(t, string(in), "turn", "start", "--hook")
	d.cliOK(t, string(in), "turn", "end", "--hook")

	b := newBrowser(t)
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("two sessions, one selected", `document.querySelectorAll('#sessions [data-session]').length === 2 && !!document.querySelector('#sessions .selected')`)
	var sel string
	b.eval(`document.querySelector('#sessions .selected').textContent`, &sel)
	if !strings.Contains(sel, filepath.Base(repo)) || strings.Contains(sel, filepath.Base(other)) {
		t.Errorf("the page opened on %q, want the session of %s", sel, repo)
	}
}

// TestBrowserHunkHeaderKeepsItsButtons: at 1024 px a hunk whose header
// names a long function keeps its buttons on the header's first line
// (the header wraps beside them) and the diff no wider than its pane;
// they had wrapped below the header.
func TestBrowserHunkHeaderKeepsItsButtons(t *testing.T) {
	t.Parallel()
	long := "func (s *state) entryNewValueWithAVeryLongNameIndeed(op ssa.Op, t *types.Type, auxint int64, aux Aux) *ssa.Value {\n"
	var body strings.Builder
	body.WriteString("package main\n\n")
	body.WriteString(long)
	for i := range 40 {
		fmt.Fprintf(&body, "\tx%d := %d\n", i, i)
	}
	body.WriteString("}\n")
	repo := gitRepo(t, map[string]string{"main.go": body.String()})
	writeFile(t, repo, "main.go", strings.Replace(body.String(), "\tx30 := 30\n", "\tx30 := 31\n", 1))
	d := startDaemon(t, repo)
	b := newBrowser(t)
	b.do(chromedp.EmulateViewport(1024, 800))
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("the hunk and its buttons", `document.getElementById('diff-path').textContent === 'main.go' && !!document.querySelector('#diff tr.hunk .hunkops') && document.querySelector('#diff tr.hunk').textContent.includes('entryNewValueWithAVeryLongNameIndeed')`)
	var got string
	b.eval(`(() => {
		const tr = document.querySelector('#diff tr.hunk');
		const cell = tr.firstElementChild.getBoundingClientRect();
		const ops = tr.querySelector('.hunkops').getBoundingClientRect();
		const pane = document.getElementById('diff');
		const out = [];
		if (ops.top > cell.top + 8) out.push('buttons below the header\'s first line: ' + (ops.top - cell.top) + ' px from its top');
		if (ops.right > pane.getBoundingClientRect().right + 1) out.push('buttons outside the pane');
		if (pane.scrollWidth > pane.clientWidth + 1) out.push('diff wider than its pane: ' + pane.scrollWidth + ' > ' + pane.clientWidth);
		return out.join('; ');
	})()`, &got)
	if got != "" {
		t.Error(got)
	}
}
