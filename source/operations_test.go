package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// TestOperationsOnHunks drives the workspace's Editor on a real
// repository: ranges pick one hunk of two for stage, unstage and revert,
// undo puts a revert back only while nothing changed, and git sees the
// result.
func TestOperationsOnHunks(t *testing.T) {
	dir := newRepo(t)
	w := openGit(t, dir)
	ctx := context.Background()
	// Lines 2 and 18 change: far enough apart to be two hunks.
	lines := func(two, eighteen string) string {
		var b strings.Builder
		for i := 1; i <= 20; i++ {
			switch i {
			case 2:
				b.WriteString(two + "\n")
			case 18:
				b.WriteString(eighteen + "\n")
			default:
				fmt.Fprintf(&b, "%d\n", i)
			}
		}
		return b.String()
	}
	base := lines("2", "18")
	writeFile(t, dir, "e.txt", base)
	gitRun(t, dir, "add", "e.txt")
	gitRun(t, dir, "commit", "-q", "-m", "e")
	both := lines("TWO", "EIGHTEEN")
	writeFile(t, dir, "e.txt", both)
	file := func() session.EditFile {
		t.Helper()
		list, err := w.Changes(ctx, session.Query{View: protocol.KindUncommitted, Paths: []string{"e.txt"}})
		must(t, err)
		if len(list.Files) != 1 {
			t.Fatalf("changes of e.txt: %d files", len(list.Files))
		}
		return session.EditFile{Old: list.Files[0].Old, New: list.Files[0].New}
	}
	line := func(n int) *protocol.TextRange {
		return &protocol.TextRange{Start: protocol.TextPosition{Line: n}, End: protocol.TextPosition{Line: n}}
	}

	must(t, w.Stage(ctx, session.Edit{Files: []session.EditFile{file()}, Range: line(1), Side: "after"}))
	if got := gitRun(t, dir, "show", ":e.txt"); got != lines("TWO", "18") {
		t.Errorf("staging line 2 staged %q", got)
	}
	must(t, w.Unstage(ctx, session.Edit{Files: []session.EditFile{file()}, Range: line(1), Side: "after"}))
	if got := gitRun(t, dir, "show", ":e.txt"); got != base {
		t.Errorf("unstaging line 2 left %q staged", got)
	}

	u, err := w.Revert(ctx, session.Edit{Files: []session.EditFile{file()}, Range: line(17), Side: "after", Index: true})
	must(t, err)
	if got := readFile(t, dir, "e.txt"); got != lines("TWO", "18") {
		t.Errorf("reverting line 18 left %q", got)
	}
	if !w.UndoCurrent(u) {
		t.Error("a revert nothing touched since is not current")
	}
	must(t, w.Undo(ctx, u))
	if got := readFile(t, dir, "e.txt"); got != both {
		t.Errorf("undo left %q, want both changes back", got)
	}

	// A range picked on content that is gone is refused, and so is an
	// undo of a revert whose result was edited since.
	stale := file()
	u, err = w.Revert(ctx, session.Edit{Files: []session.EditFile{stale}})
	must(t, err)
	writeFile(t, dir, "e.txt", base+"11\n")
	if w.UndoCurrent(u) {
		t.Error("a revert whose file was edited since is still current")
	}
	if err := w.Undo(ctx, u); protocol.CodeOf(err) != protocol.CodeInvalidParams {
		t.Errorf("undo after an edit: %v, want InvalidParams", err)
	}
	if _, err := w.Revert(ctx, session.Edit{Files: []session.EditFile{stale}, Range: line(1), Side: "after"}); protocol.CodeOf(err) != protocol.CodeConflict {
		t.Errorf("range revert on stale content: %v, want Conflict", err)
	}
	if got := readFile(t, dir, "e.txt"); got != base+"11\n" {
		t.Errorf("a refused range revert wrote %q", got)
	}

	// Nothing staged: the commit takes every change shown, with the
	// fallback message.
	id, msg, err := w.Commit(ctx, session.Edit{Files: []session.EditFile{file()}}, "", func([]session.CommitEntry) string { return "Update e" })
	must(t, err)
	if msg != "Update e" || strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD")) != id || gitRun(t, dir, "show", "HEAD:e.txt") != base+"11\n" {
		t.Errorf("commit %s %q does not hold the change", id, msg)
	}
	var pe *protocol.Error
	if _, _, err := w.Commit(ctx, session.Edit{}, "again", func([]session.CommitEntry) string { return "" }); !errors.As(err, &pe) {
		t.Errorf("a commit with nothing to commit: %v, want a protocol error", err)
	}
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	must(t, err)
	return string(b)
}
