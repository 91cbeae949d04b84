package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// Handler serves the page: "/" is index.html and "/assets/<name>" the
// other embedded files. Anything else is 404.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return &handler{files: sub}
}

type handler struct {
	files fs.FS
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := "index.html"
	if r.URL.Path != "/" {
		rest, ok := strings.CutPrefix(r.URL.Path, "/assets/")
		if !ok || rest == "" || rest != path.Clean(rest) || strings.Contains(rest, "/") || rest == "index.html" {
			http.NotFound(w, r)
			return
		}
		name = rest
	}
	b, err := fs.ReadFile(h.files, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp(r.Host))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	// The token travels in the fragment, which is never part of a
	// Referer, but nothing on the page needs one anyway.
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	// The assets are part of the binary: a new daemon may ship new ones
	// under the same names, so the browser revalidates every time.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Type", contentType(name))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(b)
	}
}

// csp allows this origin's files and a WebSocket back to the same host.
// connect-src names ws:// and wss:// explicitly because 'self' covers
// WebSocket URLs only in browsers that implement CSP level 3 fully.
func csp(host string) string {
	if !plainHost(host) {
		return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
			"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self' ws://" + host + " wss://" + host + "; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".png":
		return "image/png"
	case ".svg":
		return "image/svg+xml"
	case ".txt":
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// plainHost reports whether host is a bare host[:port] that can be copied
// into a header value as it is.
func plainHost(host string) bool {
	if host == "" {
		return false
	}
	for _, c := range host {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune(".-:[]", c):
		default:
			return false
		}
	}
	return true
}
