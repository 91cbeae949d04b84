package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/session"
)

func TestAllowHostPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"*.app.github.dev", "x-7878.app.github.dev", true},
		{"*.app.github.dev", "a.b.app.github.dev", true},
		{"*.app.github.dev", "X.APP.GitHub.dev", true},
		{"*.app.github.dev", "app.github.dev", false},
		{"*.app.github.dev", ".app.github.dev", false},
		{"*.app.github.dev", "evilapp.github.dev", false},
		{"*.app.github.dev", "x.app.github.dev.evil.example", false},
		{"ide.example", "IDE.example", true},
		{"ide.example", "x.ide.example", false},
	} {
		if got := matchHost(tc.pattern, tc.host); got != tc.want {
			t.Errorf("matchHost(%q, %q) = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
	for _, ok := range []string{"ide.example", "ide.example:443", "*.app.github.dev", "changesetd", "10.0.0.1", "[::1]:80"} {
		if err := checkHostPattern(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"*", "*.", "a*.example", "*.*.example", "x.*.example", "ide..example", "-ide.example", "ide example", "https://ide.example"} {
		err := (Config{AllowHosts: []string{bad}}).Validate()
		if err == nil || !strings.Contains(err.Error(), "--allow-host") {
			t.Errorf("%q: %v, want an error naming --allow-host", bad, err)
		}
	}
}

// TestRefusalsNameTheFlag: every route refuses a foreign Host with the
// --allow-host hint, a wildcard pattern admits the names under it, and a
// foreign Origin is refused with the --allow-origin hint.
func TestRefusalsNameTheFlag(t *testing.T) {
	m := session.NewManager(session.Options{})
	defer m.Close()
	srv := New(Config{Token: "t", AllowHosts: []string{"*.app.github.dev"}}, m, nil)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	get := func(path, host, origin string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/", "/healthz", "/metrics", "/ahp?token=t", "/assets/app.js"} {
		code, body := get(path, "attacker.example", "")
		if code != http.StatusForbidden || !strings.Contains(body, "--allow-host attacker.example") {
			t.Errorf("%s for a foreign Host: %d %q, want 403 naming --allow-host", path, code, body)
		}
	}
	for _, path := range []string{"/", "/healthz"} {
		if code, body := get(path, "x-7878.app.github.dev", ""); code != http.StatusOK {
			t.Errorf("%s for a host under the wildcard: %d %q", path, code, body)
		}
		if code, _ := get(path, "127.0.0.1", ""); code != http.StatusOK {
			t.Errorf("%s on loopback: %d", path, code)
		}
	}
	code, body := get("/ahp?token=t", "127.0.0.1", "https://evil.example")
	if code != http.StatusForbidden || !strings.Contains(body, "--allow-origin https://evil.example") {
		t.Errorf("foreign Origin: %d %q, want 403 naming --allow-origin", code, body)
	}
}
