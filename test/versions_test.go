package test

import (
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

// viewOf is the view stamp a changeset state publishes.
func viewOf(st protocol.ChangesetState) string {
	v, _ := reducer.ViewOf(st.Meta)
	return v
}

// An operation names the versions it was made on, and the daemon acts on
// those or refuses naming the files: a revert made on a version the file
// no longer has writes nothing; a range operation that names none is
// refused; a commit of everything refuses a file that appeared since the
// list was shown; a stage made on a view of the index that another
// program changed since is refused. The git binary checks that nothing was
// written.
func TestOperationsActOnShownVersions(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	writeFile(t, repo, "a.txt", "a shown\n")
	e := startOps(t, repo)
	e.waitOffered("commit", protocol.ScopeChangeset)
	st := e.m.Wait("a.txt shown, with a view", func(st protocol.ChangesetState) bool {
		return ready(st) && findFile(st, repo, "a.txt") != nil && viewOf(st) != ""
	})
	shown := versionsOf(st, e.id("a.txt"))
	view := viewOf(st)

	// The file changes after it was shown: a revert of what was shown is
	// refused, naming it, and the new bytes stay.
	writeFile(t, repo, "a.txt", "a rewritten, never shown\n")
	e.m.Wait("the new version published", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "a.txt")
		return ready(st) && f != nil && versionsOf(st, e.id("a.txt"))[e.id("a.txt")].(map[string]any)["after"] != shown[e.id("a.txt")].(map[string]any)["after"]
	})
	_, err := e.invoke("revert", resTarget(e.id("a.txt")), map[string]any{"versions": shown, "view": view})
	if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonFileChanged || !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "changed") {
		t.Errorf("revert of a version no longer there: %v; want -32011 fileChanged naming a.txt", err)
	}
	if got := string(e.disk("a.txt")); got != "a rewritten, never shown\n" {
		t.Errorf("a.txt was written: %q", got)
	}

	// A range operation that names no version is refused.
	_, err = invokeOn(t, e.c, e.uri, "revert", lineTarget(e.id("a.txt"), 0, 0), nil)
	if rpcCode(err) != protocol.CodeInvalidParams || !strings.Contains(err.Error(), "versions") {
		t.Errorf("range revert with no version: %v; want -32602 asking for _meta.versions", err)
	}
	if got := string(e.disk("a.txt")); got != "a rewritten, never shown\n" {
		t.Errorf("a.txt was written: %q", got)
	}

	// A commit of everything, confirmed on a list without secret.env,
	// which appeared meanwhile: refused naming it; HEAD stays.
	st = e.m.Wait("a.txt current", func(st protocol.ChangesetState) bool { return ready(st) && findFile(st, repo, "a.txt") != nil })
	shown, view = versionsOf(st, e.id("a.txt")), viewOf(st)
	head := e.git("rev-parse", "HEAD")
	writeFile(t, repo, "secret.env", "TOKEN=1\n")
	e.waitHas("secret.env")
	_, err = e.invoke("commit", nil, map[string]any{"versions": shown, "view": view, "message": "what was shown"})
	if rpcCode(err) != protocol.CodeConflict || !strings.Contains(err.Error(), "secret.env") {
		t.Errorf("commit on a list without secret.env: %v; want -32011 naming secret.env", err)
	}
	if got := e.git("rev-parse", "HEAD"); got != head {
		t.Errorf("a commit was made: %s", e.git("show", "--stat", "HEAD"))
	}
	if got := e.git("ls-files", "-s", "secret.env"); got != "" {
		t.Errorf("secret.env was staged: %s", got)
	}

	// Another program stages b.txt: a stage of a.txt made on the view
	// before that is refused; made on the view after, it stages a.txt.
	st = e.m.Wait("secret.env shown", func(st protocol.ChangesetState) bool { return ready(st) && findFile(st, repo, "secret.env") != nil })
	old := viewOf(st)
	writeFile(t, repo, "b.txt", "b staged elsewhere\n")
	git(t, repo, "add", "b.txt")
	st = e.m.Wait("the new index published", func(st protocol.ChangesetState) bool {
		return ready(st) && findFile(st, repo, "b.txt") != nil && viewOf(st) != old
	})
	_, err = e.invoke("stage", resTarget(e.id("a.txt")), map[string]any{"versions": versionsOf(st, e.id("a.txt")), "view": old})
	if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonViewChanged {
		t.Errorf("stage on an old view of the index: %v; want -32011 viewChanged", err)
	}
	if got := e.git("diff", "--cached", "--name-only"); got != "b.txt\n" {
		t.Errorf("staged after the refused stage: %q, want only b.txt", got)
	}
	e.mustInvoke("stage", resTarget(e.id("a.txt")), map[string]any{"versions": versionsOf(st, e.id("a.txt")), "view": viewOf(st)})
	if got := e.git("show", ":a.txt"); got != "a rewritten, never shown\n" {
		t.Errorf("index a.txt after the stage: %q", got)
	}

	// A commit confirmed on the view before that stage (b.txt alone
	// staged) is refused, though the daemon itself staged a.txt: it
	// would record a.txt, which the commit's confirmation never listed.
	all := []string{e.id("a.txt"), e.id("b.txt"), e.id("secret.env")}
	_, err = e.invoke("commit", nil, map[string]any{"versions": versionsOf(st, all...), "view": viewOf(st), "message": "b only"})
	if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonViewChanged {
		t.Errorf("commit on the view before a stage: %v; want -32011 viewChanged", err)
	}
	if got := e.git("rev-parse", "HEAD"); got != head {
		t.Errorf("a commit was made: %s", e.git("show", "--stat", "HEAD"))
	}
}

// A review flag binds to the content it was shown at: a toggle naming a
// version the file no longer has is rejected (to its sender, with the
// reason), so the new content is not marked reviewed — also after a
// restart; a hunk mark made on the old version is refused; the same
// toggle on the current version marks the file.
func TestReviewFlagBindsToShownVersion(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "a shown\n")
	state := t.TempDir()
	e := attachOps(t, startDaemonIn(t, state, repo), repo)
	id := e.id("a.txt")
	st := e.m.Wait("a.txt shown", func(st protocol.ChangesetState) bool { return ready(st) && findFile(st, repo, "a.txt") != nil })
	shown := versionsOf(st, id)

	writeFile(t, repo, "a.txt", "a rewritten, never shown\n")
	rewritten := hashObject(t, "a rewritten, never shown\n")
	e.m.Wait("the new version published", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "a.txt")
		return ready(st) && f != nil && f.Edit.After.Content.Nonce == rewritten
	})
	dispatchOn(t, e.c, e.uri, 1, map[string]any{"type": "changeset/filesReviewChanged", "files": []string{id}, "reviewed": true, "_meta": map[string]any{"versions": shown}})
	if reason := rejectionOf(t, e.c, e.uri, 1); !strings.Contains(reason, "changed") || !strings.Contains(reason, "a.txt") {
		t.Errorf("rejection %q does not say a.txt changed", reason)
	}
	if f := findFile(e.m.State(), repo, "a.txt"); f.IsReviewed() {
		t.Errorf("the new version is shown reviewed")
	}
	// A hunk mark made on the old version is refused the same way.
	hs := hunksOfFile(findFile(e.m.State(), repo, "a.txt"))
	if len(hs) == 0 {
		t.Fatal("a.txt has no hunks")
	}
	err := e.c.Call(ctx(t), protocol.MethodHunksReviewChanged, map[string]any{"channel": e.uri, "file": id, "hunks": []string{hs[0].ID}, "reviewed": true, "_meta": map[string]any{"versions": shown}}, nil)
	if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonFileChanged {
		t.Errorf("a hunk marked on the old version: %v; want -32011 fileChanged", err)
	}

	if err := e.d.stop(); err != nil {
		t.Fatal(err)
	}
	e = attachOps(t, startDaemonIn(t, state, repo), repo)
	st = e.m.Wait("a.txt after a restart", func(st protocol.ChangesetState) bool { return ready(st) && findFile(st, repo, "a.txt") != nil })
	if findFile(st, repo, "a.txt").IsReviewed() {
		t.Fatalf("after a restart the new version is shown reviewed")
	}

	dispatchOn(t, e.c, e.uri, 1, map[string]any{"type": "changeset/filesReviewChanged", "files": []string{id}, "reviewed": true, "_meta": map[string]any{"versions": versionsOf(st, id)}})
	e.m.Wait("reviewed on the version shown", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "a.txt")
		return f != nil && f.IsReviewed()
	})
}
