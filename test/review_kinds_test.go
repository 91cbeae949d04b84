package test

import (
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
	"github.com/changesetd/changesetd/uritemplate"
)

// echoFrom returns the filesReviewChanged envelope c received on uri with
// the given origin, or nil.
func echoFrom(c *fake.Client, uri, clientID string, seq int64) *fake.Envelope {
	for _, e := range c.Envelopes(uri) {
		if e.Origin != nil && e.Origin.ClientID == clientID && e.Origin.ClientSeq == seq {
			return &e
		}
	}
	return nil
}

func TestReviewOnEveryChangesetKind(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"base.txt": "base\n", "shared.txt": "shared\n"})
	git(t, repo, "checkout", "-q", "-b", "feature")
	writeFile(t, repo, "feat.txt", "feature work\n")
	git(t, repo, "add", "feat.txt")
	git(t, repo, "commit", "-q", "-m", "feature work")
	writeFile(t, repo, "base.txt", "base, edited\n")

	d := startDaemon(t, repo)
	alice, bob := d.client(t, "alice"), d.client(t, "bob")
	sess := onlySession(t, alice).Resource
	cat := catalogue(t, alice, sess)

	t1 := turnStart(t, alice, sess, "first")
	writeFile(t, repo, "t1.txt", "turn one\n")
	turnEnd(t, alice, sess)
	t2 := turnStart(t, alice, sess, "second")
	writeFile(t, repo, "t2.txt", "turn two\n")
	turnEnd(t, alice, sess)

	uriOf := func(kind string, vars uritemplate.Values) string { return expand(t, cat[kind].URITemplate, vars) }
	turnURI := uriOf("turn", uritemplate.Values{"turnId": t1})
	cases := []struct {
		kind, uri, file string
		others          []string // other files that must stay unreviewed
	}{
		{"uncommitted", uriOf("uncommitted", nil), "base.txt", []string{"t1.txt", "t2.txt"}},
		{"branch", uriOf("branch", nil), "feat.txt", []string{"base.txt"}},
		{"session", uriOf("session", nil), "t1.txt", []string{"t2.txt"}},
		{"turn", turnURI, "t1.txt", nil},
		{"compare-turns", uriOf("compare-turns", uritemplate.Values{"originalTurnId": t1, "modifiedTurnId": t2}), "t2.txt", nil},
	}
	mirrors := map[string]*changesetMirror{}
	var seq int64
	for _, tc := range cases {
		if !cat[tc.kind].HasReview() {
			t.Errorf("%s does not advertise review", tc.kind)
			continue
		}
		ma, mb := mirrorChangeset(t, alice, tc.uri), mirrorChangeset(t, bob, tc.uri)
		mirrors[tc.kind] = ma
		want := append([]string{tc.file}, tc.others...)
		st := ma.Wait(tc.kind+" with its files", func(st protocol.ChangesetState) bool {
			if !ready(st) {
				return false
			}
			for _, rel := range want {
				if findFile(st, repo, rel) == nil {
					return false
				}
			}
			return true
		})
		seq++
		review(t, alice, tc.uri, seq, true, findFile(st, repo, tc.file).ID)
		for name, m := range map[string]*changesetMirror{"alice": ma, "bob": mb} {
			st := m.Wait(name+" sees "+tc.file+" reviewed on "+tc.kind, func(st protocol.ChangesetState) bool {
				f := findFile(st, repo, tc.file)
				return f != nil && f.IsReviewed()
			})
			for _, rel := range tc.others {
				if f := findFile(st, repo, rel); f == nil || f.IsReviewed() {
					t.Errorf("%s on %s: %s is %+v, want present and unreviewed", name, tc.kind, rel, f)
				}
			}
		}
		if e := echoFrom(bob, tc.uri, "alice", seq); e == nil || e.RejectionReason != "" || e.Action.ActionType() != "changeset/filesReviewChanged" {
			t.Errorf("bob on %s: echo of alice/%d = %+v", tc.kind, seq, e)
		}
	}
	if t.Failed() {
		return
	}

	// Uncommitted: an edit clears the flag, restoring the content brings it back.
	mu := mirrors["uncommitted"]
	writeFile(t, repo, "base.txt", "base, edited twice\n")
	mu.Wait("base.txt unreviewed after an edit", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "base.txt")
		return ready(st) && f != nil && !f.IsReviewed() && f.Edit.After.Content.Nonce == blobOID([]byte("base, edited twice\n"))
	})
	writeFile(t, repo, "base.txt", "base, edited\n")
	mu.Wait("base.txt reviewed again", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "base.txt")
		return ready(st) && f != nil && f.IsReviewed()
	})

	// A turn changeset's flags survive a restart.
	alice.Close()
	bob.Close()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	d2 := startDaemonIn(t, d.StateDir, repo)
	c2 := d2.client(t, "carol")
	st := mirrorChangeset(t, c2, turnURI).Wait("turn ready after restart", func(st protocol.ChangesetState) bool {
		return ready(st) && findFile(st, repo, "t1.txt") != nil
	})
	if f := findFile(st, repo, "t1.txt"); !f.IsReviewed() {
		t.Errorf("t1.txt on the turn changeset lost its review flag across a restart: %+v", f)
	}
}
