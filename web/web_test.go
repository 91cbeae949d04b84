package web

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestAssetsRevalidate: every file carries an ETag of its bytes, and a
// request that names it gets 304 with no body, so a reload of the page
// fetches nothing it already has; another tag gets the file.
func TestAssetsRevalidate(t *testing.T) {
	h := Handler()
	for _, path := range []string{"/", "/assets/app.js", "/assets/app.css"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		tag := rec.Header().Get("ETag")
		if rec.Code != http.StatusOK || len(tag) < 10 || rec.Body.Len() == 0 {
			t.Fatalf("GET %s: %d, ETag %q, %d bytes", path, rec.Code, tag, rec.Body.Len())
		}
		again := httptest.NewRequest(http.MethodGet, path, nil)
		again.Header.Set("If-None-Match", tag)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, again)
		if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s with its ETag: %d, %d bytes, CSP %q; want 304, no body, the CSP", path, rec.Code, rec.Body.Len(), rec.Header().Get("Content-Security-Policy"))
		}
		other := httptest.NewRequest(http.MethodGet, path, nil)
		other.Header.Set("If-None-Match", `"0123456789abcdef01234567"`)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, other)
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Errorf("GET %s with another ETag: %d, %d bytes", path, rec.Code, rec.Body.Len())
		}
	}
}

// TestVersionedAssets: the page names its files under this build's
// version, which are served to be kept for good; another version's
// names are not served.
func TestVersionedAssets(t *testing.T) {
	h := Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	m := regexp.MustCompile(`"/assets/(v[0-9a-f]{16})/app\.js"`).FindStringSubmatch(rec.Body.String())
	if m == nil || strings.Contains(rec.Body.String(), `"/assets/app.js"`) {
		t.Fatalf("the page does not name its files under a version:\n%s", rec.Body.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/assets/"+m[1]+"/app.js", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") || rec.Body.Len() == 0 {
		t.Errorf("a versioned file: %d, Cache-Control %q", rec.Code, rec.Header().Get("Cache-Control"))
	}
	for _, p := range []string{"/assets/v0000000000000000/app.js", "/assets/" + m[1] + "/../app.js", "/assets/" + m[1] + "/index.html", "/assets/" + m[1] + "/"} {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, rec.Code)
		}
	}
}
