package scm

import (
	"strconv"
	"strings"
	"testing"
)

// TestBlobSize: the size of a stored blob, as git reports it, without its
// content; an id of no object is an error.
func TestBlobSize(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, dir, "a.txt", strings.Repeat("line\n", 1000))
	gitRun(t, dir, "add", "a.txt")
	gitRun(t, dir, "commit", "-qm", "a")
	oid := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD:a.txt"))
	want := strings.TrimSpace(gitRun(t, dir, "cat-file", "-s", oid))
	r := openRepo(t, dir)
	n, err := r.BlobSize(oid)
	if err != nil || strconv.FormatInt(n, 10) != want {
		t.Fatalf("BlobSize(%s) = %d, %v; git says %s", oid, n, err, want)
	}
	if _, err := r.BlobSize(strings.Repeat("0", 40)); err == nil {
		t.Error("BlobSize of no object: no error")
	}
}
