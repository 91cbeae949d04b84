package source

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// TestExcludeEditsApplyLive: an edit of .git/info/exclude or of the file
// core.excludesFile names changes what is ignored at once: the next look
// at the uncommitted changes (what a new subscriber gets) leaves out the
// newly ignored file.
func TestExcludeEditsApplyLive(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the file to edit
	}{
		{"info/exclude", func(t *testing.T, dir string) string {
			return filepath.Join(dir, ".git", "info", "exclude")
		}},
		{"core.excludesFile", func(t *testing.T, dir string) string {
			p := filepath.Join(t.TempDir(), "global-ignore")
			must(t, os.WriteFile(p, []byte("# nothing yet\n"), 0o644))
			gitRun(t, dir, "config", "core.excludesFile", p)
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t)
			file := tc.setup(t, dir)
			writeFile(t, dir, "x.tmp", "scratch\n")
			w := openGit(t, dir)
			ctx := context.Background()
			uncommitted := func() []string {
				t.Helper()
				list, err := w.Changes(ctx, session.Query{View: protocol.KindUncommitted})
				must(t, err)
				return listPaths(list)
			}
			if got := uncommitted(); !slices.Contains(got, "x.tmp") {
				t.Fatalf("before the exclude: %v, want x.tmp listed", got)
			}
			must(t, os.MkdirAll(filepath.Dir(file), 0o755))
			must(t, os.WriteFile(file, []byte("*.tmp\n"), 0o644))
			if got := uncommitted(); slices.Contains(got, "x.tmp") {
				t.Errorf("after %s ignores *.tmp: %v still lists x.tmp", tc.name, got)
			}
		})
	}
}

// TestUnreadableFilesAreShownWithAWarning: a changed file that exists but
// cannot be read (simulated: the tests may run as root) is listed as
// modified, or added when untracked, with an "unreadable" warning and no
// counts, not as deleted (+0 -N) or not at all.
func TestUnreadableFilesAreShownWithAWarning(t *testing.T) {
	dir := newRepo(t)
	w := openGit(t, dir)
	writeFile(t, dir, "a.txt", "alpha changed\n")
	writeFile(t, dir, "new.txt", "fresh\n")
	denied := &os.PathError{Op: "open", Path: "x", Err: fs.ErrPermission}
	w.readWorktree = func(p string) ([]byte, uint32, error) {
		if p == "a.txt" || p == "new.txt" {
			return nil, 0, denied
		}
		b, mode, _, err := w.repo.ReadWorktreeCanonical(p)
		return b, mode, err
	}
	ctx := context.Background()
	base, err := w.Snapshot(ctx, false)
	must(t, err)
	for _, q := range []session.Query{{View: protocol.KindUncommitted}, {View: session.ViewTrees, From: base}} {
		list, err := w.Changes(ctx, q)
		must(t, err)
		for _, p := range []string{"a.txt", "new.txt"} {
			var f *session.FileChange
			for i := range list.Files {
				if list.Files[i].Path() == p {
					f = &list.Files[i]
				}
			}
			if f == nil {
				t.Fatalf("%s: %s is not listed (%v)", q.View, p, listPaths(list))
			}
			own, _ := f.Meta["changesetd"].(protocol.Object)
			if f.New == nil || own["unreadable"] == nil {
				t.Errorf("%s: %s new side %+v, meta %v: want it present and marked unreadable", q.View, p, f.New, own)
			}
			if f.Precise || f.Added != 0 || f.Removed != 0 {
				t.Errorf("%s: %s counted +%d -%d (precise %v) without its content", q.View, p, f.Added, f.Removed, f.Precise)
			}
		}
		if !slices.ContainsFunc(list.Warnings, func(s string) bool { return strings.Contains(s, "a.txt cannot be read") }) {
			t.Errorf("warnings %v do not name a.txt", list.Warnings)
		}
	}
}
