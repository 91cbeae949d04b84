package source

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/store"
)

// TestSubdirectorySession: a session on a subdirectory keeps the spelling
// of the path it was given (a symbolic link in it) for file URIs, and
// lists only what is under it.
func TestSubdirectorySession(t *testing.T) {
	top := newRepo(t)
	link := filepath.Join(t.TempDir(), "link")
	must(t, os.Symlink(top, link))
	w := openGit(t, filepath.Join(link, "dir"))
	if w.Root() != link || w.scope != "dir" {
		t.Errorf("root %q scope %q, want %q and dir", w.Root(), w.scope, link)
	}
	writeFile(t, top, "a.txt", "outside\n")
	writeFile(t, top, "dir/c.txt", "inside\n")
	list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(t, err)
	if got := listPaths(list); !slices.Equal(got, []string{"dir/c.txt"}) {
		t.Errorf("changes %v, want [dir/c.txt]", got)
	}
	for _, f := range list.Files {
		acp := f.ACP
		change := acp["changes"].([]any)[0].(protocol.Object)
		if want := filepath.ToSlash(filepath.Join(top, "dir", "c.txt")); change["path"] != want {
			t.Errorf("ACP path %v, want %s", change["path"], want)
		}
	}

	if _, _, err := scopeOf(t.TempDir(), top); err == nil {
		t.Error("a directory outside the repository was given a scope")
	}
}

// TestOperationErrors: scm's refusals reach the session with their
// protocol codes.
func TestOperationErrors(t *testing.T) {
	dir := newRepo(t)
	w := openGit(t, dir)
	ctx := context.Background()
	writeFile(t, dir, "a.txt", "staged\n")
	must(t, os.WriteFile(filepath.Join(dir, ".git", "index.lock"), nil, 0o644))
	var pe *protocol.Error
	if err := w.StagePath(ctx, "a.txt"); !errors.As(err, &pe) || pe.Code != protocol.CodeConflict {
		t.Errorf("stage with index.lock held: %v, want code %d", err, protocol.CodeConflict)
	}
	must(t, os.Remove(filepath.Join(dir, ".git", "index.lock")))
	if _, _, err := w.ReadWorktree("../outside"); !errors.As(err, &pe) || pe.Code != protocol.CodePermissionDenied {
		t.Errorf("read outside the tree: %v, want code %d", err, protocol.CodePermissionDenied)
	}
	if _, err := w.commitIndex(ctx, "nothing staged"); !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams {
		t.Errorf("commit with nothing staged: %v, want code %d", err, protocol.CodeInvalidParams)
	}
	must(t, w.StagePath(ctx, "a.txt"))
	if staged, err := w.HasStaged(ctx); err != nil || !staged {
		t.Fatalf("HasStaged after a stage: %v %v", staged, err)
	}
	b, _, ok, err := w.IndexContent("a.txt")
	if err != nil || !ok || string(b) != "staged\n" {
		t.Errorf("index content %q %v %v", b, ok, err)
	}
	if _, err := w.commitIndex(ctx, "stage it"); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(gitRun(t, dir, "show", "HEAD:a.txt")); got != "staged" {
		t.Errorf("committed a.txt %q", got)
	}
}

// TestIdentity: a directory's session id is stable and names the
// repository, and a record is recognised as the repository's only while
// the same repository is there.
func TestIdentity(t *testing.T) {
	dir := newRepo(t)
	root := strings.TrimSpace(gitRun(t, dir, "rev-list", "--max-parents=0", "HEAD"))
	if got := RootCommit(dir); got != root {
		t.Errorf("RootCommit %q, git %q", got, root)
	}
	if RootCommit(t.TempDir()) != "" {
		t.Error("a plain directory has a root commit")
	}
	id := SessionID(dir, root)
	if id != SessionID(dir, root) || id == SessionID(dir, "") || id == SessionID(dir+"x", root) {
		t.Errorf("session ids not stable or not distinct: %s", id)
	}
	if SessionID(dir, "") != StableID(dir) {
		t.Error("without a root commit the id is not the path's alone")
	}

	head := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
	if ok, why := SameRepository(store.WorkspaceRecord{Dir: dir, Repo: root, Head: head}); !ok {
		t.Errorf("the same repository was not recognised: %s", why)
	}
	rec := store.Session{Workspaces: []store.WorkspaceRecord{{Dir: dir}}}
	if !NameRepositories(&rec) || rec.Workspaces[0].Repo != root || rec.Workspaces[0].Head != head {
		t.Errorf("NameRepositories: %+v", rec.Workspaces[0])
	}

	// Another project at the same path.
	must(t, os.RemoveAll(dir))
	must(t, os.MkdirAll(dir, 0o755))
	gitRun(t, dir, "init", "-q", "-b", "main")
	writeFile(t, dir, "other.txt", "other\n")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "other")
	if ok, _ := SameRepository(store.WorkspaceRecord{Dir: dir, Repo: root, Head: head}); ok {
		t.Error("another repository at the path was taken for the session's")
	}
}

// TestPlainDirectory: a directory outside any repository is served from
// snapshots: turns and the live compare list its files, less what a
// .gitignore or the heavy directories leave out; the git kinds are
// empty.
func TestPlainDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", "alpha\n")
	writeFile(t, dir, ".gitignore", "*.log\n")
	w := open(t, dir)
	pw, ok := w.(*plainWorkspace)
	if !ok || !pw.Plain() {
		t.Fatalf("%s did not open as a plain directory: %T", dir, w)
	}
	ctx := context.Background()
	start, err := w.Snapshot(ctx, true)
	must(t, err)
	writeFile(t, dir, "a.txt", "alpha two\n")
	writeFile(t, dir, "sub/b.txt", "bravo\n")
	writeFile(t, dir, "x.log", "ignored\n")
	writeFile(t, dir, "node_modules/m/index.js", "heavy\n")
	list, err := w.Changes(ctx, session.Query{View: session.ViewTrees, From: start})
	must(t, err)
	if got := listPaths(list); !slices.Equal(got, []string{"a.txt", "sub/b.txt"}) {
		t.Errorf("live compare %v, want [a.txt sub/b.txt]", got)
	}
	list, err = w.Changes(ctx, session.Query{View: protocol.KindUncommitted})
	if err != nil || len(list.Files) != 0 {
		t.Errorf("uncommitted in a plain directory: %v %v", listPaths(list), err)
	}

	if _, err := Opener(slog.New(slog.DiscardHandler), nil)("/"); err == nil {
		t.Error("the root directory was opened as a plain directory")
	}
}
