package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
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
	if ci := os.Getenv("CI"); ci == "" || ci == "false" || ci == "0" {
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

// click clicks the first element sel matches once there is one. Finding
// and clicking happen in one step in the page: a node found first and
// clicked next can be replaced by a live update in between.
func (b *browser) click(what, sel string) {
	b.t.Helper()
	b.waitFor(what, `(() => { const e = document.querySelector(`+js(sel)+`); if (!e) return false; e.click(); return true; })()`)
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
	var err error
	for {
		_, err = chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(browserWait)))
		// A poll begun in a document a reload then replaced loses its
		// context: it looks again, in the new document.
		if err == nil || ctx.Err() != nil || !contextGone(err) {
			break
		}
	}
	if err != nil {
		var page string
		b.eval(`document.querySelector('main') ? document.querySelector('main').innerText.slice(0, 3000) : document.body.innerText`, &page)
		b.shot("failed-" + sanitize(b.t.Name()))
		b.t.Fatalf("browser: waiting for %s: %v\npage text:\n%s", what, err, page)
	}
}

// contextGone reports whether err says the document an evaluation ran
// in was replaced (a reload, a navigation) while it ran.
func contextGone(err error) bool {
	m := err.Error()
	return strings.Contains(m, "Cannot find context with specified id") || strings.Contains(m, "Execution context was destroyed")
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
	t.Parallel()
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
		b.click(`#files li.file[data-path="new.txt"] input.review`, `#files li.file[data-path="new.txt"] input.review`)
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
		// The reloaded page's subscription, made while it loaded (boot.js,
		// the session and the changeset asked for at once), is a live one.
		writeFile(t, repo, "b.txt", "bee\nsting\nagain\n")
		b.waitFor("b.txt with +2 −0 after the reload", fmt.Sprintf(`(() => { const r = %s; return r && r.querySelector('.added').textContent === '+2'; })()`, fileRow("b.txt")))
		writeFile(t, repo, "b.txt", "bee\nsting\n")
		b.waitFor("b.txt back to +1", fmt.Sprintf(`(() => { const r = %s; return r && r.querySelector('.added').textContent === '+1'; })()`, fileRow("b.txt")))
	}) {
		return
	}

	if !t.Run("reverts one hunk selected in the diff", func(t *testing.T) {
		b.t = t
		b.click(`#files li.file[data-path="a.txt"]`, `#files li.file[data-path="a.txt"]`)
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
		b.click(`#range-revert`, `#range-revert`)
		b.waitFor("the confirmation", `document.getElementById('confirm').open && document.getElementById('confirm-text').textContent.length > 0`)
		var text string
		b.eval(`document.getElementById('confirm-text').textContent`, &text)
		if !strings.Contains(text, "lines 35–36") {
			t.Errorf("confirmation %q does not name the selected lines 35–36", text)
		}
		b.shot("03-confirm")
		b.click(`#confirm-ok`, `#confirm-ok`)
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

// openBlank opens the page of a daemon without the token, for tests that
// only need the page's origin to import its modules.
func openBlank(t *testing.T, b *browser, d *daemon) {
	t.Helper()
	b.do(chromedp.Navigate("http://" + d.Addr + "/"))
	b.waitFor("the token form", `!document.getElementById('login').hidden`)
}

// TestBrowserReducerParity runs the upstream changeset and annotations
// reducer fixtures through the page's reducers, the same ones the server's
// reducer passes.
func TestBrowserReducerParity(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t)
	openBlank(t, b, d)
	// Pre-0.9.0 behaviour, which the page (speaking 1.0) does not have;
	// reducer/fixtures_test.go skips it for 1.0 as well.
	skip := map[string]bool{"159-changeset-contentchanged-updates-error.json": true}
	// The page's reducer for each fixture reducer it mirrors.
	reducers := map[string]string{"changeset": "applyChangeset", "annotations": "applyAnnotations"}
	files, err := filepath.Glob(filepath.Join("..", "testdata", "ahp-fixtures", "reducers", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no reducer fixtures: %v", err)
	}
	ran := map[string]int{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx struct {
			Reducer  string          `json:"reducer"`
			Initial  json.RawMessage `json:"initial"`
			Actions  json.RawMessage `json:"actions"`
			Expected json.RawMessage `json:"expected"`
		}
		if err := json.Unmarshal(raw, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := filepath.Base(f)
		fn, ok := reducers[fx.Reducer]
		if !ok || skip[name] {
			continue
		}
		ran[fx.Reducer]++
		var got any
		b.eval(fmt.Sprintf(`import('/assets/reducer.js').then(m => { let s = %s; for (const a of %s) [s] = m.%s(s, a); return s; })`, fx.Initial, fx.Actions, fn), &got)
		var want any
		json.Unmarshal(fx.Expected, &want)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("%s:\n got %s\nwant %s", name, gb, wb)
		}
	}
	// At the time of writing: 10 of each.
	for r := range reducers {
		if ran[r] < 10 {
			t.Errorf("only %d %s fixtures ran", ran[r], r)
		}
	}
	// The annotations channel is told from the session channel it hangs
	// off: same scheme, its own reducer.
	var picked []string
	b.eval(`import('/assets/reducer.js').then(m => ['ahp-session:/s/annotations', 'ahp-session:/s'].map(ch => m.reducerFor(ch).name))`, &picked)
	if want := []string{"applyAnnotations", "applySession"}; !slices.Equal(picked, want) {
		t.Errorf("reducerFor picked %v, want %v", picked, want)
	}
}

// TestBrowserClientWire feeds the page's client the exact frames a daemon
// may send: error replies with and without a stray "result":null, errors
// spelled Code/Message, a null result, and the echo or rejection of an
// optimistic review toggle.
func TestBrowserClientWire(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t)
	openBlank(t, b, d)
	var got map[string]any
	b.eval(`import('/assets/ahp.js').then(async ({ Client }) => {
		const c = new Client('ws://invalid.invalid/', 'wire-test');
		c.send = () => {};
		const out = {};
		const call = (id) => new Promise((resolve) => c.pending.set(id, {
			resolve: (v) => resolve({ result: v }),
			reject: (e) => resolve({ code: e.code, message: e.message }),
		}));
		const p1 = call(1), p2 = call(2), p3 = call(3), p4 = call(4);
		c.receive('{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":-32601,"message":"no such method"}}');
		c.receive('{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad params"}}');
		c.receive('{"jsonrpc":"2.0","id":3,"result":null,"error":{"Code":-32600,"Message":"capitalised"}}');
		c.receive('{"jsonrpc":"2.0","id":4,"result":null}');
		out.stray = await p1; out.plain = await p2; out.capitalised = await p3; out.nullResult = await p4;
		const frameErrors = [];
		c.addEventListener('protocolError', (e) => frameErrors.push(e.detail.code));
		c.receive('{"jsonrpc":"2.0","id":null,"result":null,"error":{"Code":-32700,"Message":"parse error"}}');
		c.receive('not json');
		out.frameErrors = frameErrors;

		const ch = 'ahp-changeset:/s/changeset/uncommitted';
		c.installSnapshot({ resource: ch, fromSeq: 10, state: { status: 'ready', files: [{ id: 'file:///a', edit: {} }, { id: 'file:///b', edit: {} }] } });
		const reviewed = () => c.state(ch).files.map((f) => f.reviewed ?? null);
		const seq1 = c.dispatch(ch, { type: 'changeset/filesReviewChanged', files: ['file:///a'], reviewed: true });
		out.optimistic = reviewed();
		c.receive(JSON.stringify({ jsonrpc: '2.0', method: 'action', params: { channel: ch, serverSeq: 11, origin: { clientId: 'wire-test', clientSeq: seq1 },
			action: { type: 'changeset/filesReviewChanged', files: ['file:///a'], reviewed: true } } }));
		out.confirmed = reviewed();
		const rejections = [];
		c.addEventListener('rejected', (e) => rejections.push(e.detail.reason));
		const seq2 = c.dispatch(ch, { type: 'changeset/filesReviewChanged', files: ['file:///b'], reviewed: true });
		out.optimistic2 = reviewed();
		c.receive(JSON.stringify({ jsonrpc: '2.0', method: 'action', params: { channel: ch, serverSeq: 12, origin: { clientId: 'wire-test', clientSeq: seq2 },
			rejectionReason: 'no', action: { type: 'changeset/filesReviewChanged', files: ['file:///b'], reviewed: true } } }));
		out.rolledBack = reviewed();
		out.rejections = rejections;
		// Another client's toggle applies; an envelope at or before the
		// snapshot's fromSeq does not.
		c.receive(JSON.stringify({ jsonrpc: '2.0', method: 'action', params: { channel: ch, serverSeq: 13, origin: { clientId: 'other', clientSeq: 1 },
			action: { type: 'changeset/filesReviewChanged', files: ['file:///b'], reviewed: false } } }));
		c.receive(JSON.stringify({ jsonrpc: '2.0', method: 'action', params: { channel: ch, serverSeq: 9,
			action: { type: 'changeset/cleared' } } }));
		out.foreign = reviewed();
		// The daemon's rejections take no serverSeq: this one carries 13,
		// the last action's.
		const seq3 = c.dispatch(ch, { type: 'changeset/filesReviewChanged', files: ['file:///b'], reviewed: true });
		out.optimistic3 = reviewed();
		c.receive(JSON.stringify({ jsonrpc: '2.0', method: 'action', params: { channel: ch, serverSeq: 13, origin: { clientId: 'wire-test', clientSeq: seq3 },
			rejectionReason: 'at the current seq', action: { type: 'changeset/filesReviewChanged', files: ['file:///b'], reviewed: true } } }));
		out.rolledBackAtCurrentSeq = reviewed();
		out.rejections = rejections;
		return out;
	})`, &got)
	want := map[string]any{
		"stray":       map[string]any{"code": -32601.0, "message": "no such method"},
		"plain":       map[string]any{"code": -32602.0, "message": "bad params"},
		"capitalised": map[string]any{"code": -32600.0, "message": "capitalised"},
		"nullResult":  map[string]any{"result": nil},
		"frameErrors": []any{-32700.0},
		"optimistic":  []any{true, nil},
		"confirmed":   []any{true, nil},
		"optimistic2": []any{true, true},
		"rolledBack":  []any{true, nil},
		"foreign":     []any{true, false},
		"optimistic3": []any{true, true},

		"rolledBackAtCurrentSeq": []any{true, false},
		"rejections":             []any{"no", "at the current seq"},
	}
	for k, w := range want {
		gb, _ := json.Marshal(got[k])
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("%s: got %s, want %s", k, gb, wb)
		}
	}
}

// TestBrowserTurns checks the turn timeline: each turn with its message
// and counts, a click opens its changeset, and two ticked turns compare.
func TestBrowserTurns(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	d := startDaemon(t, repo)
	d.turnCLI(t, "start", "--dir", repo, "--message", "add a line to a")
	writeFile(t, repo, "a.txt", "a\nmore a\n")
	d.turnCLI(t, "end", "--dir", repo)
	d.turnCLI(t, "start", "--dir", repo, "--message", "rewrite b")
	writeFile(t, repo, "b.txt", "B\nB\n")
	d.turnCLI(t, "end", "--dir", repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("two turns with counts", `(() => {
		const t = [...document.querySelectorAll('#turns li.turn')].map(li => li.textContent);
		return t.length === 2 && t[0].includes('rewrite b') && t[0].includes('+2 −1') && t[1].includes('add a line to a') && t[1].includes('+1 −0');
	})()`)
	b.click(`#turns li.turn:nth-child(2) .name`, `#turns li.turn:nth-child(2) .name`)
	b.waitFor("the first turn's changeset", `document.getElementById('cs-label').textContent.includes('add a line to a') &&
		document.querySelectorAll('#files li.file').length === 1 && !!document.querySelector('#files li.file[data-path="a.txt"]')`)
	b.click(`#turns li.turn:nth-child(1) input`, `#turns li.turn:nth-child(1) input`)
	b.click(`#turns li.turn:nth-child(2) input`, `#turns li.turn:nth-child(2) input`)
	b.waitFor("Compare enabled", `!document.getElementById('compare').disabled`)
	b.click(`#compare`, `#compare`)
	b.waitFor("the comparison: b.txt only", `document.getElementById('cs-label').textContent.startsWith('Compare turns') &&
		document.getElementById('cs-status').textContent === 'ready' &&
		document.querySelectorAll('#files li.file').length === 1 && !!document.querySelector('#files li.file[data-path="b.txt"]')`)
	b.click(`#view-toggle`, `#view-toggle`)
	b.waitFor("side by side", `!!document.querySelector('#diff table.split')`)
	b.shot("06-compare-turns-split")
}

// darkMode makes the page see prefers-color-scheme: dark.
func darkMode(dark bool) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		v := "light"
		if dark {
			v = "dark"
		}
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
		return err
	})
}

// TestBrowserTokenKeysAndLayout covers the edges around the main flow: a
// wrong token leads to the token form, the keyboard moves between files
// and ticks them, a failed operation shows its error, and the page works
// in dark mode and in a narrow window.
func TestBrowserTokenKeysAndLayout(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	writeFile(t, repo, "a.txt", "a\nA\n")
	writeFile(t, repo, "b.txt", "b\nB\n")
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate("http://" + d.Addr + "/#token=wrong"))
	b.waitFor("the token form saying the token was refused", `!document.getElementById('login').hidden && document.getElementById('login-message').textContent.includes('refused')`)
	b.do(chromedp.SendKeys(`#login-token`, d.Token), chromedp.Click(`#login-form button`))
	b.waitFor("two files", `document.querySelectorAll('#files li.file').length === 2 && document.getElementById('conn').dataset.state === 'connected'`)

	selected := `document.querySelector('#files li.file.selected').dataset.path`
	b.waitFor("a.txt selected first", selected+` === 'a.txt'`)
	b.do(chromedp.KeyEvent("j"))
	b.waitFor("j: b.txt selected", selected+` === 'b.txt'`)
	b.do(chromedp.KeyEvent("x"))
	b.waitFor("x: b.txt ticked", fileRow("b.txt")+`.querySelector('input.review').checked`)
	b.do(chromedp.KeyEvent("k"))
	b.waitFor("k: a.txt selected", selected+` === 'a.txt' && !`+fileRow("a.txt")+`.querySelector('input.review').checked`)
	b.do(chromedp.KeyEvent("s"))
	b.waitFor("s: side by side", `!!document.querySelector('#diff table.split')`)
	b.do(chromedp.KeyEvent("s"))
	b.waitFor("s: unified again", `!!document.querySelector('#diff table.unified')`)

	// Another git holds the index: staging fails, and the page says so.
	lock := filepath.Join(repo, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b.click(`#file-ops button[data-op="stage"]`, `#file-ops button[data-op="stage"]`)
	b.waitFor("the stage error", `[...document.querySelectorAll('#cs-ops .opstatus.error')].some(e => e.textContent.startsWith('Stage failed'))`)
	b.shot("07-operation-error")
	os.Remove(lock)
	b.click(`#file-ops button[data-op="stage"]`, `#file-ops button[data-op="stage"]`)
	b.waitFor("the stage error gone", `!document.querySelector('#cs-ops .opstatus')`)

	// A binary file is shown as such, not as a diff.
	writeFile(t, repo, "blob.bin", "\x00\x01\x02binary\n")
	b.waitFor("blob.bin listed", fileRow("blob.bin")+` !== null`)
	b.click(`#files li.file[data-path="blob.bin"]`, `#files li.file[data-path="blob.bin"]`)
	b.waitFor("the binary note", `document.querySelector('#diff .note') && document.querySelector('#diff .note').textContent.startsWith('Binary file')`)

	// A session created by another client appears through root/sessionAdded.
	other := gitRepo(t, map[string]string{"c.txt": "c\n"})
	c := d.client(t, "creator")
	const uri = "ahp-session:/3f2a9c1e-0000-4000-8000-0000000000b1"
	if err := c.Call(ctx(t), "createSession", map[string]any{"channel": uri, "workingDirectories": []string{"file://" + other}}, nil); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the new session listed", `!!document.querySelector('#sessions [data-session="`+uri+`"]')`)
	if err := c.Call(ctx(t), "disposeSession", map[string]any{"channel": uri}, nil); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the disposed session gone", `!document.querySelector('#sessions [data-session="`+uri+`"]')`)

	b.do(darkMode(true))
	var bg string
	b.eval(`getComputedStyle(document.body).backgroundColor`, &bg)
	if bg != "rgb(13, 17, 23)" {
		t.Errorf("dark mode background %s, want rgb(13, 17, 23)", bg)
	}
	b.shot("08-dark")
	b.do(chromedp.EmulateViewport(420, 900))
	b.waitFor("the sessions above the changeset", `document.getElementById('side').getBoundingClientRect().bottom <= document.getElementById('main').getBoundingClientRect().top + 1`)
	var overflow bool
	b.eval(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow)
	if overflow {
		t.Errorf("the page scrolls sideways in a 420px window")
	}
	b.shot("09-narrow-dark")
	b.do(darkMode(false), chromedp.ResetViewport())
}

// annotationsOf returns the session of a daemon with one session and its
// annotations channel, as listSessions names it; a daemon without the
// channel names none, and the test skips.
func annotationsOf(t *testing.T, c *fake.Client) (session, channel string) {
	t.Helper()
	var res struct {
		Items []struct {
			Resource    string `json:"resource"`
			Annotations *struct {
				Resource string `json:"resource"`
			} `json:"annotations"`
		} `json:"items"`
	}
	if err := c.Call(ctx(t), protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 {
		t.Fatalf("listSessions: %d sessions, want 1", len(res.Items))
	}
	s := res.Items[0]
	if s.Annotations == nil || s.Annotations.Resource == "" {
		t.Skip("this daemon has no annotations channel: its session summary names none")
	}
	return s.Resource, s.Annotations.Resource
}

// entryTexts lists an annotation's entry texts.
func entryTexts(a *protocol.Annotation) []string {
	var out []string
	for _, e := range a.Entries {
		out = append(out, e.Text.Text)
	}
	return out
}

// TestBrowserAnnotations comments on a turn's diff in the page while a
// second client (an IDE, or the agent's side) watches and writes on the
// same annotations channel: the page's comment arrives with the turn and
// the lines it was written on, a reply and a resolve from the page reach
// the other client, and what the other client writes shows in the page
// at once, anchored where the daemon says its lines are now.
func TestBrowserAnnotations(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": pageLines(40), "b.txt": "bee\n"})
	d := startDaemon(t, repo)
	c := d.client(t, "ide")
	sessionURI, annURI := annotationsOf(t, c)
	b := newBrowser(t)

	d.turnCLI(t, "start", "--dir", repo, "--message", "rewrite a")
	// The turn's version of a.txt: 0-based lines 34 and 35 are new.
	turnA := strings.Replace(pageLines(40), "line 35\n", "line thirty-five\nline 35.5\n", 1)
	writeFile(t, repo, "a.txt", turnA)
	d.turnCLI(t, "end", "--dir", repo)
	turns, _ := chatTurns(t, c, sessionURI)
	if len(turns) != 1 {
		t.Fatalf("turns %v, want one", turns)
	}
	turnID := turns[0]
	m := mirrorAnnotations(t, c, annURI)
	aURI := "file://" + filepath.Join(repo, "a.txt")

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("the turn", `[...document.querySelectorAll('#turns li.turn')].some(li => li.textContent.includes('rewrite a'))`)
	b.click(`#turns li.turn .name`, `#turns li.turn .name`)
	b.waitFor("the turn's diff of a.txt", `document.getElementById('cs-label').textContent.includes('rewrite a') &&
		document.querySelectorAll('#files li.file').length === 1 && document.querySelectorAll('#diff tr.line.add').length === 2`)

	const comment = "Why <b>two</b> lines here?"
	var pageID string
	if !t.Run("comment on selected lines", func(t *testing.T) {
		b.t, m.t = t, t
		b.eval(`(() => {
			const rows = [...document.querySelectorAll('#diff tr.line.add')];
			const r = document.createRange();
			r.setStart(rows[0].querySelector('.code').firstChild, 2);
			r.setEnd(rows[1].querySelector('.code').firstChild, 4);
			const s = document.getSelection();
			s.removeAllRanges();
			s.addRange(r);
		})()`, nil)
		b.waitFor("the Comment button", `!document.getElementById('range-ops').hidden && !document.getElementById('range-comment').hidden`)
		b.click(`#range-comment`, `#range-comment`)
		b.waitFor("the comment box, focused", `document.activeElement && document.activeElement.matches('#diff .composer textarea')`)
		b.do(chromedp.SendKeys(`#diff .composer textarea`, comment))
		b.click(`#diff .composer button.send`, `#diff .composer button.send`)
		b.waitFor("the thread under line 36, confirmed", `(() => {
			const tr = document.querySelector('#diff tr.thread-row');
			const th = tr && tr.querySelector('.thread:not(.pending)');
			return th && th.querySelector('.etext').textContent === `+js(comment)+` && tr.previousElementSibling.dataset.a === '35';
		})()`)
		var markup int
		b.eval(`document.querySelectorAll('#diff .etext *').length`, &markup)
		if markup != 0 {
			t.Errorf("the comment's text became %d elements; it must stay text", markup)
		}
		a := m.Wait("the page's comment", func(st protocol.AnnotationsState) bool { return len(st.Annotations) == 1 }).Annotations[0]
		pageID = a.ID
		// Whole lines 34 and 35: to the start of line 36.
		want := protocol.TextRange{Start: protocol.TextPosition{Line: 34}, End: protocol.TextPosition{Line: 36}}
		if a.TurnID != turnID || a.Resource != aURI || a.Range == nil || *a.Range != want || a.Resolved {
			t.Errorf("annotation turn %q resource %q range %+v resolved %v, want turn %q resource %q range %+v unresolved", a.TurnID, a.Resource, a.Range, a.Resolved, turnID, aURI, want)
		}
		if got := entryTexts(&a); !slices.Equal(got, []string{comment}) {
			t.Errorf("entries %q, want %q", got, comment)
		}
		b.shot("10-comment")
	}) {
		return
	}

	if !t.Run("reply with the keyboard and resolve", func(t *testing.T) {
		b.t, m.t = t, t
		const reply = "Because of the half line."
		b.click(`#diff .thread button.reply`, `#diff .thread button.reply`)
		b.waitFor("the reply box, focused", `document.activeElement && document.activeElement.matches('#diff .thread .composer textarea')`)
		b.do(chromedp.SendKeys(`#diff .thread .composer textarea`, reply), chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		a := findAnnotation(m.Wait("the reply", func(st protocol.AnnotationsState) bool {
			a := findAnnotation(st, pageID)
			return a != nil && len(a.Entries) == 2
		}), pageID)
		if got := entryTexts(a); !slices.Equal(got, []string{comment, reply}) {
			t.Errorf("entries %q, want the comment and the reply", got)
		}
		b.waitFor("two comments in the thread", `document.querySelectorAll('#diff .thread .entry').length === 2 && !document.querySelector('#diff .composer')`)
		b.click(`#diff .thread button.resolve`, `#diff .thread button.resolve`)
		m.Wait("resolved", func(st protocol.AnnotationsState) bool {
			a := findAnnotation(st, pageID)
			return a != nil && a.Resolved
		})
		b.waitFor("the thread folded, marked resolved", `(() => { const th = document.querySelector('#diff .thread'); return th && th.classList.contains('resolved') && !th.open && th.querySelector('.tstate'); })()`)
		b.click(`#diff .thread summary`, `#diff .thread summary`)
		b.waitFor("unfolded", `document.querySelector('#diff .thread').open`)
		b.click(`#diff .thread button.reopen`, `#diff .thread button.reopen`)
		m.Wait("re-opened", func(st protocol.AnnotationsState) bool {
			a := findAnnotation(st, pageID)
			return a != nil && !a.Resolved
		})
		b.waitFor("open again", `(() => { const th = document.querySelector('#diff .thread'); return th && !th.classList.contains('resolved') && th.open; })()`)
	}) {
		return
	}

	if !t.Run("another client's comment appears live", func(t *testing.T) {
		b.t, m.t = t, t
		agentRange := map[string]any{"start": map[string]any{"line": 37, "character": 0}, "end": map[string]any{"line": 37, "character": 7}}
		if err := c.Notify(protocol.MethodDispatchAction, map[string]any{"channel": annURI, "clientSeq": 1, "action": map[string]any{
			"type": "annotations/set",
			"annotation": map[string]any{"id": "from-agent", "turnId": turnID, "resource": aURI, "range": agentRange, "resolved": false,
				"entries": []any{map[string]any{"id": "e1", "text": map[string]any{"markdown": "**Line 38** is `next`."}, "_meta": map[string]any{"changesetd/author": "agent"}}}},
		}}); err != nil {
			t.Fatal(err)
		}
		m.Wait("the other client's annotation", func(st protocol.AnnotationsState) bool { return findAnnotation(st, "from-agent") != nil })
		b.waitFor("its thread under line 38, marked as the agent's", `(() => {
			const th = document.querySelector('#diff .thread[data-annotation="from-agent"]');
			return th && th.closest('tr').previousElementSibling.dataset.a === '37' &&
				th.querySelector('.entry.agent .author').textContent === 'agent' && th.querySelector('.etext').textContent === 'Line 38 is next.';
		})()`)
		b.waitFor("a.txt's badge: two threads", fileRow("a.txt")+`.querySelector('.cbadge').textContent === '2'`)
		b.waitFor("the session's badge: two threads, three comments", `document.querySelector('#sessions .cbadge').textContent === '2 threads · 3 comments'`)
		b.shot("11-threads")
	}) {
		return
	}

	if !t.Run("a refused comment comes back with the daemon's reason", func(t *testing.T) {
		b.t, m.t = t, t
		b.eval(`(() => {
			const row = document.querySelector('#diff tr.line.ctx[data-a="31"]');
			const r = document.createRange();
			r.selectNodeContents(row.querySelector('.code'));
			const s = document.getSelection();
			s.removeAllRanges();
			s.addRange(r);
		})()`, nil)
		b.waitFor("the Comment button", `!document.getElementById('range-ops').hidden`)
		b.do(chromedp.KeyEvent("c"))
		b.waitFor("the comment box", `!!document.querySelector('#diff .composer textarea')`)
		// Longer than the daemon takes for one entry (64 KiB).
		b.eval(`(() => {
			const ta = document.querySelector('#diff .composer textarea');
			ta.value = 'x'.repeat(70000);
			ta.dispatchEvent(new Event('input'));
			document.querySelector('#diff .composer button.send').click();
		})()`, nil)
		b.waitFor("the box back with the reason, and no thread left behind", `(() => {
			const err = document.querySelector('#diff .composer .error-text');
			return err && err.textContent.startsWith('Refused: ') && err.textContent.length > 'Refused: '.length &&
				document.querySelector('#diff .composer textarea').value.length === 70000 &&
				document.querySelectorAll('#diff .thread[data-annotation]').length === 2;
		})()`)
		b.shot("12-refused")
		b.click(`#diff .composer button.cancel`, `#diff .composer button.cancel`)
		b.waitFor("the box gone", `!document.querySelector('#diff .composer')`)
		if n := len(m.State().Annotations); n != 2 {
			t.Errorf("the other client has %d annotations, want 2", n)
		}
	}) {
		return
	}

	if !t.Run("a comment on the whole file; Escape closes the box", func(t *testing.T) {
		b.t, m.t = t, t
		b.click("Comment on file", `#file-comment`)
		b.waitFor("the comment box", `!!document.querySelector('#diff .composer textarea')`)
		b.do(chromedp.SendKeys(`#diff .composer textarea`, "never sent"), chromedp.KeyEvent(kb.Escape))
		b.waitFor("the box gone after Escape", `!document.querySelector('#diff .composer')`)
		b.click("Comment on file", `#file-comment`)
		b.waitFor("the comment box", `!!document.querySelector('#diff .composer textarea')`)
		b.do(chromedp.SendKeys(`#diff .composer textarea`, "The whole file, please."))
		b.click("Send", `#diff .composer button.send`)
		st := m.Wait("the whole-file comment", func(st protocol.AnnotationsState) bool {
			return slices.ContainsFunc(st.Annotations, func(a protocol.Annotation) bool {
				return slices.Equal(entryTexts(&a), []string{"The whole file, please."})
			})
		})
		for _, a := range st.Annotations {
			if slices.Contains(entryTexts(&a), "never sent") {
				t.Errorf("the text of a box closed with Escape was sent: %+v", a)
			}
			if slices.Equal(entryTexts(&a), []string{"The whole file, please."}) && (a.Range != nil || a.TurnID != turnID) {
				t.Errorf("whole-file comment: turn %q range %+v, want turn %q and no range", a.TurnID, a.Range, turnID)
			}
		}
	}) {
		return
	}

	t.Run("the working tree view follows the lines", func(t *testing.T) {
		b.t, m.t = t, t
		b.click(`#catalog li[data-kind="uncommitted"]`, `#catalog li[data-kind="uncommitted"]`)
		b.waitFor("the uncommitted changes", `document.getElementById('cs-label').textContent === 'Uncommitted Changes' && document.getElementById('cs-status').textContent === 'ready'`)
		// Two lines more at the top: the commented lines move down by two.
		writeFile(t, repo, "a.txt", "new 1\nnew 2\n"+turnA)
		m.Wait("the comment moved down two lines", func(st protocol.AnnotationsState) bool { return hasPlace(st, pageID, protocol.PlaceMoved, 36) })
		b.waitFor("the thread under line 38 of the working tree", `(() => {
			const th = document.querySelector('#diff .thread[data-annotation=`+js(pageID)+`]');
			return th && th.closest('tr') && th.closest('tr').previousElementSibling.dataset.a === '37' && th.querySelector('.where').textContent === 'Lines 37–38';
		})()`)
		b.do(chromedp.KeyEvent("s"))
		b.waitFor("side by side, the thread still under line 38", `(() => {
			const th = document.querySelector('#diff table.split .thread[data-annotation=`+js(pageID)+`]');
			return th && th.closest('tr').previousElementSibling.dataset.a === '37';
		})()`)
		b.do(darkMode(true))
		b.shot("13-threads-split-dark")
		b.do(darkMode(false), chromedp.KeyEvent("s"))
	})

	// With no turn running, the working tree is no turn's version: a
	// comment on lines added since the baseline goes on those very lines
	// of a snapshot of the working tree (TestBrowserCommentAnchors has the
	// other views, TestBrowserCommentsReachTheAgent what the agent is told).
	t.Run("a comment on the working tree's new lines stays on them", func(t *testing.T) {
		b.t, m.t = t, t
		writeFile(t, repo, "b.txt", "bee\nhive\n")
		// commentOn comments on the added lines of path in the working
		// tree and returns the new annotation.
		commentOn := func(path, text string) protocol.Annotation {
			t.Helper()
			b.click(path+"'s row", `#files li.file[data-path=`+js(path)+`]`)
			b.waitFor(path+"'s diff", `document.getElementById('diff-path').textContent === `+js(path)+` && document.querySelectorAll('#diff table.unified tr.line.add').length > 0`)
			b.eval(`(() => {
				const rows = [...document.querySelectorAll('#diff tr.line.add')];
				const r = document.createRange();
				r.setStart(rows[0].querySelector('.code').firstChild, 0);
				r.setEnd(rows[rows.length - 1].querySelector('.code').firstChild, 1);
				const s = document.getSelection();
				s.removeAllRanges();
				s.addRange(r);
			})()`, nil)
			b.waitFor("the Comment button", `!document.getElementById('range-ops').hidden`)
			b.click("the Comment button", `#range-comment`)
			b.waitFor("the comment box, filled in", `(() => {
				const t = document.querySelector('#diff .composer textarea');
				if (!t) return false;
				t.value = `+js(text)+`;
				t.dispatchEvent(new Event('input', { bubbles: true }));
				return true;
			})()`)
			b.click("Send", `#diff .composer button.send`)
			st := m.Wait(text, func(st protocol.AnnotationsState) bool {
				return slices.ContainsFunc(st.Annotations, func(a protocol.Annotation) bool { return slices.Equal(entryTexts(&a), []string{text}) })
			})
			i := slices.IndexFunc(st.Annotations, func(a protocol.Annotation) bool { return slices.Equal(entryTexts(&a), []string{text}) })
			return st.Annotations[i]
		}
		onSnapshot := func(a protocol.Annotation) bool {
			id, _ := a.Meta[protocol.MetaSnapshot].(string)
			return a.TurnID == "baseline" && id != ""
		}
		// a.txt's added lines: "new 1" and "new 2" at the top, then the
		// turn's two, which replaced the baseline's line 35: the working
		// tree's lines 0–37, each where the reviewer selected it.
		if a := commentOn("a.txt", "All of it?"); !onSnapshot(a) || a.Range == nil || *a.Range != (protocol.TextRange{Start: protocol.TextPosition{Line: 0}, End: protocol.TextPosition{Line: 38}}) {
			t.Errorf("a.txt: turn %q range %+v meta %v, want the working tree's lines 0–37 (to the start of 38) on a snapshot", a.TurnID, a.Range, a.Meta)
		}
		// b.txt's "hive" is new since the baseline: its own line, 1.
		if a := commentOn("b.txt", "A hive?"); !onSnapshot(a) || a.Range == nil || *a.Range != (protocol.TextRange{Start: protocol.TextPosition{Line: 1}, End: protocol.TextPosition{Line: 2}}) {
			t.Errorf("b.txt: turn %q range %+v meta %v, want the working tree's line 1 on a snapshot", a.TurnID, a.Range, a.Meta)
		}
		b.waitFor("b.txt's badge", fileRow("b.txt")+`?.querySelector('.cbadge')?.textContent === '1'`)
	})
}

// TestBrowserCommentPlacement checks where the page shows a thread in a
// view of a file, and how it reads an entry's text: on the working tree
// by the lines the daemon tracks, on a turn by the annotation's own
// range, elsewhere above the diff with a note; {markdown} as plain text.
func TestBrowserCommentPlacement(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t)
	openBlank(t, b, d)
	var got map[string]any
	b.eval(`import('/assets/comments.js').then(({ placeThreads, plainText, linesLabel, wholeLines }) => {
		const r = (a, z) => ({ start: { line: a, character: 0 }, end: { line: z, character: 3 } });
		const cur = (status, range) => ({ 'changesetd/current': range ? { status, range } : { status } });
		const f = 'file:///w/a.txt';
		const list = [
			{ id: 'same', turnId: 't1', resource: f, range: r(4, 5), _meta: cur('same') },
			{ id: 'moved', turnId: 't1', resource: f, range: r(1, 1), _meta: cur('moved', r(9, 9)) },
			{ id: 'edited', turnId: 't2', resource: f, range: r(2, 3), _meta: cur('edited', r(2, 6)) },
			{ id: 'gone', turnId: 't1', resource: f, range: r(7, 8), _meta: cur('gone') },
			{ id: 'file', turnId: 't1', resource: f, _meta: cur('same') },
			{ id: 'untracked', turnId: 'baseline', resource: f, range: r(0, 0) },
			{ id: 'other', turnId: 't1', resource: 'file:///w/b.txt', range: r(0, 0) },
		];
		const show = ({ inline, file }) => ({
			inline: inline.map((x) => [x.a.id, x.range.start.line, x.range.end.line, x.note]),
			file: file.map((x) => [x.a.id, x.note]),
		});
		const name = (id) => 'turn ' + id;
		return {
			live: show(placeThreads(list, [f], { live: true }, name)),
			turn: show(placeThreads(list, [f], { turn: 't1' }, name)),
			labels: [linesLabel(wholeLines(10, 11)), linesLabel(r(3, 3)), linesLabel({ start: { line: 3, character: 0 }, end: { line: 3, character: 0 } }), linesLabel(undefined)],
			text: [plainText('a <b>b</b> **c**'), plainText({ markdown: '## Why\n**bold** and `+"`code`"+` in [the docs](https://x.test/d) snake_case' }), plainText(null)],
		};
	})`, &got)
	want := map[string]any{
		"live": map[string]any{
			"inline": []any{
				[]any{"untracked", 0.0, 0.0, ""},
				[]any{"same", 4.0, 5.0, ""},
				[]any{"edited", 2.0, 6.0, "edited since"},
				[]any{"moved", 9.0, 9.0, "moved from line 2"},
			},
			"file": []any{[]any{"gone", "Lines 8–9: these lines are gone"}, []any{"file", ""}},
		},
		"turn": map[string]any{
			"inline": []any{[]any{"moved", 1.0, 1.0, ""}, []any{"same", 4.0, 5.0, ""}, []any{"gone", 7.0, 8.0, ""}},
			"file": []any{
				[]any{"edited", "Lines 3–4 of turn t2"},
				[]any{"file", ""},
				[]any{"untracked", "Line 1 of turn baseline"},
			},
		},
		"labels": []any{"Lines 11–12", "Line 4", "Line 4", "Whole file"},
		"text":   []any{"a <b>b</b> **c**", "Why\nbold and code in the docs (https://x.test/d) snake_case", ""},
	}
	for k, w := range want {
		gb, _ := json.Marshal(got[k])
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("%s:\n got %s\nwant %s", k, gb, wb)
		}
	}
}
