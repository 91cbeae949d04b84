package test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/changesetd/changesetd/protocol"
)

// TestBrowserFileOrderAndSelection checks that the file list stays sorted
// by path whatever order the daemon's actions bring files in, and that
// the selection stays where it was: a reverted file's place goes to the
// next one, and the revert undone puts the file back where it was.
func TestBrowserFileOrderAndSelection(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	for _, n := range []string{"a", "b", "c"} {
		writeFile(t, repo, n+".txt", n+"\n"+n+n+"\n")
	}
	d := startDaemon(t, repo)
	order := `[...document.querySelectorAll('#files li.file')].map(li => li.dataset.path).join()`
	selected := `document.querySelector('#files li.file.selected').dataset.path`

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("a, b, c", order+` === 'a.txt,b.txt,c.txt'`)
	b.click("b.txt", `#files li.file[data-path="b.txt"]`)
	b.waitFor("b.txt's diff", `document.getElementById('diff-path').textContent === 'b.txt'`)
	b.click("Revert", `#file-ops button[data-op="revert"]`)
	b.waitFor("the confirmation", `document.getElementById('confirm').open`)
	b.click("Confirm", `#confirm-ok`)
	b.waitFor("b.txt reverted; c.txt, next, selected", order+` === 'a.txt,c.txt' && `+selected+` === 'c.txt' && document.getElementById('diff-path').textContent === 'c.txt'`)
	b.click("Undo Revert", `#cs-ops button[data-op="undo"]`)
	b.waitFor("b.txt back in its place, c.txt still selected", order+` === 'a.txt,b.txt,c.txt' && `+selected+` === 'c.txt'`)

	// A file new to the changeset takes its place by path too.
	writeFile(t, repo, "0.txt", "zero\n")
	writeFile(t, repo, "bb.txt", "bee bee\n")
	b.waitFor("0.txt first, bb.txt after b.txt", order+` === '0.txt,a.txt,b.txt,bb.txt,c.txt' && `+selected+` === 'c.txt'`)
}

// TestBrowserDaemonGone checks what the page shows when its daemon stops:
// not "ready" but offline, every operation disabled saying why; and when
// a daemon with another token comes up in its place, the token form
// saying the token was refused rather than retrying for ever.
func TestBrowserDaemonGone(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "a\nA\n")
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("ready, the operations enabled", `document.getElementById('cs-status').textContent === 'ready' && !document.querySelector('#cs-ops button[data-op="commit"]').disabled`)
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	b.waitFor("offline, every operation disabled, saying why", `(() => {
		const st = document.getElementById('cs-status');
		const ops = [...document.querySelectorAll('#cs-ops button.op, #file-ops button.op')];
		return st.dataset.status === 'offline' && st.textContent.includes('not connected') &&
			ops.length >= 4 && ops.every(b => b.disabled && b.title.includes('Not connected')) &&
			document.getElementById('conn').dataset.state !== 'connected';
	})()`)
	b.shot("23-offline")

	// Another daemon on the same address, with a state dir (and so a
	// token) of its own.
	other := startDaemonIn(t, t.TempDir(), "--listen", d.Addr, repo)
	if other.Token == d.Token {
		t.Fatal("the second daemon has the first one's token")
	}
	b.waitFor("the token form, saying the token was refused", `!document.getElementById('login').hidden && document.getElementById('login-message').textContent.includes('refused')`)
	b.do(chromedp.SendKeys(`#login-token`, other.Token), chromedp.Click(`#login-form button`))
	b.waitFor("ready with the new token", `document.getElementById('cs-status').textContent === 'ready' && document.getElementById('conn').dataset.state === 'connected'`)
	if _, err := os.Stat(filepath.Join(repo, "a.txt")); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserRemoveSession: the page removes a session after asking, and
// the daemon no longer lists it.
func TestBrowserRemoveSession(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("the session listed", `document.querySelectorAll('#sessions li[data-session]').length === 1`)
	b.click("the session's Remove", `#sessions li[data-session] button.rm-session`)
	b.waitFor("the confirmation, saying what is kept", `(() => { const d = document.getElementById('confirm'); return d.open && document.getElementById('confirm-text').textContent.includes('kept for 7 days'); })()`)
	b.click("Remove", `#confirm-ok`)
	b.waitFor("no session left on the page", `document.querySelectorAll('#sessions li[data-session]').length === 0`)
	c := d.client(t, "ide")
	var res protocol.ListSessionsResult
	params := protocol.ListSessionsParams{BaseParams: protocol.BaseParams{Channel: protocol.RootURI}}
	if err := c.Call(context.Background(), protocol.MethodListSessions, params, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 0 {
		t.Fatalf("the daemon still lists %d sessions after the page removed one", len(res.Items))
	}
}
