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

	_, err := w.Stage(ctx, session.Edit{Files: []session.EditFile{file()}, Range: line(1), Side: "after"})
	must(t, err)
	if got := gitRun(t, dir, "show", ":e.txt"); got != lines("TWO", "18") {
		t.Errorf("staging line 2 staged %q", got)
	}
	_, err = w.Unstage(ctx, session.Edit{Files: []session.EditFile{file()}, Range: line(1), Side: "after"})
	must(t, err)
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
	// default message naming exactly what it records.
	id, msg, err := w.Commit(ctx, session.Edit{Files: []session.EditFile{file()}}, "")
	must(t, err)
	if !strings.HasPrefix(msg, "Update 1 file(s) (+1 -0)\n\n- modify e.txt (+1 -0)") || strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD")) != id || gitRun(t, dir, "show", "HEAD:e.txt") != base+"11\n" {
		t.Errorf("commit %s %q does not hold the change", id, msg)
	}
	var pe *protocol.Error
	if _, _, err := w.Commit(ctx, session.Edit{}, "again"); !errors.As(err, &pe) {
		t.Errorf("a commit with nothing to commit: %v, want a protocol error", err)
	}
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	must(t, err)
	return string(b)
}

// TestOperationsOnHunksOfSeveralFiles: each file of one Edit may name its
// own hunks (an author's, say) or none (the whole file); stage and revert
// act on exactly those, the revert as one undo, and a file changed since
// it was published refuses the whole edit before anything is written.
func TestOperationsOnHunksOfSeveralFiles(t *testing.T) {
	dir := newRepo(t)
	w := openGit(t, dir)
	ctx := context.Background()
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
	writeFile(t, dir, "f.txt", base)
	gitRun(t, dir, "add", "e.txt", "f.txt")
	gitRun(t, dir, "commit", "-q", "-m", "e and f")
	both := lines("TWO", "EIGHTEEN")
	writeFile(t, dir, "e.txt", both)
	writeFile(t, dir, "f.txt", both)
	writeFile(t, dir, "n.txt", "new\n")
	line := func(n int) []protocol.TextRange {
		return []protocol.TextRange{{Start: protocol.TextPosition{Line: n}, End: protocol.TextPosition{Line: n}}}
	}
	edit := func() session.Edit {
		t.Helper()
		list, err := w.Changes(ctx, session.Query{View: protocol.KindUncommitted})
		must(t, err)
		e := session.Edit{Side: "after"}
		for _, f := range list.Files {
			ef := session.EditFile{Old: f.Old, New: f.New}
			switch f.Path() {
			case "e.txt":
				ef.Ranges = line(1)
			case "f.txt":
				ef.Ranges = line(17)
			}
			e.Files = append(e.Files, ef)
		}
		if len(e.Files) != 3 {
			t.Fatalf("changes: %d files, want 3", len(e.Files))
		}
		return e
	}

	_, err := w.Stage(ctx, edit())
	must(t, err)
	if e, f, n := gitRun(t, dir, "show", ":e.txt"), gitRun(t, dir, "show", ":f.txt"), gitRun(t, dir, "show", ":n.txt"); e != lines("TWO", "18") || f != lines("2", "EIGHTEEN") || n != "new\n" {
		t.Errorf("staged e.txt %q, f.txt %q, n.txt %q", e, f, n)
	}
	gitRun(t, dir, "reset", "-q")

	u, err := w.Revert(ctx, edit())
	must(t, err)
	if e, f := readFile(t, dir, "e.txt"), readFile(t, dir, "f.txt"); e != lines("2", "EIGHTEEN") || f != lines("TWO", "18") {
		t.Errorf("reverted e.txt to %q, f.txt to %q", e, f)
	}
	if _, err := os.Stat(filepath.Join(dir, "n.txt")); err == nil {
		t.Error("the new file is still there after the revert")
	}
	must(t, w.Undo(ctx, u))
	if e, f, n := readFile(t, dir, "e.txt"), readFile(t, dir, "f.txt"), readFile(t, dir, "n.txt"); e != both || f != both || n != "new\n" {
		t.Errorf("one undo left e.txt %q, f.txt %q, n.txt %q", e, f, n)
	}

	stale := edit()
	writeFile(t, dir, "f.txt", both+"21\n")
	if _, err := w.Revert(ctx, stale); protocol.CodeOf(err) != protocol.CodeConflict {
		t.Errorf("revert with a file changed since: %v, want Conflict", err)
	}
	if _, err := w.Stage(ctx, stale); protocol.CodeOf(err) != protocol.CodeConflict {
		t.Errorf("stage with a file changed since: %v, want Conflict", err)
	}
	if e, n := readFile(t, dir, "e.txt"), readFile(t, dir, "n.txt"); e != both || n != "new\n" {
		t.Errorf("a refused revert wrote e.txt %q, n.txt %q", e, n)
	}
	if got := gitRun(t, dir, "diff", "--cached", "--name-only"); got != "" {
		t.Errorf("a refused stage staged %q", got)
	}
}
