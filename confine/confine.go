// Package confine answers one question for every part of the daemon that
// takes a path from a client: does it lie inside a directory the daemon
// serves? Lexically, and once symbolic links are resolved, so that
// neither "../" nor a link leads out. It also turns file:// URIs into
// paths.
//
// It imports the standard library only, so session, source and scm can
// all use it; paths relative to a working tree (no "..", not into .git,
// no symlinked parent) are checked in scm, where the writes happen.
package confine

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Rel returns path relative to dir when path is dir or lies below it,
// comparing the paths as written (both cleaned, neither resolved).
func Rel(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// Contains reports whether path lies inside dir once both are resolved.
// dir's symbolic links are resolved here; path must already be.
func Contains(dir, path string) bool {
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	_, ok := Rel(rd, path)
	return ok
}

// Under reports whether path lies inside dir both as written and once the
// symbolic links of its deepest existing ancestor are resolved: a path
// that does not exist yet is judged by where it would be created.
func Under(dir, path string) bool {
	if _, ok := Rel(dir, path); !ok {
		return false
	}
	return Contains(dir, ResolveExisting(path))
}

// ResolveExisting resolves symbolic links in the deepest existing
// ancestor of path and appends the rest.
func ResolveExisting(path string) string {
	rest := ""
	for p := path; ; {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// PathFromFileURI returns the clean local path of a file:// URI (host
// empty or localhost).
func PathFromFileURI(uri string) (string, error) {
	rest, ok := strings.CutPrefix(uri, "file://")
	if !ok {
		return "", fmt.Errorf("not a file:// URI")
	}
	if i := strings.IndexByte(rest, '/'); i != 0 {
		if i < 0 || (rest[:i] != "localhost") {
			return "", fmt.Errorf("file URI with a host")
		}
		rest = rest[i:]
	}
	p, err := url.PathUnescape(rest)
	if err != nil {
		return "", err
	}
	return filepath.Clean(filepath.FromSlash(p)), nil
}

// DirFromURI turns a file:// URI into a clean absolute directory path that
// exists: a session's working directory as a client names it.
func DirFromURI(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", fmt.Errorf("working directory %q is not a file:// URI", uri)
	}
	path := filepath.Clean(filepath.FromSlash(u.Path))
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("working directory %q is not absolute", uri)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("working directory %s: %w", path, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("working directory %s is not a directory", path)
	}
	return path, nil
}
