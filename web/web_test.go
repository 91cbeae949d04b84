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

// Every module the page imports statically is preloaded by index.html:
// one it finds only by walking the imports arrives an import level
// later, after the modules that name it, and the page's first list
// waits for it (two were found 20 ms late). Modules imported lazily
// (the highlighter's languages) are the exception.
func TestEveryStaticImportIsPreloaded(t *testing.T) {
	read := func(name string) string {
		b, err := static.ReadFile("static/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	index := read("index.html")
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
	for name := range seen {
		if name != "app.js" && !strings.Contains(index, `<link rel="modulepreload" href="/assets/`+name+`">`) {
			t.Errorf("%s is imported by the page but not preloaded in index.html", name)
		}
	}
}
