package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

// pageConfig is what bench -page measures the review page on.
type pageConfig struct {
	changed, presses, burst, bursts, lines, runs int
	chromium                                     string
}

// runPage measures the review page in headless Chromium against a raw
// client on the same daemon, in one run: navigation until the file list
// shows its count and first rows, against a Node ws client's connect →
// ready on the same path and against a floor page (pagefloor.go) in the
// same browser, the two pages reloaded in turn (and the all-diffs mode
// in turn with the floor page); j to the next painted frame; a burst of
// fileSets applied by the page, against their receipt by a raw client;
// and a long diff's first paint after Load anyway.
func runPage(c config, pc pageConfig) error {
	work, bin, done, err := setUp(c, "changesetd-bench-page-")
	if err != nil {
		return err
	}
	defer done()
	r, err := makeRepo(work, pc.changed*2, max(pc.changed/50, 1), pc.changed-5)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	// The long diff: a new file of pc.lines lines, sorted first.
	var big strings.Builder
	for i := range pc.lines {
		fmt.Fprintf(&big, "const v%d = %d;\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "0-big.js"), []byte(big.String()), 0o644); err != nil {
		return err
	}
	r.untracked = append(r.untracked, "0-big.js")

	d, err := startDaemon(bin, r.dir, work, c.logLevel, 0)
	if err != nil {
		return err
	}
	defer d.kill()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	m, _, err := coldRun(ctx, d, r)
	if err != nil {
		return fmt.Errorf("daemon: %w; stderr in %s", err, d.stderr)
	}
	files := len(r.expected())
	fmt.Printf("daemon ready with %d changed files\n", files)

	raw, err := rawReady(ctx, d, files, pc.runs)
	if err != nil {
		return err
	}

	b, closeBrowser, err := openChromium(pc.chromium)
	if err != nil {
		return err
	}
	defer closeBrowser()
	review := strings.Replace(strings.Replace(d.url, "ws://", "http://", 1), "/ahp?token=", "/#token=", 1)

	// Navigation → the count and the first rows, from the navigation's
	// start (performance.now() is measured from it). The watch starts
	// with the document, before any of the page's scripts, and notes the
	// first animation frame at which the rows are there: it is painted
	// right after, as the floor page's rows are after the frame it asks
	// for. It looks in an animation frame after each change of the
	// document, not in every frame: a loop of frames would keep the
	// renderer drawing while it reads the socket, which the floor page is
	// spared. Asking only after the reload has returned would add the
	// devtools round trip to the page's time, or miss the moment.
	watch := fmt.Sprintf(`const benchWatch = (done) => new Promise((resolve) => {
		let frame = 0;
		const look = () => {
			frame = 0;
			if (done()) { seen.disconnect(); performance.mark('bench:shown'); resolve(performance.now()); }
		};
		const seen = new MutationObserver(() => { if (!frame) frame = requestAnimationFrame(look); });
		seen.observe(document, { childList: true, subtree: true, characterData: true, attributes: true });
	});
	if (location.pathname === '/') window.__listed = benchWatch(() => {
		const t = document.getElementById('totals');
		return t && t.textContent.includes('%d files') && document.querySelectorAll('#files li.file').length >= 10;
	});
	// The all-diffs mode's first screen: every file in the pane's view
	// read and drawn, at least one diff among them.
	if (location.pathname === '/' && localStorage.getItem('changesetd.all') === 'on') window.__allShown = benchWatch(() => {
		const p = document.getElementById('alldiff');
		if (!p || p.hidden || !p.clientHeight) return false;
		const box = p.getBoundingClientRect();
		const shown = [...p.querySelectorAll('section.allfile')].filter((s) => { const r = s.getBoundingClientRect(); return r.bottom > box.top && r.top < box.bottom; });
		return shown.length && shown.every((s) => !s.querySelector('.loading')) && !!p.querySelector('table.difftable');
	});
	window.__long = [];
	new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push([Math.round(e.startTime), Math.round(e.duration)]); }).observe({ type: 'longtask', buffered: true });`, files)
	if _, err := chromedp.Call(b, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watch}); err != nil {
		return fmt.Errorf("installing the watch: %w", err)
	}
	listed := `window.__listed`
	// The first navigation starts the page's renderer process; the timed
	// ones reload the page in it, as a reader does.
	if err := do(b, chromedp.Navigate(review)); err != nil {
		return fmt.Errorf("navigate: %w", err)
	}
	first, err := evalFloat(b, listed)
	if err != nil {
		return fmt.Errorf("waiting for the file list: %w", err)
	}
	// The floor page, served beside the daemon for the whole run. Its
	// first navigation starts its renderer process too.
	fl, err := startFloor()
	if err != nil {
		return err
	}
	defer fl.Close()
	floorURL, err := fl.url(d.url)
	if err != nil {
		return err
	}
	const floorListed = `window.__floorListed`
	if err := do(b, chromedp.Navigate(floorURL)); err != nil {
		return fmt.Errorf("floor: navigate: %w", err)
	}
	if _, err := evalFloat(b, floorListed); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if os.Getenv("BENCH_PAGE_TRACE") != "" {
		fmt.Println("the floor page:")
		if err := traceReload(b, floorListed); err != nil {
			return fmt.Errorf("floor: trace: %w", err)
		}
	}
	// The review page and the floor page are reloaded in turn, each
	// after an untimed navigation back to it: whatever else the machine
	// does over the run weighs on both alike. The review page is shown
	// again after, for what follows.
	inTurn := func(name, done string) (page, floor []time.Duration, err error) {
		for range pc.runs {
			p, err := reloadTimed(b, name, review, done)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			f, err := reloadTimed(b, "the floor page", floorURL, floorListed)
			if err != nil {
				return nil, nil, fmt.Errorf("the floor page: %w", err)
			}
			page, floor = append(page, p), append(floor, f)
		}
		if err := do(b, chromedp.Navigate(review)); err != nil {
			return nil, nil, fmt.Errorf("navigate: %w", err)
		}
		if _, err := evalFloat(b, done); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		return page, floor, nil
	}
	nav, floor, err := inTurn("the review page", listed)
	if err != nil {
		return err
	}
	if os.Getenv("BENCH_PAGE_MARKS") != "" {
		marks, err := chromedp.Run(b, chromedp.Evaluate[string](`JSON.stringify([...performance.getEntriesByType('navigation').map(e => e.toJSON()), ...performance.getEntriesByType('mark').map(m => [m.name, m.startTime]), ...performance.getEntriesByType('resource').map(r => [r.name.split('/').pop(), r.startTime, r.responseEnd]), ['long', window.__long]])`))
		fmt.Println("marks:", marks, err)
	}
	if os.Getenv("BENCH_PAGE_PROFILE") != "" {
		if err := profileReload(b, listed); err != nil {
			return fmt.Errorf("profile: %w", err)
		}
	}
	if os.Getenv("BENCH_PAGE_TRACE") != "" {
		if err := traceReload(b, listed); err != nil {
			return fmt.Errorf("trace: %w", err)
		}
	}
	// The same path as the page's, by a raw client in the same browser:
	// socket, initialize, listSessions, the session, the changeset.
	var inBrowser []time.Duration
	for range pc.runs {
		ms, err := evalFloat(b, `(async () => {
			const t0 = performance.now();
			const ws = new WebSocket(`+"`"+`ws://${location.host}/ahp?token=${sessionStorage.getItem('changesetd.token')}`+"`"+`);
			await new Promise((r) => { ws.onopen = r; });
			let id = 0;
			const w = new Map();
			ws.onmessage = (e) => { const m = JSON.parse(e.data); if (w.has(m.id)) w.get(m.id)(m); };
			const call = (method, params) => new Promise((r) => { w.set(++id, r); ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params })); });
			await call('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: 'bench-in-browser-' + Math.random() });
			const l = await call('listSessions', { channel: 'ahp-root://' });
			const s = await call('subscribe', { channel: l.result.items[0].resource });
			const c = s.result.snapshot.state.changesets.find((x) => x.changeKind === 'uncommitted');
			await call('subscribe', { channel: c.uriTemplate });
			ws.close();
			return performance.now() - t0;
		})()`)
		if err != nil {
			return fmt.Errorf("raw client in the browser: %w", err)
		}
		inBrowser = append(inBrowser, msDur(ms))
	}

	// j → the next painted frame, on the page freshly loaded: the frame
	// after the keydown's work is produced once a message posted from its
	// requestAnimationFrame callback runs.
	if err := do(b, chromedp.Navigate(review)); err != nil {
		return fmt.Errorf("navigate: %w", err)
	}
	if _, err := evalFloat(b, listed); err != nil {
		return fmt.Errorf("waiting for the file list: %w", err)
	}
	const press = `new Promise((resolve) => {
		const t0 = performance.now();
		document.dispatchEvent(new KeyboardEvent('keydown', { key: 'j', bubbles: true }));
		requestAnimationFrame(() => {
			const ch = new MessageChannel();
			ch.port1.onmessage = () => resolve(performance.now() - t0);
			ch.port2.postMessage(0);
		});
	})`
	var keys []time.Duration
	for range pc.presses {
		ms, err := evalFloat(b, press)
		if err != nil {
			return err
		}
		keys = append(keys, msDur(ms))
	}

	// The bursts: pc.burst files get one more line each at once, pc.bursts
	// times on the floor page and as many on the review page, in turn:
	// the daemon's own time for a burst varies from one to the next by
	// more than the pages differ, and one of each compared a lucky burst
	// with an unlucky one. The medians are compared.
	burst := r.modified[:min(pc.burst, len(r.modified))]
	// reached finds when a page first showed total lines added: the
	// burst's total is known once the Go client has every file's new
	// content (an appended line can add more than one line to a file's
	// diff, as git counts it), and the pages log each total they show.
	reached := func(log string, total int) (time.Time, error) {
		at, err := evalFloat(b, fmt.Sprintf(`new Promise((resolve) => {
			const look = () => {
				const hit = (%s || []).find((e) => e[1] === %d);
				if (hit) resolve(hit[0]); else setTimeout(look, 5);
			};
			look();
		})`, log, total))
		return time.UnixMilli(int64(at)), err
	}
	// The floor page receives a burst as the review page will: its time
	// is what receiving the fileSets costs a page.
	floorOnce := func() (time.Duration, error) {
		if _, err := reloadTimed(b, "the floor page", floorURL, floorListed); err != nil {
			return 0, fmt.Errorf("the floor page: %w", err)
		}
		if err := do(b, chromedp.Evaluate[chromedp.Void](`window.__floorLog = []; 0`)); err != nil {
			return 0, err
		}
		t0, _, total, err := saveBurst(ctx, r, m, burst)
		if err != nil {
			return 0, err
		}
		at, err := reached(`window.__floorLog`, total)
		if err != nil {
			got, _ := evalFloat(b, `window.__floorAdded`)
			return 0, fmt.Errorf("floor: the burst: %w (the floor page counts %.0f added lines of %d)", err, got, total)
		}
		return at.Sub(t0), nil
	}
	// The page is done when its totals show every added line; the raw
	// client when its mirror has every file's new content. Each render of
	// the changeset writes its totals anew: the renders are counted per
	// animation frame.
	type burstRenders struct{ Renders, Frames, Most int }
	pageOnce := func() (page, raw time.Duration, renders burstRenders, err error) {
		if err := do(b, chromedp.Navigate(review)); err != nil {
			return 0, 0, renders, fmt.Errorf("navigate: %w", err)
		}
		if _, err := evalFloat(b, listed); err != nil {
			return 0, 0, renders, fmt.Errorf("waiting for the file list: %w", err)
		}
		if err := do(b, chromedp.Evaluate[chromedp.Void](`(() => {
		// A render writes the totals anew; its frame is the animation
		// frame whose time the document's timeline shows while it runs.
		const totals = document.getElementById('totals');
		const c = window.benchRenders = { renders: 0, frames: 0, most: 0 };
		const per = new Map();
		const log = window.benchTotals = [];
		new MutationObserver((records) => {
			for (const r of records) {
				for (const n of r.addedNodes) {
					if (!n.classList || !n.classList.contains('nfiles')) continue;
					const at = document.timeline.currentTime;
					per.set(at, (per.get(at) || 0) + 1);
					c.renders++;
					c.frames = per.size;
					c.most = Math.max(c.most, per.get(at));
				}
			}
			const a = totals.querySelector('.added');
			if (a) log.push([Date.now(), Number(a.textContent.slice(1))]);
		}).observe(totals, { childList: true });
	})(); 0`)); err != nil {
			return 0, 0, renders, err
		}
		t0, raw, total, err := saveBurst(ctx, r, m, burst)
		if err != nil {
			return 0, 0, renders, err
		}
		at, err := reached(`window.benchTotals`, total)
		if err != nil {
			return 0, 0, renders, fmt.Errorf("the review page: the burst: %w", err)
		}
		counted, err := chromedp.Run(b, chromedp.Evaluate[string](`JSON.stringify(window.benchRenders)`))
		if err != nil {
			return 0, 0, renders, err
		}
		if err := json.Unmarshal([]byte(counted), &renders); err != nil {
			return 0, 0, renders, err
		}
		return at.Sub(t0), raw, renders, nil
	}
	var pageBursts, floorBursts, rawBursts []time.Duration
	var renders burstRenders
	for range pc.bursts {
		f, err := floorOnce()
		if err != nil {
			return err
		}
		p, raw, rd, err := pageOnce()
		if err != nil {
			return err
		}
		floorBursts, pageBursts, rawBursts = append(floorBursts, f), append(pageBursts, p), append(rawBursts, raw)
		renders.Renders += rd.Renders
		renders.Frames += rd.Frames
		renders.Most = max(renders.Most, rd.Most)
	}
	pageBurst, floorBurst, rawBurst := median(pageBursts), median(floorBursts), median(rawBursts)

	// The long diff: select it, then time Load anyway to its first paint.
	if err := do(b, chromedp.Evaluate[chromedp.Void](`document.getElementById('files').scrollTop = 0; new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => { document.querySelector('#files li.file[data-path="0-big.js"]').click(); resolve(0); })))`, chromedp.EvalAwaitPromise)); err != nil {
		return err
	}
	bigMs, err := evalFloat(b, `new Promise((resolve, reject) => {
		const wait = () => {
			const btn = document.querySelector('#diff button.load-anyway');
			if (!btn) { requestAnimationFrame(wait); return; }
			const t0 = performance.now();
			btn.click();
			// Its patch is read on the click: the rows come with it. They
			// are painted in the frame after the one that finds them.
			const painted = () => {
				if (!document.querySelector('#diff table.virtual tr.line')) {
					if (performance.now() - t0 > 60000) reject(new Error('no diff rows'));
					else requestAnimationFrame(painted);
					return;
				}
				const ch = new MessageChannel();
				ch.port1.onmessage = () => resolve(performance.now() - t0);
				ch.port2.postMessage(0);
			};
			requestAnimationFrame(painted);
		};
		wait();
	})`)
	if err != nil {
		return err
	}
	rows, err := evalFloat(b, `document.querySelectorAll('#diff tr.line').length`)
	if err != nil {
		return err
	}

	// The all-diffs mode: reloads with it on, to its first screen
	// painted (every file in the view read and drawn).
	if err := do(b, chromedp.Evaluate[chromedp.Void](`localStorage.setItem('changesetd.all', 'on'); 0`)); err != nil {
		return err
	}
	if os.Getenv("BENCH_PAGE_PROFILE") != "" {
		if err := profileReload(b, `window.__allShown`); err != nil {
			return fmt.Errorf("profile: %w", err)
		}
	}
	if os.Getenv("BENCH_PAGE_TRACE") != "" {
		fmt.Println("the all-diffs mode:")
		if err := traceReload(b, `window.__allShown`); err != nil {
			return fmt.Errorf("trace: %w", err)
		}
	}
	allNav, allFloor, err := inTurn("the all-diffs mode", `window.__allShown`)
	if err != nil {
		return err
	}
	if os.Getenv("BENCH_PAGE_MARKS") != "" {
		marks, err := chromedp.Run(b, chromedp.Evaluate[string](`JSON.stringify([...performance.getEntriesByType('mark').map(m => [m.name, m.startTime]), ['long', window.__long]])`))
		fmt.Println("all-diffs marks:", marks, err)
	}
	if err := do(b, chromedp.Evaluate[chromedp.Void](`localStorage.removeItem('changesetd.all'); 0`)); err != nil {
		return err
	}

	navRatio := ratio(median(nav), median(raw))
	fmt.Printf("\n## Review page, %d changed files (Chromium headless, one run, load %s)\n\n", files, loadavg())
	fmt.Println("| measure | page | floor page | ratio | target |")
	fmt.Println("|---|---|---|---|---|")
	fmt.Printf("| navigation (reload) → count and first rows (median of %d) | %s | %s | %.2f× | ≤ 1.2× |\n", pc.runs, fmtDur(median(nav)), fmtDur(median(floor)), ratio(median(nav), median(floor)))
	fmt.Printf("| the all-diffs mode: navigation (reload) → first screen painted (median of %d) | %s | %s | %.2f× | ≤ 2× |\n", pc.runs, fmtDur(median(allNav)), fmtDur(median(allFloor)), ratio(median(allNav), median(allFloor)))
	fmt.Printf("| burst of %d fileSets, save → applied (page) / received (floor page), median of %d in turn | %s | %s | %.2f× | ≤ 2× |\n", len(burst), pc.bursts, fmtDur(pageBurst), fmtDur(floorBurst), ratio(pageBurst, floorBurst))
	fmt.Printf("| the burst's renders: most in one animation frame | %d (%d renders in %d frames) | | | ≤ 1 |\n", renders.Most, renders.Renders, renders.Frames)
	slices.Sort(keys)
	p95 := keys[min(len(keys)-1, (len(keys)*95+99)/100-1)]
	fmt.Printf("| j → next painted frame, %d presses | median %s, p95 %s, worst %s | | | p95 ≤ 50 ms |\n", len(keys), fmtDur(median(keys)), fmtDur(p95), fmtDur(keys[len(keys)-1]))
	fmt.Printf("| %d-line diff, Load anyway → first paint | %s (%.0f rows in the document) | | | ≤ 300 ms |\n", pc.lines, fmtDur(msDur(bigMs)), rows)
	fmt.Println("\nAgainst raw clients:")
	fmt.Println("| measure | page | raw client | ratio |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| navigation (reload) → count and first rows (median of %d) | %s | %s (Node ws connect → ready) | %.2f× |\n", pc.runs, fmtDur(median(nav)), fmtDur(median(raw)), navRatio)
	fmt.Printf("| the same path by a raw client in the page's browser (median of %d) | | %s | %.2f× |\n", pc.runs, fmtDur(median(inBrowser)), ratio(median(nav), median(inBrowser)))
	fmt.Printf("| burst of %d fileSets, save → applied (median of %d) | %s | %s (Go client receives) | %.2f× |\n", len(burst), pc.bursts, fmtDur(pageBurst), fmtDur(rawBurst), ratio(pageBurst, rawBurst))
	fmt.Printf("\nfirst navigation (a new renderer process): %s; reloads: %s; all-diffs reloads: %s; raw: %s; floor page: %s, beside the all-diffs mode: %s\n", fmtDur(msDur(first)), fmtDurs(nav), fmtDurs(allNav), fmtDurs(raw), fmtDurs(floor), fmtDurs(allFloor))
	return nil
}

// rawReady runs bench/page.mjs runs times against the daemon.
func rawReady(ctx context.Context, d *daemon, files, runs int) ([]time.Duration, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("bench -page needs node: %v", err)
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, node, filepath.Join(root, "bench", "page.mjs"), d.url, strconv.Itoa(files), strconv.Itoa(runs)).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("node bench/page.mjs (npm ci --prefix test/node first): %v\n%s", err, out)
	}
	var res struct{ Ready []float64 }
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("node bench/page.mjs: %v: %s", err, out)
	}
	var ds []time.Duration
	for _, ms := range res.Ready {
		ds = append(ds, msDur(ms))
	}
	return ds, nil
}

// openChromium starts headless Chromium with one tab.
func openChromium(path string) (context.Context, func(), error) {
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		return nil, nil, fmt.Errorf("bench -page needs Chromium (apt-get install -y chromium, or -chromium PATH)")
	}
	dir, err := os.MkdirTemp("", "changesetd-bench-chromium-")
	if err != nil {
		return nil, nil, err
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(dir), chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true))
	ctx, cancel := chromedp.NewContext(actx)
	// The browser lives as long as the context of the first run: this one.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		return nil, nil, fmt.Errorf("start %s: %w", path, err)
	}
	return ctx, func() {
		cancel()
		cancelAlloc()
		os.RemoveAll(dir)
	}, nil
}

func do(ctx context.Context, steps ...chromedp.Action[chromedp.Void]) error {
	c, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return chromedp.Do(c, steps...)
}

func evalFloat(ctx context.Context, expr string) (float64, error) {
	c, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return chromedp.Run(c, chromedp.Evaluate[float64](expr, chromedp.EvalAwaitPromise))
}

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// saveBurst appends a line to each of the files at once and waits until
// the bench's Go client has every file's new content (its blob id, as
// git names it). It returns when the saves began, how long the Go
// client took to receive them, and the changeset's lines added then.
func saveBurst(ctx context.Context, r *repo, m *mirror, files []string) (time.Time, time.Duration, int, error) {
	want := map[string]string{}
	contents := make([][]byte, len(files))
	for i, rel := range files {
		old, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(rel)))
		if err != nil {
			return time.Time{}, 0, 0, err
		}
		contents[i] = append(old, "// burst\n"...)
		want["file://"+r.dir+"/"+rel] = plumbing.ComputeHash(plumbing.BlobObject, contents[i]).String()
	}
	t0 := time.Now()
	for i, rel := range files {
		if err := os.WriteFile(filepath.Join(r.dir, filepath.FromSlash(rel)), contents[i], 0o644); err != nil {
			return t0, 0, 0, err
		}
	}
	total := 0
	err := m.wait(ctx, "the burst", func(_ *fake.Envelope, st *protocol.ChangesetState) bool {
		n, got := 0, 0
		for _, f := range st.Files {
			if f.Edit.Diff != nil && f.Edit.Diff.Added != nil {
				n += *f.Edit.Diff.Added
			}
			if id, ok := want[f.ID]; ok && f.Edit.After != nil && f.Edit.After.Content.Nonce == id {
				got++
			}
		}
		total = n
		return got == len(want)
	})
	return t0, time.Since(t0), total, err
}
