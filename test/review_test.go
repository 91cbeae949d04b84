package test

import (
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

func review(t *testing.T, c *fake.Client, uri string, seq int64, reviewed bool, ids ...string) {
	t.Helper()
	err := c.Notify(protocol.MethodDispatchAction, map[string]any{"channel": uri, "clientSeq": seq, "action": map[string]any{"type": "changeset/filesReviewChanged", "files": ids, "reviewed": reviewed}})
	if err != nil {
		t.Fatal(err)
	}
}

func reviewedIn(st protocol.ChangesetState, root, rel string) bool {
	f := fileByPath(st, root, rel)
	return f != nil && f.IsReviewed()
}

func TestReviewFollowsContentAndSurvivesRestart(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "one\n", "b.txt": "two\n"})
	writeFile(t, repo, "a.txt", "one!\n")
	writeFile(t, repo, "b.txt", "two!\n")
	state := t.TempDir()
	d := startDaemonIn(t, state, repo)
	c := d.client(t, "reviewer")
	uri := expand(t, catalogue(t, c, onlySession(t, c).Resource)["uncommitted"].URITemplate, nil)
	m := mirrorChangeset(t, c, uri)
	st := m.Wait("two files", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 2 })
	review(t, c, uri, 1, true, fileByPath(st, repo, "a.txt").ID, fileByPath(st, repo, "b.txt").ID)
	m.Wait("both reviewed", func(st protocol.ChangesetState) bool {
		return reviewedIn(st, repo, "a.txt") && reviewedIn(st, repo, "b.txt")
	})

	// Editing a.txt clears its flag; b.txt keeps its flag.
	writeFile(t, repo, "a.txt", "one?\n")
	m.Wait("a.txt unreviewed after an edit", func(st protocol.ChangesetState) bool {
		f := fileByPath(st, repo, "a.txt")
		return ready(st) && f != nil && !f.IsReviewed() && f.Edit.After.Content.Nonce != "" && reviewedIn(st, repo, "b.txt")
	})
	// Returning to the reviewed content brings the flag back.
	writeFile(t, repo, "a.txt", "one!\n")
	m.Wait("a.txt reviewed again", func(st protocol.ChangesetState) bool { return ready(st) && reviewedIn(st, repo, "a.txt") })

	// Unreview b.txt, then restart on the same state dir.
	review(t, c, uri, 2, false, fileByPath(m.State(), repo, "b.txt").ID)
	m.Wait("b.txt unreviewed", func(st protocol.ChangesetState) bool { return !reviewedIn(st, repo, "b.txt") })
	c.Close()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	d2 := startDaemonIn(t, state, repo)
	c2 := d2.client(t, "reviewer-2")
	m2 := mirrorChangeset(t, c2, uri)
	st = m2.Wait("ready after restart", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 2 })
	if !reviewedIn(st, repo, "a.txt") || reviewedIn(st, repo, "b.txt") {
		t.Errorf("after restart: a reviewed=%v (want true), b reviewed=%v (want false)", reviewedIn(st, repo, "a.txt"), reviewedIn(st, repo, "b.txt"))
	}
}
