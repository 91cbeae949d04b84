package source

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestReadFile: what resourceRead serves of a working tree, and what it
// refuses.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	outside := t.TempDir()
	writeFile(t, dir, "a.txt", "alpha\n")
	writeFile(t, dir, ".git/config", "[core]\n")
	writeFile(t, outside, "secret.txt", "no\n")
	must(t, os.Symlink("a.txt", filepath.Join(dir, "link")))
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "escape")))
	writeFile(t, dir, "h.txt", "two names\n")
	must(t, os.Link(filepath.Join(dir, "h.txt"), filepath.Join(dir, "second-name")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	inside := func(path string) (string, string, bool) {
		if rel, ok := strings.CutPrefix(path, dir+"/"); ok && rel != "" {
			return dir, rel, true
		}
		return "", "", false
	}
	read := func(name string, limit int64) (string, error) {
		p := filepath.Join(dir, name)
		b, err := ReadFile("file://"+p, p, limit, inside)
		return string(b), err
	}
	for _, tc := range []struct {
		name  string
		limit int64
		want  string
		code  int64 // 0: read
	}{
		{"a.txt", 100, "alpha\n", 0},
		{"link", 100, "a.txt", 0}, // a symbolic link reads as its target
		{"escape", 100, filepath.Join(outside, "secret.txt"), 0},
		{"missing", 100, "", protocol.CodeNotFound},
		{"fifo", 100, "", protocol.CodeNotFound},
		{".git/config", 100, "", protocol.CodePermissionDenied},
		{"a.txt", 3, "", protocol.CodeInvalidParams},
	} {
		got, err := read(tc.name, tc.limit)
		if tc.code == 0 {
			if err != nil || got != tc.want {
				t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
			}
			continue
		}
		if protocol.CodeOf(err) != tc.code {
			t.Errorf("%s (limit %d): %v, want code %d", tc.name, tc.limit, err, tc.code)
		}
	}
	// Hard links: both names refused, either may lead outside.
	if _, err := read("second-name", 100); protocol.CodeOf(err) != protocol.CodePermissionDenied {
		t.Errorf("hard-linked file: %v, want PermissionDenied", err)
	}
	p := filepath.Join(outside, "secret.txt")
	if _, err := ReadFile("file://"+p, p, 100, inside); protocol.CodeOf(err) != protocol.CodePermissionDenied {
		t.Errorf("file outside: %v, want PermissionDenied", err)
	}
}
