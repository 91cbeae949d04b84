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

// TestReadFileConfinedAgainstSymlinkSwap: a directory above the file
// swapped for a symbolic link to outside the session directory, after the
// directories were resolved and checked but before the file is opened,
// does not lead the read outside: every step from the session directory
// down is taken inside it (os.Root), where an open by name would follow
// the new link to the secret.
func TestReadFileConfinedAgainstSymlinkSwap(t *testing.T) {
	resolved := func(d string) string {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return r
		}
		return d
	}
	dir, outside := resolved(t.TempDir()), resolved(t.TempDir())
	writeFile(t, dir, "sub/f.txt", "inside\n")
	writeFile(t, outside, "f.txt", "secret\n")
	inside := func(path string) (string, string, bool) {
		if rel, ok := strings.CutPrefix(path, dir+"/"); ok && rel != "" {
			return dir, rel, true
		}
		return "", "", false
	}

	t.Run("swapped between check and open", func(t *testing.T) {
		// dirOf is the check: ReadFile calls it once it has resolved the
		// directories above the file, and opens the file after it
		// returns. The swap happens in between.
		swapped := false
		swap := func(path string) (string, string, bool) {
			d, rel, ok := inside(path)
			if ok && !swapped {
				must(t, os.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "sub.old")))
				must(t, os.Symlink(outside, filepath.Join(dir, "sub")))
				swapped = true
			}
			return d, rel, ok
		}
		p := filepath.Join(dir, "sub", "f.txt")
		b, err := ReadFile("file://"+p, p, 100, swap)
		if !swapped {
			t.Fatalf("the path was never checked: %q, %v", b, err)
		}
		if strings.Contains(string(b), "secret") {
			t.Fatalf("read %q from outside the session directory through the swapped-in link", b)
		}
		if err == nil && string(b) != "inside\n" {
			t.Errorf("read %q, want the file inside or a refusal", b)
		}
		if err != nil && protocol.CodeOf(err) != protocol.CodePermissionDenied {
			t.Errorf("refused with %v, want PermissionDenied", err)
		}
	})

	t.Run("link in place before the read", func(t *testing.T) {
		// A directory that is a link to outside already: the path names
		// a file inside lexically, which lies outside.
		must(t, os.Symlink(outside, filepath.Join(dir, "out")))
		p := filepath.Join(dir, "out", "f.txt")
		b, err := ReadFile("file://"+p, p, 100, inside)
		if strings.Contains(string(b), "secret") {
			t.Fatalf("read %q from outside the session directory through a linked directory", b)
		}
		if protocol.CodeOf(err) != protocol.CodePermissionDenied {
			t.Errorf("read through a linked directory: %q, %v; want PermissionDenied", b, err)
		}
	})
}
