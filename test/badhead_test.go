package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGarbageHeadRefused: a working directory whose .git/HEAD git would
// not accept ("not a git repository") gets no session: the daemon names
// the file instead of taking every committed file for new (a revert of
// which would delete them).
func TestGarbageHeadRefused(t *testing.T) {
	t.Parallel()
	good := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, good)
	c := d.client(t, "ide")

	bad := gitRepo(t, map[string]string{"b.txt": "b\n"})
	head := filepath.Join(bad, ".git", "HEAD")
	if err := os.WriteFile(head, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const uri = "ahp-session:/3f2a9c1e-0000-4000-8000-0000000000c4"
	createSession(t, c, uri, bad)
	subscribe(t, c, uri)
	// The working directory's error is published in the session's _meta.
	err := c.Wait(ctx(t), "the error naming HEAD", func() bool {
		for _, f := range c.Frames() {
			if strings.Contains(string(f), head) && strings.Contains(string(f), "neither") {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	if cat := catalogue(t, c, uri); cat["uncommitted"].URITemplate != "" {
		t.Errorf("an uncommitted changeset is offered for a directory git does not take for a repository")
	}
	if b, _ := os.ReadFile(filepath.Join(bad, "b.txt")); string(b) != "b\n" {
		t.Errorf("b.txt is %q", b)
	}
}
