package web

import (
	"io/fs"
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
	for _, path := range []string{"/", "/assets/app.js", "/assets/app.css", "/assets/app.bundle.js"} {
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
	m := regexp.MustCompile(`"/assets/(v[0-9a-f]{16})/app\.css"`).FindStringSubmatch(rec.Body.String())
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

// TestBundleHoldsEveryModule: the page's one bundle holds every module
// app.js imports, found by walking their imports here, and no grammar
// of the highlighter's (those load when a diff needs them). A module
// left out would be fetched on its own, an import level late.
func TestBundleHoldsEveryModule(t *testing.T) {
	read := func(name string) string {
		b, err := static.ReadFile("static/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	imports := regexp.MustCompile(`(?m)^import [^;]*? from '\./([\w.-]+\.js)';`)
	seen := map[string]bool{}
	var walk func(string)
	walk = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		for _, m := range imports.FindAllStringSubmatch(read(name), -1) {
			walk(m[1])
		}
	}
	walk("app.js")
	if len(seen) < 10 {
		t.Fatalf("the page's module graph has %d modules: the import pattern misses them", len(seen))
	}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle(sub)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, name := range b.inputs {
		in[name] = true
		if strings.HasPrefix(name, "hljs-") {
			t.Errorf("the bundle holds the grammar %s", name)
		}
	}
	for name := range seen {
		if !in[name] {
			t.Errorf("%s is imported by the page but not in its bundle (%v)", name, b.inputs)
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(string(b.js)), "//# sourceMappingURL="+mapName) {
		t.Errorf("the bundle does not name its source map")
	}
}

// TestPageLoadsTheBundle: index.html loads the bundle under the build's
// version, served for good, with its source map beside it; app.js is
// not named.
func TestPageLoadsTheBundle(t *testing.T) {
	h := Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	page := rec.Body.String()
	m := regexp.MustCompile(`<script type="module" src="/assets/(v[0-9a-f]{16})/app\.bundle\.js"></script>`).FindStringSubmatch(page)
	if m == nil || strings.Contains(page, "app.js") || strings.Contains(page, "modulepreload") {
		t.Fatalf("the page does not load its bundle alone:\n%s", page)
	}
	for _, name := range []string{bundleName, mapName} {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/assets/"+m[1]+"/"+name, nil))
		if rec.Code != http.StatusOK || rec.Body.Len() < 1000 || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") || rec.Header().Get("ETag") == "" {
			t.Errorf("GET %s: %d, %d bytes, Cache-Control %q, ETag %q", name, rec.Code, rec.Body.Len(), rec.Header().Get("Cache-Control"), rec.Header().Get("ETag"))
		}
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("the source map's Content-Type: %q", ct)
	}
}
