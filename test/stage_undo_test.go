package test

import (
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// A stage, a Keep of some lines, and an unstage can each be undone: the
// undo puts back exactly the index entries the operation replaced (the
// git binary checks them), leaves the working tree alone, and is kept
// across a restart. Unstaging a staged version that nothing else refers
// to and undoing it brings that version back.
func TestStageAndUnstageCanBeUndone(t *testing.T) {
	t.Parallel()
	base := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	repo := gitRepo(t, map[string]string{"a.txt": base, "b.txt": "b\n"})
	state := t.TempDir()
	e := attachOps(t, startDaemonIn(t, state, repo), repo)
	entry := func(path string) string { return strings.TrimSpace(e.git("ls-files", "-s", "--", path)) }

	// Staged S, then edited to W: the file is partly staged.
	writeFile(t, repo, "a.txt", strings.Replace(base, "2\n", "TWO\n", 1))
	git(t, repo, "add", "a.txt")
	staged := e.git("show", ":a.txt")
	stagedEntry := entry("a.txt")
	work := strings.Replace(strings.Replace(base, "2\n", "TWO\n", 1), "9\n", "NINE\n", 1)
	writeFile(t, repo, "a.txt", work)
	writeFile(t, repo, "b.txt", "b edited\n")
	e.waitHas("b.txt")
	e.waitOffered("unstage", protocol.ScopeResource, protocol.ScopeRange)

	// Unstage a.txt: its index entry goes back to HEAD's...
	headEntry := strings.TrimSpace(e.git("ls-tree", "HEAD", "--", "a.txt"))
	res := e.mustInvoke("unstage", resTarget(e.id("a.txt")), nil)
	if !strings.Contains(string(res.Message), "Undo Unstage") {
		t.Errorf("the unstage's result %s does not say it can be undone", res.Message)
	}
	if got := entry("a.txt"); !strings.Contains(headEntry, strings.Fields(got)[1]) {
		t.Fatalf("after unstage the index has %q, HEAD %q", got, headEntry)
	}
	// ... and undo brings the staged version S back, the tree untouched.
	e.undoOffered("Unstaged a.txt")
	e.mustInvoke("undo", nil, nil)
	if got := entry("a.txt"); got != stagedEntry {
		t.Errorf("after undoing the unstage the index has %q, want %q", got, stagedEntry)
	}
	if got := e.git("show", ":a.txt"); got != staged {
		t.Errorf("the staged content after undo is %q, want %q", got, staged)
	}
	if got := string(e.disk("a.txt")); got != work {
		t.Errorf("the working tree changed: %q", got)
	}

	// Stage b.txt as a whole, then Keep one line of a.txt; both undone,
	// newest first, the second after a restart.
	bBefore := entry("b.txt")
	e.mustInvoke("stage", resTarget(e.id("b.txt")), nil)
	if entry("b.txt") == bBefore {
		t.Fatal("stage did not change b.txt's entry")
	}
	aBefore := entry("a.txt")
	st := e.m.Wait("a.txt listed", func(st protocol.ChangesetState) bool { return ready(st) && opIn(st, "stage") != nil })
	e.mustInvoke("stage", lineTarget(e.id("a.txt"), 8, 8), map[string]any{"versions": versionsOf(st, e.id("a.txt"))})
	if got := e.git("show", ":a.txt"); !strings.Contains(got, "NINE") {
		t.Fatalf("keeping line 9 staged %q", got)
	}
	e.undoOffered("Staged a.txt")
	e.mustInvoke("undo", nil, nil)
	if got := entry("a.txt"); got != aBefore {
		t.Errorf("after undoing the Keep the index has %q, want %q", got, aBefore)
	}
	if err := e.d.stop(); err != nil {
		t.Fatal(err)
	}
	e = attachOps(t, startDaemonIn(t, state, repo), repo)
	e.undoOffered("Staged b.txt")
	e.mustInvoke("undo", nil, nil)
	if got := entry("b.txt"); got != bBefore {
		t.Errorf("after undoing the stage (across a restart) the index has %q, want %q", got, bBefore)
	}
	if got := string(e.disk("b.txt")); got != "b edited\n" {
		t.Errorf("the working tree changed: %q", got)
	}
}

// An undo of a stage is refused when the entry moved since: another
// program staged the file again, and putting back the old entry would
// lose that.
func TestStageUndoRefusedWhenIndexMoved(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	e := startOps(t, repo)
	writeFile(t, repo, "a.txt", "a edited\n")
	e.waitHas("a.txt")
	e.waitOffered("stage", protocol.ScopeResource, protocol.ScopeRange)
	e.mustInvoke("stage", resTarget(e.id("a.txt")), nil)
	e.undoOffered("Staged a.txt")
	writeFile(t, repo, "a.txt", "a edited again\n")
	git(t, repo, "add", "a.txt")
	moved := strings.TrimSpace(e.git("ls-files", "-s", "--", "a.txt"))
	e.m.Wait("undo withdrawn", func(st protocol.ChangesetState) bool {
		return ready(st) && opIn(st, "undo") == nil
	})
	if _, err := e.invoke("undo", nil, nil); err == nil {
		t.Error("undo ran although the index entry moved since the stage")
	}
	if got := strings.TrimSpace(e.git("ls-files", "-s", "--", "a.txt")); got != moved {
		t.Errorf("the refused undo changed the index: %q, want %q", got, moved)
	}
}
