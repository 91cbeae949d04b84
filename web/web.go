package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// Handler serves the page: "/" is index.html and "/assets/<name>" the
// other embedded files, also as "/assets/<version>/<name>", which the
// page names and the browser keeps; "/favicon.ico" is the page's icon.
// Anything else is 404.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	h := &handler{files: sub, etags: etags(sub)}
	h.version = version(h.etags)
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	// The page names its files under the version: a reload asks for the
	// page alone, and the modules come from the browser's cache.
	h.index = []byte(strings.ReplaceAll(string(index), `"/assets/`, `"/assets/`+h.version+`/`))
	h.indexTag = `"` + h.version + `"`
	h.bundle = sync.OnceValue(func() bundleFiles { return makeBundle(sub) })
	return h
}

// bundleFiles is the bundle and its source map as served, with their
// ETags.
type bundleFiles struct {
	js, sourceMap    []byte
	jsTag, sourceTag string
}

// makeBundle bundles the modules. Bundling the embedded files cannot fail
// unless they are broken (the tests bundle them); if it did, the bundle
// is a module that imports app.js, and the page loads unbundled.
func makeBundle(files fs.FS) bundleFiles {
	b, err := bundle(files)
	if err != nil {
		b.js = []byte("// " + strings.ReplaceAll(err.Error(), "\n", " ") + "\nimport './app.js';\n")
		b.sourceMap = []byte(`{"version":3,"sources":[],"mappings":""}`)
	}
	return bundleFiles{js: b.js, sourceMap: b.sourceMap, jsTag: etagOf(b.js), sourceTag: etagOf(b.sourceMap)}
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

type handler struct {
	files fs.FS
	etags map[string]string // file name -> its ETag, a hash of its bytes
	// version names this set of files: /assets/<version>/<name> never
	// changes, and is cached for good. index is index.html naming its
	// files so, and indexTag its ETag.
	version  string
	index    []byte
	indexTag string
	// bundle is the page's modules as one file, made on first use.
	bundle func() bundleFiles
}

// version is a hash of every file's hash, in name order.
func version(etags map[string]string) string {
	names := make([]string, 0, len(etags))
	for n := range etags {
		names = append(names, n)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n + " " + etags[n] + "\n"))
	}
	return "v" + hex.EncodeToString(h.Sum(nil))[:16]
}

// etags hashes every embedded file once: a reload then costs the browser
// a 304 per file instead of the bytes, and it keeps the modules it has
// already compiled.
func etags(files fs.FS) map[string]string {
	out := map[string]string{}
	fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, name)
		if err != nil {
			return err
		}
		out[name] = etagOf(b)
		return nil
	})
	return out
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name, b, tag := "index.html", h.index, h.indexTag
	forGood := false
	p := r.URL.Path
	if p == "/favicon.ico" {
		// Asked for by browsers whatever the page names.
		p = "/assets/favicon.png"
	}
	if p != "/" {
		rest, ok := strings.CutPrefix(p, "/assets/")
		if v, file, versioned := strings.Cut(rest, "/"); ok && versioned {
			if v != h.version {
				// Another build's file: this daemon does not have it.
				http.NotFound(w, r)
				return
			}
			rest, forGood = file, true
		}
		if !ok || rest == "" || rest != path.Clean(rest) || strings.Contains(rest, "/") || rest == "index.html" {
			http.NotFound(w, r)
			return
		}
		name = rest
		switch name {
		case bundleName:
			bf := h.bundle()
			b, tag = bf.js, bf.jsTag
		case mapName:
			bf := h.bundle()
			b, tag = bf.sourceMap, bf.sourceTag
		default:
			var err error
			if b, err = fs.ReadFile(h.files, name); err != nil {
				http.NotFound(w, r)
				return
			}
			tag = h.etags[name]
		}
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
	// The files are part of the binary: a new daemon may ship new ones
	// under the same names, so the browser revalidates the page and the
	// unversioned names every time, by the hash of the bytes. A
	// versioned name is the same bytes for as long as it exists.
	if forGood {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	hd.Set("ETag", tag)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", contentType(name))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(b)
	}
}

// csp allows this origin's files and a WebSocket back to the same host.
// connect-src names ws:// and wss:// explicitly because 'self' covers
// WebSocket URLs only in browsers that implement CSP level 3 fully.
// Trusted Types are required for every script sink: the page writes HTML
// in one place, the highlighter's output, through the one policy named
// here (highlight.js).
func csp(host string) string {
	const tt = "require-trusted-types-for 'script'; trusted-types changesetd-highlight; "
	if !plainHost(host) {
		return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " + tt +
			"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self' ws://" + host + " wss://" + host + "; " + tt +
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
	case ".map":
		return "application/json"
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
