package snapstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLooseObjectUnderAnotherName: a loose object file whose content is
// another object's (copied over it by a tool, or restored from the wrong
// backup) is an error when read, never the other object's content.
func TestLooseObjectUnderAnotherName(t *testing.T) {
	s := openStore(t)
	a, err := s.WriteBlob([]byte("the object asked for\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.WriteBlob([]byte("another object\n"))
	if err != nil {
		t.Fatal(err)
	}
	path := func(oid string) string { return filepath.Join(s.Dir(), "objects", oid[:2], oid[2:]) }
	other, err := os.ReadFile(path(b))
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path(a), 0o644)
	if err := os.WriteFile(path(a), other, 0o444); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadBlob(a)
	if err == nil {
		t.Fatalf("read %s as %q, want an error", a, got)
	}
	if !strings.Contains(err.Error(), b) {
		t.Errorf("error %q does not name what the content hashes to (%s)", err, b)
	}
	if got, err := s.ReadBlob(b); err != nil || string(got) != "another object\n" {
		t.Errorf("the other object: %q, %v", got, err)
	}
}
