package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/session"
)

// viewOf is the uncommitted changeset's file at path as a view taken now
// presents it.
func viewOf(t *testing.T, w *gitWorkspace, path string) session.EditFile {
	t.Helper()
	list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(t, err)
	for _, fc := range list.Files {
		if fc.Path() == path {
			return session.EditFile{Old: fc.Old, New: fc.New}
		}
	}
	t.Fatalf("%s not in the view", path)
	return session.EditFile{}
}

// An operation acts only on the view it was chosen on: the view is taken,
// then git changes HEAD or the index, then the operation runs, and is
// refused without writing.
func TestOperationsRefuseAnOutOfDateView(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		git  func(t *testing.T, dir string)
	}{
		{"stash and checkout", func(t *testing.T, dir string) {
			gitRun(t, dir, "stash", "-q")
			gitRun(t, dir, "checkout", "-q", "other")
		}},
		{"commit -am", func(t *testing.T, dir string) { gitRun(t, dir, "commit", "-qam", "edit") }},
		{"add", func(t *testing.T, dir string) { gitRun(t, dir, "add", "g.txt") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t)
			writeFile(t, dir, "g.txt", "main\n")
			gitRun(t, dir, "add", "g.txt")
			gitRun(t, dir, "commit", "-qm", "g")
			gitRun(t, dir, "branch", "other")
			gitRun(t, dir, "checkout", "-q", "other")
			writeFile(t, dir, "g.txt", "other\n")
			gitRun(t, dir, "commit", "-qam", "other g")
			gitRun(t, dir, "checkout", "-q", "main")
			writeFile(t, dir, "g.txt", "main edited\n")
			w := openGit(t, dir)

			f := viewOf(t, w, "g.txt") // the view is taken
			tc.git(t, dir)             // then git runs
			before := readFile(t, dir, "g.txt")
			ops := map[string]func() error{
				"revert": func() error {
					_, err := w.Revert(ctx, session.Edit{Files: []session.EditFile{f}, Index: true})
					return err
				},
				"revert range": func() error {
					_, err := w.Revert(ctx, session.Edit{Files: []session.EditFile{f}, Range: &protocol.TextRange{}, Side: "after", Index: true})
					return err
				},
				"stage":   func() error { _, err := w.Stage(ctx, session.Edit{Files: []session.EditFile{f}}); return err },
				"unstage": func() error { _, err := w.Unstage(ctx, session.Edit{Files: []session.EditFile{f}}); return err },
				"commit": func() error {
					_, _, err := w.Commit(ctx, session.Edit{Files: []session.EditFile{f}}, "x")
					return err
				},
			}
			index := gitRun(t, dir, "ls-files", "-s")
			head := gitRun(t, dir, "rev-parse", "HEAD")
			for name, op := range ops { // then the operation
				err := op()
				if protocol.CodeOf(err) != protocol.CodeConflict {
					t.Errorf("%s on an out-of-date view: %v, want -32011", name, err)
				}
				if r := protocol.ReasonOf(err); r != protocol.ReasonViewChanged && r != protocol.ReasonFileChanged {
					t.Errorf("%s: reason %q", name, r)
				}
			}
			if got := readFile(t, dir, "g.txt"); got != before {
				t.Errorf("g.txt = %q after refused operations, was %q", got, before)
			}
			if got := gitRun(t, dir, "ls-files", "-s"); got != index {
				t.Errorf("index changed by refused operations:\n%s\nwas\n%s", got, index)
			}
			if got := gitRun(t, dir, "rev-parse", "HEAD"); got != head {
				t.Error("HEAD moved")
			}
			if tc.name == "add" { // still changed: a view taken now works
				if _, err := w.Revert(ctx, session.Edit{Files: []session.EditFile{viewOf(t, w, "g.txt")}, Index: true}); err != nil {
					t.Errorf("revert on a current view: %v", err)
				}
				if got := readFile(t, dir, "g.txt"); got != "main\n" {
					t.Errorf("g.txt = %q after the revert on a current view", got)
				}
			}
		})
	}
}

// failingTree fails the write of one path, as a full disk would.
type failingTree struct {
	*gitWorkspace
	fail string
}

func (f failingTree) replace(path string, want, next scm.Held, pr *scm.Prepared) error {
	if path == f.fail {
		return opErr(fmt.Errorf("write %s: %w", path, syscall.ENOSPC))
	}
	return f.gitWorkspace.replace(path, want, next, pr)
}

// A multi-file revert whose write fails part-way returns, with the error,
// an undo of what it did, and the undo puts it back.
func TestRevertFailingPartWayKeepsAnUndo(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "alpha edited\n")
	writeFile(t, dir, "new.txt", "created\n")
	w := openGit(t, dir)
	e := session.Edit{Files: []session.EditFile{viewOf(t, w, "a.txt"), viewOf(t, w, "new.txt")}, Index: true}
	p, err := prepareRevert(ctx, failingTree{w, "new.txt"}, e)
	must(t, err)
	u, err := applyRevert(ctx, failingTree{w, "new.txt"}, p)
	if protocol.CodeOf(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonNoSpace {
		t.Errorf("revert with a full disk: %v (reason %q), want -32011 noSpace", err, protocol.ReasonOf(err))
	}
	if got := readFile(t, dir, "a.txt"); got != "alpha\n" {
		t.Fatalf("a.txt = %q: the first write did not happen", got)
	}
	if u == nil {
		t.Fatal("no undo returned for the part that was done")
	}
	if !w.UndoCurrent(u) {
		t.Fatal("the partial revert's undo is not current")
	}
	must(t, w.Undo(ctx, u))
	if got := readFile(t, dir, "a.txt"); got != "alpha edited\n" {
		t.Errorf("a.txt after undo = %q", got)
	}
	if got := readFile(t, dir, "new.txt"); got != "created\n" {
		t.Errorf("new.txt after undo = %q", got)
	}
}

// Expected refusals get their codes and reasons: a named pipe where a
// file was, and the file system's errors.
func TestOperationRefusalCodes(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "alpha edited\n")
	w := openGit(t, dir)
	f := viewOf(t, w, "a.txt")
	must(t, syscall.Unlink(filepath.Join(dir, "a.txt")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "a.txt"), 0o644))
	_, err := w.Revert(ctx, session.Edit{Files: []session.EditFile{f}})
	if protocol.CodeOf(err) == protocol.CodeInternalError || protocol.ReasonOf(err) != protocol.ReasonNotRegularFile {
		t.Errorf("revert of a file replaced by a FIFO: %v (code %d, reason %q), want notRegularFile", err, protocol.CodeOf(err), protocol.ReasonOf(err))
	}
	for _, c := range []struct {
		err    error
		code   int64
		reason string
	}{
		{syscall.ENOSPC, protocol.CodeConflict, protocol.ReasonNoSpace},
		{syscall.EACCES, protocol.CodePermissionDenied, protocol.ReasonPermission},
		{syscall.EPERM, protocol.CodePermissionDenied, protocol.ReasonPermission},
		{syscall.EROFS, protocol.CodePermissionDenied, protocol.ReasonPermission},
	} {
		err := opErr(fmt.Errorf("scm: write a.txt: %w", c.err))
		if protocol.CodeOf(err) != c.code || protocol.ReasonOf(err) != c.reason {
			t.Errorf("%v: code %d reason %q, want %d %q", c.err, protocol.CodeOf(err), protocol.ReasonOf(err), c.code, c.reason)
		}
	}
	for _, c := range []struct {
		err    error
		code   int64
		reason string
	}{
		{readErr("a.txt", fmt.Errorf("scm: read worktree a.txt: %w", syscall.EACCES)), protocol.CodePermissionDenied, protocol.ReasonUnreadable},
		{readErr("a.txt", fmt.Errorf("scm: read worktree a.txt: %w", syscall.EIO)), protocol.CodeConflict, protocol.ReasonUnreadable},
		{opErr(fmt.Errorf("scm: commit: %w", scm.ErrSigningRequired)), protocol.CodeConflict, protocol.ReasonSigningRequired},
		{opErr(fmt.Errorf("scm: commit: %w", scm.ErrNoIdentity)), protocol.CodeConflict, protocol.ReasonNoIdentity},
	} {
		if protocol.CodeOf(c.err) != c.code || protocol.ReasonOf(c.err) != c.reason {
			t.Errorf("%v: code %d reason %q, want %d %q", c.err, protocol.CodeOf(c.err), protocol.ReasonOf(c.err), c.code, c.reason)
		}
	}
	if err := readErr("a.txt", syscall.EACCES); !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("an unreadable file's refusal %q does not name it and the cause", err)
	}
	if err := opErr(errors.New("other")); protocol.CodeOf(err) != protocol.CodeInternalError {
		t.Errorf("an unexpected error got code %d", protocol.CodeOf(err))
	}
}

// readCountingTree counts the reads of what paths hold.
type readCountingTree struct {
	*gitWorkspace
	reads *int
}

func (c readCountingTree) readHeld(path string) (scm.Held, error) {
	*c.reads++
	return c.gitWorkspace.readHeld(path)
}

// A revert whose undo would keep more than the limit is refused from the
// files' sizes, before any of them is read: a file grown to gigabytes is
// never loaded to say it is too large, and nothing changes.
func TestRevertOverTheUndoLimitIsRefusedFromItsSize(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	w := openGit(t, dir)
	// Sparse: no disk blocks, and no memory unless it is read.
	must(t, os.Truncate(filepath.Join(dir, "a.txt"), 100<<20))
	e := session.Edit{Files: []session.EditFile{viewOf(t, w, "a.txt")}, Index: true}
	reads := 0
	_, err := prepareRevert(ctx, readCountingTree{w, &reads}, e)
	if protocol.CodeOf(err) != protocol.CodeInvalidParams || protocol.ReasonOf(err) != protocol.ReasonTooLarge || !strings.Contains(err.Error(), "64 MiB") {
		t.Errorf("revert of a 100 MiB file: %v (reason %q), want -32602 tooLarge naming the 64 MiB limit", err, protocol.ReasonOf(err))
	}
	if reads != 0 {
		t.Errorf("%d reads of what the paths hold before the refusal, want none", reads)
	}
	if fi, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil || fi.Size() != 100<<20 {
		t.Errorf("a.txt after the refusal: %v, %v; want it untouched", fi, err)
	}
}

// A whole-changeset patch past its limit is refused once the files'
// patches pass it together, without diffing the rest: a patch that will
// be refused is not computed to its end.
func TestWholePatchStopsAtItsLimit(t *testing.T) {
	dir := newRepo(t)
	const files = 400
	for i := range files {
		writeFile(t, dir, fmt.Sprintf("gen/f%03d.txt", i), strings.Repeat(fmt.Sprintf("line of file %d\n", i), 200))
	}
	w := openGit(t, dir)
	before := filesDiffed(t)
	_, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted, MaxPatchBytes: 64 << 10})
	if !errors.Is(err, session.ErrPatchTooLarge) {
		t.Fatalf("a patch of 400 files of 3 KB at a 64 KiB limit: %v, want ErrPatchTooLarge", err)
	}
	if n := filesDiffed(t) - before; n >= files {
		t.Errorf("%.0f files diffed for a patch refused at its limit, want fewer than the %d", n, files)
	}
	// Within the limit, the patch is whole.
	list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted, MaxPatchBytes: 32 << 20})
	must(t, err)
	if len(list.Files) < files {
		t.Errorf("%d files in a patch within its limit, want %d", len(list.Files), files)
	}
}
