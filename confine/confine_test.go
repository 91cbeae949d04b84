package confine

import (
	"os"
	"path/filepath"
	"testing"
)

func TestConfinement(t *testing.T) {
	top := t.TempDir()
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	dir := filepath.Join(top, "served")
	outside := filepath.Join(top, "outside")
	for _, d := range []string{filepath.Join(dir, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A link inside the served directory that leads out of it, and a
	// link to the served directory from outside.
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(top, "alias")
	if err := os.Symlink(dir, alias); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path          string
		rel, under    bool
		contains      bool // of ResolveExisting(path)
		wantRelResult string
	}{
		{path: dir, rel: true, under: true, contains: true, wantRelResult: "."},
		{path: filepath.Join(dir, "sub", "new.txt"), rel: true, under: true, contains: true, wantRelResult: filepath.Join("sub", "new.txt")},
		{path: filepath.Join(dir, "..", "outside"), rel: false, under: false, contains: false},
		{path: dir + "x", rel: false, under: false, contains: false},
		{path: filepath.Join(dir, "escape", "f.txt"), rel: true, under: false, contains: false, wantRelResult: filepath.Join("escape", "f.txt")},
		{path: filepath.Join(alias, "sub"), rel: false, under: false, contains: true},
	} {
		rel, ok := Rel(dir, filepath.Clean(c.path))
		if ok != c.rel || rel != c.wantRelResult {
			t.Errorf("Rel(%s) = %q %v, want %q %v", c.path, rel, ok, c.wantRelResult, c.rel)
		}
		if got := Under(dir, filepath.Clean(c.path)); got != c.under {
			t.Errorf("Under(%s) = %v, want %v", c.path, got, c.under)
		}
		if got := Contains(dir, ResolveExisting(filepath.Clean(c.path))); got != c.contains {
			t.Errorf("Contains(resolved %s) = %v, want %v", c.path, got, c.contains)
		}
	}
}

func TestPathFromFileURI(t *testing.T) {
	for uri, want := range map[string]string{
		"file:///tmp/a%20b.txt":         "/tmp/a b.txt",
		"file://localhost/tmp/x/../y":   "/tmp/y",
		"file://example.com/etc/passwd": "",
		"http://x/y":                    "",
	} {
		got, err := PathFromFileURI(uri)
		if want == "" {
			if err == nil {
				t.Errorf("PathFromFileURI(%s) = %s, want an error", uri, got)
			}
			continue
		}
		if err != nil || got != filepath.FromSlash(want) {
			t.Errorf("PathFromFileURI(%s) = %q %v, want %q", uri, got, err, want)
		}
	}
}

// TestDirFromURI: a file:// URI of an existing directory gives its clean
// path; anything else is an error naming the URI or the path.
func TestDirFromURI(t *testing.T) {
	dir := t.TempDir()
	if got, err := DirFromURI("file://" + filepath.ToSlash(dir) + "/./"); err != nil || got != dir {
		t.Errorf("DirFromURI(dir) = %q, %v; want %q", got, err, dir)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"file://" + filepath.ToSlash(file), "file://" + filepath.ToSlash(dir) + "/missing", "http://x/y", "file://host/tmp", "file:relative"} {
		if _, err := DirFromURI(uri); err == nil {
			t.Errorf("DirFromURI(%q): no error", uri)
		}
	}
}
