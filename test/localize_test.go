package test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestWrappedTargetsAreDecoded: a file-scope operation and a review
// dispatch name their file as VS Code holds it, wrapped in its agent-host
// URI (either shape) or escaped its own way, and reach the file this
// server names.
func TestWrappedTargetsAreDecoded(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a b.txt": "a\n", "c.txt": "c\n"})
	writeFile(t, repo, "a b.txt", "changed\n")
	writeFile(t, repo, "c.txt", "changed\n")
	e := startOps(t, repo)
	e.waitHas("a b.txt")
	e.waitHas("c.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)

	// Reviewed by its path-wrapped URI, with the space left unescaped.
	wrapped := "vscode-agent-host://127.0.0.1__" + strings.Split(e.d.Addr, ":")[1] + "/file/-" + filepath.Join(repo, "a b.txt")
	review(t, e.c, e.uri, 1, true, wrapped)
	e.m.Wait("a b.txt reviewed", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "a b.txt")
		return f != nil && f.Reviewed != nil && *f.Reviewed
	})

	// Reverted through the query-wrapped shape of newer builds.
	ah := base64.RawURLEncoding.EncodeToString([]byte(`{"scheme":"file","authority":"","query":""}`))
	e.mustInvoke("revert", resTarget("vscode-agent-host://h"+filepath.Join(repo, "c.txt")+"?_ah="+ah), nil)
	e.waitGone("c.txt")
	if b, _ := os.ReadFile(filepath.Join(repo, "c.txt")); string(b) != "c\n" {
		t.Errorf("c.txt after the revert = %q, want its committed bytes", b)
	}
}
