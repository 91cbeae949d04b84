package protocol

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestFixturesUnmodified checks the copy against the shared originals
// when they are present next to the project, so the copy cannot drift.
func TestFixturesUnmodified(t *testing.T) {
	orig := filepath.Join("..", "..", "shared", "ahp", "fixtures")
	if _, err := os.Stat(orig); err != nil {
		t.Skipf("originals not present at %s; nothing to compare", orig)
	}
	n := 0
	err := filepath.WalkDir(orig, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(orig, path)
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Join("..", "testdata", "ahp-fixtures", rel))
		if err != nil {
			t.Errorf("%s: missing from the copy", rel)
			return nil
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: differs from the original", rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d fixture files identical", n)
}
