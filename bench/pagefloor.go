package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/chromedp/chromedp"
)

// The floor page is what any page showing the changeset must do, and
// nothing more: open the same WebSocket, initialize, list the sessions,
// subscribe to the first one and to its uncommitted changeset, and render
// the first rows of a plain virtual list of its files. bench -page loads
// it in the same Chromium as the review page, so that the review page's
// navigation is measured against what the browser itself costs.

const floorHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>floor</title>
<script src="/floor.js" defer></script></head>
<body style="margin:0;font:14px system-ui"><div id="files" style="height:800px;overflow:auto;position:relative"></div></body></html>
`

const floorJS = `performance.mark('floor:script'); window.__floorListed = new Promise((resolve, reject) => {
  const p = new URLSearchParams(location.hash.slice(1));
  const ws = new WebSocket(p.get('ws'), ['changesetd.v1', 'changesetd.token.' + p.get('token')]);
  let id = 0;
  const waiting = new Map();
  // The lines added, kept up to date from the changeset's fileSets: what
  // bench -page's burst reads, with when each total was reached
  // (window.__floorAdded, window.__floorLog).
  let csUri = '';
  const added = new Map();
  window.__floorAdded = 0;
  window.__floorLog = [];
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); return; }
    const env = m.method === 'action' && m.params;
    if (!env || env.channel !== csUri) return;
    const a = env.action;
    const set = (f) => {
      const n = (f.edit.diff && f.edit.diff.added) || 0;
      window.__floorAdded += n - (added.get(f.id) || 0);
      added.set(f.id, n);
    };
    // A burst comes as fileSets, or as one contentChanged with every file.
    if (a.type === 'changeset/fileSet') set(a.file);
    else if (a.type === 'changeset/contentChanged') { added.clear(); window.__floorAdded = 0; (a.files || []).forEach(set); }
    else return;
    window.__floorLog.push([Date.now(), window.__floorAdded]);
  };
  ws.onerror = () => reject(new Error('floor: the socket failed'));
  const call = (method, params) => new Promise((r) => { waiting.set(++id, r); ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params })); });
  ws.onopen = async () => {
    performance.mark('floor:open');
    await call('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: 'bench-floor-' + Math.random(), initialSubscriptions: ['ahp-root://'] });
    const l = await call('listSessions', { channel: 'ahp-root://' });
    const s = await call('subscribe', { channel: l.result.items[0].resource });
    const c = s.result.snapshot.state.changesets.find((x) => x.changeKind === 'uncommitted');
    csUri = c.uriTemplate;
    performance.mark('floor:subscribe-changeset');
    const cs = await call('subscribe', { channel: c.uriTemplate });
    performance.mark('floor:changeset');
    csUri = cs.result.snapshot.resource || csUri;
    const files = cs.result.snapshot.state.files;
    for (const f of files) {
      const n = (f.edit.diff && f.edit.diff.added) || 0;
      added.set(f.id, n);
      window.__floorAdded += n;
    }
    const box = document.getElementById('files');
    const ROW = 28;
    const spacer = document.createElement('div');
    spacer.style.height = files.length * ROW + 'px';
    box.append(spacer);
    const n = Math.min(files.length, Math.ceil(box.clientHeight / ROW) + 10);
    for (let i = 0; i < n; i++) {
      const f = files[i];
      const row = document.createElement('div');
      row.style.cssText = 'position:absolute;left:0;right:0;height:' + ROW + 'px;top:' + i * ROW + 'px';
      const d = f.edit.diff || {};
      row.textContent = (f.edit.after || f.edit.before).uri.split('/').pop() + '  +' + (d.added || 0) + ' −' + (d.removed || 0);
      box.append(row);
    }
    // Shown: painted in the frame that follows.
    requestAnimationFrame(() => resolve(performance.now()));
  };
});
`

// floorServer serves the floor page on a loopback port of its own; the
// daemon admits it as a loopback origin.
type floorServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

func startFloor() (*floorServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/floor.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		fmt.Fprint(w, floorHTML)
	})
	mux.HandleFunc("/floor.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		fmt.Fprint(w, floorJS)
	})
	f := &floorServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, done: make(chan error, 1)}
	go func() { f.done <- f.srv.Serve(ln) }()
	return f, nil
}

// url is the floor page for the daemon whose socket is ws (ws://host/ahp?token=…).
func (f *floorServer) url(ws string) (string, error) {
	u, err := url.Parse(ws)
	if err != nil {
		return "", err
	}
	token := u.Query().Get("token")
	u.RawQuery = ""
	return fmt.Sprintf("http://%s/floor.html#ws=%s&token=%s", f.ln.Addr(), url.QueryEscape(u.String()), url.QueryEscape(token)), nil
}

// Close stops the server and waits for it.
func (f *floorServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := f.srv.Shutdown(ctx)
	if serr := <-f.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// reloadTimed reloads the page at u, navigating to it first (untimed)
// when the tab shows another, and returns the time done resolves to:
// milliseconds from the reload's start, as the page's performance.now()
// counts them. With BENCH_PAGE_STEPS=1 it prints the page's marks
// (performance.mark) of each reload after what, named name.
func reloadTimed(b context.Context, name, u, done string) (time.Duration, error) {
	at, err := chromedp.Run(b, chromedp.Location())
	if err != nil {
		return 0, err
	}
	if !samePage(at, u) {
		if err := do(b, chromedp.Navigate(u)); err != nil {
			return 0, fmt.Errorf("navigate: %w", err)
		}
		if _, err := evalFloat(b, done); err != nil {
			return 0, err
		}
	}
	if err := do(b, chromedp.Reload()); err != nil {
		return 0, fmt.Errorf("reload: %w", err)
	}
	ms, err := evalFloat(b, done)
	if err != nil {
		return 0, err
	}
	if os.Getenv("BENCH_PAGE_STEPS") != "" {
		// The time origin (Unix ms) lines the marks up with a daemon's
		// log.
		marks, err := chromedp.Run(b, chromedp.Evaluate[string](`performance.timeOrigin.toFixed(3) + ': ' + performance.getEntriesByType('mark').map((m) => m.name + ' ' + m.startTime.toFixed(1)).join(', ')`))
		if err != nil {
			return 0, err
		}
		fmt.Printf("%s reloaded, shown at %.1f ms, from %s\n", name, ms, marks)
	}
	return msDur(ms), nil
}

// samePage reports whether two URLs name the same document, whatever
// their fragments (the review page drops its token from its own).
func samePage(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host == ub.Host && ua.Path == ub.Path
}
