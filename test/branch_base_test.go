package test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// branchRepo is a clone on branch feature, which tracks origin/feature:
// main has base.txt; feature adds pushed.txt (pushed) and local.txt (not
// pushed); work.txt is a working-tree change.
func branchRepo(t *testing.T) string {
	t.Helper()
	origin := filepath.Join(t.TempDir(), "origin.git")
	git(t, filepath.Dir(origin), "init", "-q", "--bare", "-b", "main", origin)
	seed := gitRepo(t, map[string]string{"base.txt": "base\n"})
	git(t, seed, "remote", "add", "origin", origin)
	git(t, seed, "push", "-q", "origin", "main")
	repo := filepath.Join(t.TempDir(), "clone")
	git(t, filepath.Dir(repo), "clone", "-q", origin, repo)
	if real, err := filepath.EvalSymlinks(repo); err == nil {
		repo = real
	}
	git(t, repo, "checkout", "-q", "-b", "feature")
	writeFile(t, repo, "pushed.txt", "pushed\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "pushed")
	git(t, repo, "push", "-q", "-u", "origin", "feature")
	writeFile(t, repo, "local.txt", "local\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "local")
	writeFile(t, repo, "work.txt", "work\n")
	return repo
}

// branchView is the branch entry's description and the branch
// changeset's files, seen by a fresh client.
func branchView(t *testing.T, d *daemon, repo, name string, want []string) string {
	t.Helper()
	c := d.client(t, name)
	defer c.Close()
	sum := onlySession(t, c)
	entry := catalogue(t, c, sum.Resource)[protocol.KindBranch]
	m := mirrorChangeset(t, c, expand(t, entry.URITemplate, nil))
	var got []string
	m.Wait("branch files "+strings.Join(want, " "), func(st protocol.ChangesetState) bool {
		got = got[:0]
		for _, f := range st.Files {
			got = append(got, strings.TrimPrefix(f.ID, "file://"+repo+"/"))
		}
		slices.Sort(got)
		return ready(st) && slices.Equal(got, want)
	})
	return entry.Description
}

// The branch changeset compares with the current branch's upstream by
// default; a base chosen for the session replaces it, is named in the
// catalogue, survives kill -9, and goes back with ""; a base that names
// no commit is refused and changes nothing; --base sets the daemon's.
func TestBranchBase(t *testing.T) {
	t.Parallel()
	repo := branchRepo(t)
	state := t.TempDir()
	d := startDaemonIn(t, state, repo)
	desc := branchView(t, d, repo, "a", []string{"local.txt", "work.txt"})
	if want := "origin/feature (the upstream of feature)"; !strings.Contains(desc, want) {
		t.Errorf("default description %q does not name %q", desc, want)
	}

	c := d.client(t, "chooser")
	sessionURI := onlySession(t, c).Resource
	set := func(base string) error {
		return c.Call(ctx(t), protocol.MethodSetBranchBase, map[string]any{"channel": sessionURI, "base": base}, nil)
	}
	if err := set("main"); err != nil {
		t.Fatal(err)
	}
	if desc := branchView(t, d, repo, "b", []string{"local.txt", "pushed.txt", "work.txt"}); !strings.Contains(desc, "main (chosen for this session)") {
		t.Errorf("chosen base: description %q", desc)
	}
	err := set("no-such-branch")
	if err == nil || !strings.Contains(err.Error(), "no-such-branch") || protocol.CodeOf(err) != protocol.CodeInvalidParams {
		t.Errorf("a base naming no commit: %v, want InvalidParams naming it", err)
	}
	if err := set("--upload-pack=x"); err == nil {
		t.Error("a base that looks like an option was accepted")
	}
	c.Close()

	d.kill(t)
	d = startDaemonIn(t, state, repo)
	if desc := branchView(t, d, repo, "c", []string{"local.txt", "pushed.txt", "work.txt"}); !strings.Contains(desc, "main (chosen for this session)") {
		t.Errorf("after kill -9: description %q", desc)
	}
	c = d.client(t, "resetter")
	if err := c.Call(ctx(t), protocol.MethodSetBranchBase, map[string]any{"channel": sessionURI, "base": ""}, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if desc := branchView(t, d, repo, "d", []string{"local.txt", "work.txt"}); !strings.Contains(desc, "the upstream of feature") {
		t.Errorf("after going back to the default: %q", desc)
	}
	d.kill(t)

	d = startDaemonIn(t, t.TempDir(), "--base", "main", repo)
	if desc := branchView(t, d, repo, "e", []string{"local.txt", "pushed.txt", "work.txt"}); !strings.Contains(desc, "main (the daemon's --base)") {
		t.Errorf("--base main: description %q", desc)
	}
}
