package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The review page is tested in headless Chromium against the real daemon.
// The tests skip only where no Chromium is installed and CI is unset; on CI
// (CI=true) a missing browser is a failure, since .ci/run installs it.

// browserWait bounds each wait for the page; it is a deadline for a hang,
// not a timing assertion.
const browserWait = 20 * time.Second

// findChromium returns the browser binary, or skips or fails the test.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "" {
		t.Skip("no chromium on PATH (apt-get install -y chromium); the browser tests skip outside CI")
	}
	t.Fatal("no chromium on PATH, and CI is set: .ci/run installs it (apt-get install -y chromium)")
	return ""
}

// browser is one headless Chromium tab with its console captured.
type browser struct {
	t       *testing.T
	ctx     context.Context
	mu      sync.Mutex
	console []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := findChromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 860),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m.String())
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			b.mu.Lock()
			t.Logf("browser console:\n%s", strings.Join(b.console, "\n"))
			b.mu.Unlock()
		}
	})
	return b
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression and decodes its value into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("browser: evaluate %s: %v", expr, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("browser: evaluate %s: %s: %v", expr, raw, err)
		}
	}
}

// waitFor polls a JavaScript condition until it is truthy; what says what
// was awaited when it never is.
func (b *browser) waitFor(what, cond string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(browserWait))); err != nil {
		var page string
		b.eval(`document.querySelector('main') ? document.querySelector('main').innerText.slice(0, 3000) : document.body.innerText`, &page)
		b.shot("failed-" + sanitize(b.t.Name()))
		b.t.Fatalf("browser: waiting for %s: %v\npage text:\n%s", what, err, page)
	}
}

// shot writes a screenshot of the page to the artifacts directory.
func (b *browser) shot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(artifactsDir(b.t), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	b.t.Logf("screenshot: %s", p)
	return p
}

var artifactsOnce struct {
	sync.Once
	dir string
}

// artifactsDir is $CHANGESETD_ARTIFACTS, else a fixed directory under the
// temp dir, so screenshots outlive the test for a person or CI to look at.
func artifactsDir(t *testing.T) string {
	artifactsOnce.Do(func() {
		d := os.Getenv("CHANGESETD_ARTIFACTS")
		if d == "" {
			d = filepath.Join(os.TempDir(), "changesetd-artifacts")
		}
		artifactsOnce.dir = d
	})
	if err := os.MkdirAll(artifactsOnce.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return artifactsOnce.dir
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' {
			return '-'
		}
		return r
	}, s)
}

// js quotes s as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// fileRow is the JavaScript for the page's row of the file at path.
func fileRow(path string) string {
	return fmt.Sprintf(`document.querySelector('#files li.file[data-path=%s]')`, js(path))
}

// pageLines returns n numbered lines, "line 1\n" … "line n\n".
func pageLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// TestBrowserReview walks the review page through what a person does with
// it, in one browser against one daemon: open the printed URL, see the
// session and its uncommitted changes with git's counts, watch an edit on
// disk arrive, tick a file reviewed and reload, revert one hunk selected
// in the diff, and ride out a daemon restart.
func TestBrowserReview(t *testing.T) {
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": pageLines(40), "b.txt": "bee\n", "gone.txt": "bye\n"})
	// Two hunks in a.txt, far enough apart to stay two hunks.
	a := strings.Replace(strings.Replace(pageLines(40), "line 3\n", "line three\n", 1), "line 35\n", "line thirty-five\nline 35.5\n", 1)
	writeFile(t, repo, "a.txt", a)
	writeFile(t, repo, "new.txt", "one\ntwo\nthree\n")
	if err := os.Remove(filepath.Join(repo, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, repo)

	t.Run("printed URL opens the page without leaking the token", func(t *testing.T) {
		if !strings.HasPrefix(d.Review, "http://"+d.Addr+"/#token=") {
			t.Fatalf("review URL %q, want http://%s/#token=…", d.Review, d.Addr)
		}
		resp := httpGet(t, "http://"+d.Addr+"/", nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Fatalf("GET / = %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
		}
	})

	b.do(chromedp.Navigate(d.Review))
	b.t = t

	if !t.Run("lists the session", func(t *testing.T) {
		b.t = t
		b.waitFor("the session in the list", fmt.Sprintf(`[...document.querySelectorAll('#sessions [data-session]')].some(e => e.textContent.includes(%s))`, js(filepath.Base(repo))))
		var href string
		b.eval(`location.href`, &href)
		if strings.Contains(href, "token") {
			t.Errorf("the token is still in the address bar: %s", href)
		}
		var stored bool
		b.eval(`sessionStorage.getItem('changesetd.token') === `+js(d.Token), &stored)
		if !stored {
			t.Errorf("the token was not kept in sessionStorage")
		}
	}) {
		return
	}

	if !t.Run("shows the uncommitted changeset with git's counts", func(t *testing.T) {
		b.t = t
		b.waitFor("three files, ready", `document.querySelectorAll('#files li.file').length === 3 && document.getElementById('cs-status').textContent === 'ready'`)
		ns := gitNumstat(t, repo, false, false)
		for _, path := range []string{"a.txt", "new.txt", "gone.txt"} {
			var got struct{ Added, Removed, Kind string }
			b.eval(fmt.Sprintf(`(() => { const r = %s; return r && {Added: r.querySelector('.counts .added').textContent, Removed: r.querySelector('.counts .removed').textContent, Kind: r.querySelector('.opkind').textContent}; })()`, fileRow(path)), &got)
			want := ns[path]
			if got.Added != "+"+want.added || got.Removed != "−"+want.removed {
				t.Errorf("%s: page shows %s %s, git numstat +%s −%s", path, got.Added, got.Removed, want.added, want.removed)
			}
			wantKind := map[string]string{"a.txt": "modified", "new.txt": "added", "gone.txt": "deleted"}[path]
			if got.Kind != wantKind {
				t.Errorf("%s: operation %q, want %q", path, got.Kind, wantKind)
			}
		}
		var totals string
		b.eval(`document.getElementById('totals').textContent`, &totals)
		if !strings.Contains(totals, "+6") || !strings.Contains(totals, "−3") {
			t.Errorf("totals %q, want +6 −3 (a.txt +3 −2, new.txt +3, gone.txt −1, b.txt unchanged)", totals)
		}
		b.shot("01-uncommitted")
	}) {
		return
	}

	if !t.Run("updates when a file is edited on disk", func(t *testing.T) {
		b.t = t
		writeFile(t, repo, "b.txt", "bee\nsting\n")
		b.waitFor("b.txt with +1 −0", fmt.Sprintf(`(() => { const r = %s; return r && r.querySelector('.added').textContent === '+1' && r.querySelector('.removed').textContent === '−0'; })()`, fileRow("b.txt")))
	}) {
		return
	}

	if !t.Run("keeps a reviewed tick across a reload", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Click(`#files li.file[data-path="new.txt"] input.review`))
		b.waitFor("new.txt ticked", fileRow("new.txt")+`.querySelector('input.review').checked`)
		b.waitFor("1/4 reviewed", `document.getElementById('totals').textContent.includes('1/4 reviewed')`)
		b.do(chromedp.Reload())
		b.waitFor("the files after the reload", `document.querySelectorAll('#files li.file').length === 4`)
		b.waitFor("new.txt still ticked", fileRow("new.txt")+`.querySelector('input.review').checked`)
		var others int
		b.eval(`document.querySelectorAll('#files input.review:checked').length`, &others)
		if others != 1 {
			t.Errorf("%d files ticked after the reload, want 1", others)
		}
	}) {
		return
	}

	if !t.Run("reverts one hunk selected in the diff", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Click(`#files li.file[data-path="a.txt"]`))
		b.waitFor("a.txt's two hunks", `document.querySelectorAll('#diff tr.hunk').length === 2`)
		b.shot("02-diff")
		// Select the added lines of the second hunk, as a drag would.
		b.eval(`(() => {
			const rows = [...document.querySelectorAll('#diff tr.line.add[data-hunk="1"]')];
			const r = document.createRange();
			r.setStart(rows[0].querySelector('.code').firstChild, 0);
			r.setEnd(rows[rows.length - 1].querySelector('.code').firstChild, 3);
			const s = document.getSelection();
			s.removeAllRanges();
			s.addRange(r);
			return rows.length;
		})()`, nil)
		b.waitFor("the range buttons", `!document.getElementById('range-ops').hidden`)
		b.do(chromedp.Click(`#range-revert`))
		b.waitFor("the confirmation", `document.getElementById('confirm').open && document.getElementById('confirm-text').textContent.length > 0`)
		var text string
		b.eval(`document.getElementById('confirm-text').textContent`, &text)
		if !strings.Contains(text, "lines 35–36") {
			t.Errorf("confirmation %q does not name the selected lines 35–36", text)
		}
		b.shot("03-confirm")
		b.do(chromedp.Click(`#confirm-ok`))
		b.waitFor("a.txt down to +1 −1", fmt.Sprintf(`(() => { const r = %s; return r && r.querySelector('.added').textContent === '+1' && r.querySelector('.removed').textContent === '−1'; })()`, fileRow("a.txt")))
		got, err := os.ReadFile(filepath.Join(repo, "a.txt"))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(pageLines(40), "line 3\n", "line three\n", 1)
		if string(got) != want {
			t.Errorf("a.txt after reverting the second hunk:\n%s\nwant:\n%s", got, want)
		}
		b.waitFor("the revert back to idle", `!document.querySelector('.opstatus')`)
	}) {
		return
	}

	t.Run("recovers after the daemon restarts", func(t *testing.T) {
		b.t = t
		b.eval(`window.notReloaded = true`, nil)
		if err := d.stop(); err != nil {
			t.Fatalf("stop: %v", err)
		}
		b.waitFor("the page to notice", `document.getElementById('conn').dataset.state !== 'connected'`)
		b.shot("04-disconnected")
		writeFile(t, repo, "b.txt", "bee\nsting\nhoney\n")
		d2 := startDaemonIn(t, d.StateDir, "--listen", d.Addr, repo)
		if d2.Addr != d.Addr {
			t.Fatalf("restarted on %s, want %s", d2.Addr, d.Addr)
		}
		b.waitFor("live again", `document.getElementById('conn').dataset.state === 'connected'`)
		b.waitFor("b.txt with +2 from the new daemon", fmt.Sprintf(`(() => { const r = %s; return r && r.querySelector('.added').textContent === '+2'; })()`, fileRow("b.txt")))
		writeFile(t, repo, "b.txt", "bee\nsting\nhoney\ncomb\n")
		b.waitFor("b.txt with +3, live", fmt.Sprintf(`(() => { const r = %s; return r && r.querySelector('.added').textContent === '+3'; })()`, fileRow("b.txt")))
		b.waitFor("new.txt still ticked", fileRow("new.txt")+`.querySelector('input.review').checked`)
		var same bool
		b.eval(`window.notReloaded === true`, &same)
		if !same {
			t.Errorf("the page was reloaded; it should recover in place")
		}
		b.shot("05-recovered")
	})
}
