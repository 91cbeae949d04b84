package test

import (
	"os"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// A watched working directory that disappears puts its changesets in
// error with a clear message; the daemon stays up for everyone else and
// the changesets recover when the directory comes back.
func TestWorkingDirectoryRemovedAndRestored(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "b\n")
	other := gitRepo(t, map[string]string{"o.txt": "o\n"})
	d := startDaemon(t, repo, other)
	c := d.client(t, "ide")

	var list protocol.ListSessionsResult
	if err := c.Call(ctx(t), protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &list); err != nil {
		t.Fatal(err)
	}
	uris := map[string]string{}
	for _, s := range list.Items {
		uris[s.WorkingDirectories[0]] = expand(t, catalogue(t, c, s.Resource)["uncommitted"].URITemplate, nil)
	}
	m := mirrorChangeset(t, c, uris["file://"+repo])
	m.Wait("ready", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 1 })
	mo := mirrorChangeset(t, c, uris["file://"+other])
	mo.Wait("other ready", ready)

	moved := repo + ".away"
	if err := os.Rename(repo, moved); err != nil {
		t.Fatal(err)
	}
	st := m.Wait("error status", func(st protocol.ChangesetState) bool { return st.Status == protocol.StatusError })
	if st.Error == nil || st.Error.Message == "" {
		t.Fatalf("error status without ErrorInfo: %+v", st)
	}
	t.Logf("while the directory is gone: %s: %s", st.Error.ErrorType, st.Error.Message)

	// Another session is unaffected.
	writeFile(t, other, "o.txt", "o2\n")
	mo.Wait("other session still live", func(st protocol.ChangesetState) bool {
		return ready(st) && fileByPath(st, other, "o.txt") != nil
	})

	if err := os.Rename(moved, repo); err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "c.txt", "c\n")
	m.Wait("recovered", func(st protocol.ChangesetState) bool {
		return ready(st) && fileByPath(st, repo, "a.txt") != nil && fileByPath(st, repo, "c.txt") != nil
	})
}
