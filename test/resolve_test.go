package test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// TestResourceResolveAndList: resourceResolve describes both sides of a
// changed file (type, size, an ISO 8601 mtime for the file on disk) and
// the working directory, and resourceList lists a directory, under the
// confinement of resourceRead: nothing outside a session's working
// directories (-32009), nothing under .git (-32009), and a missing file
// is -32008.
func TestResourceResolveAndList(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "one\ntwo\n", "sub/b.txt": "b\n"})
	writeFile(t, repo, "a.txt", "one\n2\nthree\n")
	outside := filepath.Join(t.TempDir(), "secret")
	writeFile(t, filepath.Dir(outside), "secret", "s\n")
	if err := os.Symlink(outside, filepath.Join(repo, "link")); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, repo)
	c := d.client(t, "stat")
	sum := onlySession(t, c)
	st := mirrorChangeset(t, c, expand(t, catalogue(t, c, sum.Resource)["uncommitted"].URITemplate, nil)).
		Wait("a.txt changed", func(st protocol.ChangesetState) bool { return ready(st) && fileByPath(st, repo, "a.txt") != nil })
	a := fileByPath(st, repo, "a.txt")

	resolve := func(uri string) (protocol.ResourceResolveResult, error) {
		var res protocol.ResourceResolveResult
		err := c.Call(ctx(t), protocol.MethodResourceResolve, map[string]any{"channel": protocol.RootURI, "uri": uri}, &res)
		return res, err
	}
	before, err := resolve(a.Edit.Before.Content.URI)
	if err != nil || before.Type != "file" || before.Size == nil || *before.Size != int64(len("one\ntwo\n")) {
		t.Errorf("resolve the before side %s = %+v, %v; want a file of 8 bytes", a.Edit.Before.Content.URI, before, err)
	}
	after, err := resolve(a.Edit.After.URI)
	if err != nil || after.Type != "file" || after.Size == nil || *after.Size != int64(len("one\n2\nthree\n")) || after.URI != a.Edit.After.URI {
		t.Errorf("resolve the after side %s = %+v, %v; want a file of 12 bytes", a.Edit.After.URI, after, err)
	}
	if mt, err := time.Parse(time.RFC3339Nano, after.Mtime); err != nil || mt.IsZero() {
		t.Errorf("mtime %q is not an ISO 8601 time: %v", after.Mtime, err)
	}
	if dir, err := resolve("file://" + repo); err != nil || dir.Type != "directory" {
		t.Errorf("resolve the working directory = %+v, %v; want a directory", dir, err)
	}
	if l, err := resolve("file://" + filepath.Join(repo, "link")); err != nil || l.Type != "file" || l.Size == nil || *l.Size != int64(len(outside)) {
		t.Errorf("resolve a symbolic link = %+v, %v; want a file the size of its target path, as resourceRead serves it", l, err)
	}
	for uri, code := range map[string]int64{
		"file:///etc/passwd":                           protocol.CodePermissionDenied,
		"file://" + filepath.Join(repo, ".git/config"): protocol.CodePermissionDenied,
		"file://" + filepath.Join(repo, "missing"):     protocol.CodeNotFound,
		"file://" + filepath.Dir(repo):                 protocol.CodePermissionDenied,
	} {
		if _, err := resolve(uri); rpcCode(err) != code {
			t.Errorf("resolve %s: %v, want %d", uri, err, code)
		}
	}

	list := func(uri string) ([]protocol.DirectoryEntry, error) {
		var res protocol.ResourceListResult
		err := c.Call(ctx(t), protocol.MethodResourceList, map[string]any{"channel": protocol.RootURI, "uri": uri}, &res)
		return res.Entries, err
	}
	entries, err := list("file://" + repo)
	want := []protocol.DirectoryEntry{{Name: "a.txt", Type: "file"}, {Name: "link", Type: "file"}, {Name: "sub", Type: "directory"}}
	if err != nil || !slices.Equal(entries, want) {
		t.Errorf("list the working directory = %v, %v; want %v (no .git)", entries, err, want)
	}
	if entries, err := list("file://" + filepath.Join(repo, "sub")); err != nil || !slices.Equal(entries, []protocol.DirectoryEntry{{Name: "b.txt", Type: "file"}}) {
		t.Errorf("list sub = %v, %v", entries, err)
	}
	for uri, code := range map[string]int64{
		"file:///etc":                            protocol.CodePermissionDenied,
		"file://" + filepath.Join(repo, ".git"):  protocol.CodePermissionDenied,
		"file://" + filepath.Join(repo, "a.txt"): protocol.CodeNotFound,
		a.Edit.Before.Content.URI:                protocol.CodeNotFound,
	} {
		if _, err := list(uri); rpcCode(err) != code {
			t.Errorf("list %s: %v, want %d", uri, err, code)
		}
	}
}
