package session

import (
	"path"
	"path/filepath"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestFileURIsAsBefore: the URIs a changeset's files get, built without
// cleaning and escaping where neither would change them, are the ones
// filepath.Join, net/url and path.Join make, for every root and path.
func TestFileURIsAsBefore(t *testing.T) {
	roots := []string{"/", "/r", "/tmp/repo", "/tmp/repo/", "/tmp//repo", "/tmp/./repo", "/tmp/../repo", "/a b/r", "/ä/r", "/r%20", "/r?x", "/r#x", "relative/r", "", "/x/.hidden", "/x/..y", "/x/y.."}
	rels := []string{"a.txt", "dir/c.txt", "dir/sub/d.txt", "", ".", "..", "a/../b", "a/./b", "a//b", "a/", "/a", "a b", "ä.go", "x%41", "x?y", "x#y", "x:y", "~u", "-._~", ".gitignore", "a/..b/c.."}
	for _, root := range roots {
		for _, rel := range rels {
			want := FileURI(filepath.Join(root, filepath.FromSlash(rel)))
			if got := fileURIUnder(root, rel); got != want {
				t.Errorf("fileURIUnder(%q, %q) = %q, want %q", root, rel, got, want)
			}
		}
	}
	for _, id := range []string{"0193e1c2-1111-7000-8000-000000000000", "", ".", "..", "a/b"} {
		for _, oid := range []string{"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", "", ".", "..", "x/y", "../z"} {
			want := protocol.SessionScheme + "/" + path.Join(id, "blob", oid)
			if got := BlobURI(id, oid); got != want {
				t.Errorf("BlobURI(%q, %q) = %q, want %q", id, oid, got, want)
			}
		}
	}
}
