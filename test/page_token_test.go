package test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// sockets records the WebSockets a tab opens: their URLs, the
// subprotocols their handshakes ask for and the text frames sent.
type sockets struct {
	mu        sync.Mutex
	urls      []string
	protocols []string
	sent      []string
}

// frames is the text frames the tab has sent so far.
func (s *sockets) frames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

func (s *sockets) seen() ([]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.urls...), append([]string(nil), s.protocols...)
}

// watchSockets starts recording b's WebSockets.
func watchSockets(t *testing.T, b *browser) *sockets {
	t.Helper()
	s := &sockets{}
	b.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{})
		return err
	}))
	if err := chromedp.Listen(b.ctx, func(ev any) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventWebSocketCreated:
			s.urls = append(s.urls, e.URL)
		case *network.EventWebSocketFrameSent:
			if e.Response != nil && e.Response.Opcode == 1 {
				s.sent = append(s.sent, string(e.Response.PayloadData))
			}
		case *network.EventWebSocketWillSendHandshakeRequest:
			for k, v := range e.Request.Headers {
				if strings.EqualFold(k, "Sec-WebSocket-Protocol") {
					s.protocols = append(s.protocols, v.(string))
				}
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPageTokenNotInURLs: the page takes the token from the printed URL
// once, keeps it out of the address bar, and its WebSocket carries it as a
// subprotocol, never in its URL; the page works so, also after a reload,
// and with Trusted Types enforced its code is still coloured.
func TestPageTokenNotInURLs(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"main.go": "package main\n"})
	writeFile(t, repo, "main.go", "package main\n\nfunc main() {}\n")
	d := startDaemon(t, repo)
	ws := watchSockets(t, b)

	check := func(when string) {
		t.Helper()
		var href string
		b.eval(`location.href`, &href)
		if strings.Contains(href, d.Token) || strings.Contains(href, "token=") {
			t.Errorf("%s: the address bar holds the token: %s", when, href)
		}
		urls, protocols := ws.seen()
		if len(urls) == 0 {
			t.Fatalf("%s: no WebSocket opened", when)
		}
		for _, u := range urls {
			if strings.Contains(u, d.Token) || strings.Contains(u, "token") {
				t.Errorf("%s: a WebSocket URL holds the token: %s", when, u)
			}
		}
		carried := false
		for _, p := range protocols {
			carried = carried || strings.Contains(p, "changesetd.token."+d.Token)
		}
		if !carried {
			t.Errorf("%s: no handshake carried the token as a subprotocol: %q", when, protocols)
		}
	}

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("the page, live, with main.go's diff coloured", `document.getElementById('conn').dataset.state === 'connected' &&
		document.getElementById('diff-path').textContent === 'main.go' && !!document.querySelector('#diff td.code span.hljs-keyword')`)
	check("first load")
	var kept bool
	b.eval(`sessionStorage.getItem('changesetd.token') === `+js(d.Token), &kept)
	if !kept {
		t.Errorf("the token is not kept in the tab's sessionStorage")
	}

	// Trusted Types are enforced: HTML from a string is refused.
	var refused string
	b.eval(`(() => { try { document.createElement('div').innerHTML = '<b>x</b>'; return 'written'; } catch (e) { return e.name; } })()`, &refused)
	if refused != "TypeError" {
		t.Errorf("innerHTML from a string: %s, want a TypeError (require-trusted-types-for 'script')", refused)
	}

	b.do(chromedp.Reload())
	b.waitFor("the page after a reload", `document.getElementById('conn').dataset.state === 'connected' && document.querySelectorAll('#files li.file').length === 1`)
	check("after a reload")
}
