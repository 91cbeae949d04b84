package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestPageSameOrigin: the review page may connect from its own origin
// also when that is not a loopback one (a daemon listening on a LAN
// address); any other origin is still refused.
func TestPageSameOrigin(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ctx := testCtx(t)
	s := startServer(t)
	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"same origin on a LAN address", "192.0.2.7:7878", "http://192.0.2.7:7878", http.StatusSwitchingProtocols},
		{"other address", "192.0.2.7:7878", "http://192.0.2.8:7878", http.StatusForbidden},
		{"other port", "192.0.2.7:7878", "http://192.0.2.7:9999", http.StatusForbidden},
		{"origin with a path", "192.0.2.7:7878", "http://192.0.2.7:7878/x", http.StatusForbidden},
		{"rebound name", "attacker.example:7878", "http://attacker.example:7878", http.StatusForbidden},
	} {
		c, resp, err := dial(ctx, s.ws+"?token=t", http.Header{"Host": {tc.host}, "Origin": {tc.origin}})
		if resp == nil {
			t.Errorf("%s: no response: %v", tc.name, err)
			continue
		}
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d (err %v)", tc.name, resp.StatusCode, tc.want, err)
		}
		if c != nil {
			if err := c.closeNormally(ctx); err != nil {
				t.Errorf("%s: close: %v", tc.name, err)
			}
		}
	}
	s.stop(t)
	goleak.VerifyNone(t, ignore)
}

// TestPageServed: the page and its assets are served without a token
// under a strict CSP, and nothing else is.
func TestPageServed(t *testing.T) {
	s := startServer(t)
	defer s.stop(t)
	get := func(method, path, host string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, s.ts.URL+path, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, body := get("GET", "/", "")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self' ws://" + strings.TrimPrefix(s.ts.URL, "http://"), "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q allows unsafe sources", csp)
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, " onclick=") || strings.Contains(body, " style=") {
		t.Errorf("index.html has inline script or style")
	}
	if strings.Contains(body, "token=t") || strings.Contains(body, `"t"`) {
		t.Errorf("index.html carries the token")
	}
	for path, ctype := range map[string]string{"/assets/app.js": "text/javascript", "/assets/ahp.js": "text/javascript", "/assets/app.css": "text/css"} {
		resp, _ := get("GET", path, "")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s = %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	for _, tc := range []struct {
		method, path, host string
		want               int
	}{
		{"GET", "/assets/", "", http.StatusNotFound},
		{"GET", "/assets/nope.js", "", http.StatusNotFound},
		{"GET", "/assets/index.html", "", http.StatusNotFound},
		{"GET", "/assets/%2e%2e/web.go", "", http.StatusNotFound},
		{"GET", "/favicon.ico", "", http.StatusOK},
		{"GET", "/favicon.png", "", http.StatusNotFound},
		{"POST", "/", "", http.StatusMethodNotAllowed},
		{"GET", "/", "attacker.example", http.StatusForbidden},
		{"GET", "/assets/app.js", "attacker.example", http.StatusForbidden},
	} {
		if resp, _ := get(tc.method, tc.path, tc.host); resp.StatusCode != tc.want {
			t.Errorf("%s %s (Host %q) = %d, want %d", tc.method, tc.path, tc.host, resp.StatusCode, tc.want)
		}
	}
}
