package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/scm/fswatch"
	"github.com/changesetd/changesetd/session"
)

// trackerSteps change a repository made by newRepo one step at a time,
// each kept from the one before: the tracker has to follow them all
// incrementally.
var trackerSteps = []struct {
	name   string
	change func(t *testing.T, dir string)
}{
	{"edit", func(t *testing.T, dir string) { writeFile(t, dir, "a.txt", "alpha two\n") }},
	{"edit reverted", func(t *testing.T, dir string) { writeFile(t, dir, "a.txt", "alpha\n") }},
	{"same-size edit", func(t *testing.T, dir string) { writeFile(t, dir, "dir/c.txt", "charliX\n") }},
	{"same-size edit reverted", func(t *testing.T, dir string) { writeFile(t, dir, "dir/c.txt", "charlie\n") }},
	{"untracked file in new directories", func(t *testing.T, dir string) {
		writeFile(t, dir, "new/deep/e.txt", "echo\n")
		writeFile(t, dir, "dir/sub/more/f.txt", "foxtrot\n")
	}},
	{"ignored files", func(t *testing.T, dir string) {
		writeFile(t, dir, "x.log", "log\n")
		writeFile(t, dir, "dir/build/out.o", "obj\n")
	}},
	{"delete", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, "b.txt"))) }},
	{"rename", func(t *testing.T, dir string) {
		must(t, os.Rename(filepath.Join(dir, "dir", "c.txt"), filepath.Join(dir, "dir", "c2.txt")))
	}},
	{"git add", func(t *testing.T, dir string) { gitRun(t, dir, "add", "-A") }},
	{"edit after add", func(t *testing.T, dir string) { writeFile(t, dir, "dir/c2.txt", "charlie\nagain\n") }},
	{"git commit -a", func(t *testing.T, dir string) { gitRun(t, dir, "commit", "-q", "-a", "-m", "second") }},
	{"edit after commit", func(t *testing.T, dir string) { writeFile(t, dir, "dir/sub/d.txt", "delta two\n") }},
	{"git checkout of a file", func(t *testing.T, dir string) { gitRun(t, dir, "checkout", "--", "dir/sub/d.txt") }},
	{"git checkout of another branch", func(t *testing.T, dir string) {
		gitRun(t, dir, "checkout", "-q", "-b", "other", "HEAD~1")
	}},
	{"edit on the other branch", func(t *testing.T, dir string) {
		writeFile(t, dir, "dir/c.txt", "charlie on other\n")
		writeFile(t, dir, "dir/sub/d.txt", "delta on other\n")
	}},
	{"git stash", func(t *testing.T, dir string) { gitRun(t, dir, "stash", "-q") }},
	{"git checkout back", func(t *testing.T, dir string) { gitRun(t, dir, "checkout", "-q", "main") }},
	{"edit carried across a checkout", func(t *testing.T, dir string) {
		writeFile(t, dir, "dir/sub/d.txt", "delta carried\n")
		gitRun(t, dir, "checkout", "-q", "other")
		gitRun(t, dir, "checkout", "-q", "main")
	}},
	{"directory removed", func(t *testing.T, dir string) { must(t, os.RemoveAll(filepath.Join(dir, "dir", "sub"))) }},
	{"gitignore now ignores an untracked file", func(t *testing.T, dir string) {
		writeFile(t, dir, ".gitignore", "*.log\nbuild/\nnew/\n")
	}},
	{"git reset --hard", func(t *testing.T, dir string) { gitRun(t, dir, "reset", "-q", "--hard") }},
}

// TestTrackerFollowsFullStatus takes a repository through trackerSteps
// with the tracker on, and after every step checks that the tracked
// changes, which re-check only what the watcher reported, equal a full
// status, and that both list what git does: git diff HEAD --numstat plus
// the untracked files. The same on a session on a subdirectory, and with
// the polling watcher (CHANGESETD_WATCH=poll).
func TestTrackerFollowsFullStatus(t *testing.T) {
	for _, tc := range []struct{ sub, watch string }{{"", ""}, {"dir", ""}, {"", "poll"}, {"dir", "poll"}} {
		sub := tc.sub
		t.Run("scope="+sub+",watch="+tc.watch, func(t *testing.T) {
			t.Setenv("CHANGESETD_WATCH", tc.watch)
			top := newRepo(t)
			dir := filepath.Join(top, filepath.FromSlash(sub))
			w := openGit(t, dir)
			ctx := context.Background()
			if cs, err := w.trackedChangesOnly(ctx); err != nil || len(cs) != 0 {
				t.Fatalf("fresh repository: %v %v", view(cs), err)
			}
			if polled := w.tr.mode == string(fswatch.ModePoll); polled != (tc.watch == "poll") {
				t.Fatalf("watcher mode %q with CHANGESETD_WATCH=%q", w.tr.mode, tc.watch)
			}
			for _, step := range trackerSteps {
				step.change(t, top)
				tracked, err := w.trackedChangesOnly(ctx)
				if err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				tracked = w.scoped(tracked)
				full, err := w.status(ctx)
				must(t, err)
				if d := diffLines(view(full.Changes), view(tracked)); d != "" {
					t.Errorf("%s: tracked changes differ from a full status (-full +tracked):\n%s", step.name, d)
				}
				cold, err := scm.Open(dir)
				must(t, err)
				cs, err := cold.StatusPaths(ctx, []string{w.scope})
				must(t, err)
				if d := diffLines(view(cs), view(tracked)); d != "" {
					t.Errorf("%s: tracked changes differ from a fresh repository's status (-fresh +tracked):\n%s", step.name, d)
				}
				if d := diffLines(gitPaths(t, dir), paths(tracked)); d != "" {
					t.Errorf("%s: tracked changes differ from git (-git +tracked):\n%s", step.name, d)
				}
				// What a client is served comes from the tracker now.
				if !w.tracking() {
					t.Fatalf("%s: not tracking", step.name)
				}
				list, err := w.Changes(ctx, session.Query{View: protocol.KindUncommitted})
				if err != nil {
					t.Fatalf("%s: Changes: %v", step.name, err)
				}
				if d := diffLines(gitPaths(t, dir), listPaths(list)); d != "" {
					t.Errorf("%s: Changes differ from git (-git +served):\n%s", step.name, d)
				}
			}
		})
	}
}

// TestEditedIsRecheckedEvenUnseen: a file that Edited names is re-checked
// at the next call even when its stat data did not change and the
// watcher said nothing (an edit tool that restores the modification
// time).
func TestEditedIsRecheckedEvenUnseen(t *testing.T) {
	dir := newRepo(t)
	w := openGit(t, dir)
	ctx := context.Background()
	if _, err := w.trackedChangesOnly(ctx); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a.txt")
	before, err := os.Stat(p)
	must(t, err)
	writeFile(t, dir, "a.txt", "alphX\n")
	must(t, os.Chtimes(p, before.ModTime(), before.ModTime()))
	// Whatever the watcher reported of the write has been taken in.
	if _, err := w.trackedChangesOnly(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Edited("a.txt"); err != nil {
		t.Fatal(err)
	}
	cs, err := w.trackedChangesOnly(ctx)
	must(t, err)
	if got := paths(cs); !slices.Equal(got, []string{"a.txt"}) {
		t.Errorf("after Edited: %v, want [a.txt]", got)
	}
}

// TestSnapshotTracksTurns: an opened workspace is tracked from its first
// scan, so the baseline snapshot and the turns' snapshots re-check only
// what the watcher reported; the live compare against a snapshot lists
// what changed since it.
func TestSnapshotTracksTurns(t *testing.T) {
	dir := newRepo(t)
	w := openGit(t, dir)
	ctx := context.Background()
	if !w.tracking() {
		t.Fatal("opening the workspace did not start the tracker")
	}
	base, err := w.Snapshot(ctx, false)
	must(t, err)
	writeFile(t, dir, "a.txt", "alpha two\n")
	start, err := w.Snapshot(ctx, true)
	must(t, err)
	writeFile(t, dir, "new/e.txt", "echo\n")
	must(t, os.Remove(filepath.Join(dir, "b.txt")))
	end, err := w.Snapshot(ctx, true)
	must(t, err)

	for _, tc := range []struct {
		name     string
		from, to string
		want     []string
	}{
		{"baseline to start", base, start, []string{"a.txt"}},
		{"turn", start, end, []string{"b.txt", "new/e.txt"}},
		{"turn start to live", start, "", []string{"b.txt", "new/e.txt"}},
		{"baseline to live", base, "", []string{"a.txt", "b.txt", "new/e.txt"}},
	} {
		list, err := w.Changes(ctx, session.Query{View: session.ViewTrees, From: tc.from, To: tc.to})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := listPaths(list); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for _, f := range list.Files {
			if f.New != nil && f.New.Live != (tc.to == "") {
				t.Errorf("%s: %s live = %v", tc.name, f.Path(), f.New.Live)
			}
		}
	}
}

// TestCloseStopsTheWatcher: after Close nothing tracks, and TestMain's
// leak check finds no watcher goroutine left.
func TestCloseStopsTheWatcher(t *testing.T) {
	dir := newRepo(t)
	w := openGit(t, dir)
	ctx := context.Background()
	if _, err := w.trackedChangesOnly(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := w.Watch(func([]string, bool) {})
	must(t, err)
	if mode, _ := l.Mode(); mode == "none" {
		t.Fatal("Watch did not start the watcher")
	}
	must(t, w.Close())
	if w.tracking() {
		t.Error("still tracking after Close")
	}
	if mode, _ := l.Mode(); mode != "none" {
		t.Errorf("watcher mode %q after Close", mode)
	}
	l.Stop()
}

// view is a change list as comparable lines: kind, path, both sides.
func view(cs []scm.Change) []string {
	var lines []string
	for _, c := range cs {
		line := c.Kind.String() + " " + c.Path
		if c.Untracked {
			line += " untracked"
		}
		if c.Head != nil {
			line += fmt.Sprintf(" head=%06o:%s", c.Head.Mode, c.Head.OID)
		}
		if c.Work != nil {
			line += fmt.Sprintf(" work=%06o", c.Work.Mode)
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return lines
}

func paths(cs []scm.Change) []string {
	var ps []string
	for _, c := range cs {
		ps = append(ps, c.Path)
	}
	slices.Sort(ps)
	return ps
}

// listPaths is every path a change list names, on either side (a rename
// names two).
func listPaths(list *session.ChangeList) []string {
	var ps []string
	for _, f := range list.Files {
		if f.Old != nil {
			ps = append(ps, f.Old.Path)
		}
		if f.New != nil {
			ps = append(ps, f.New.Path)
		}
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

func diffLines(want, got []string) string {
	var b strings.Builder
	for _, l := range want {
		if !slices.Contains(got, l) {
			fmt.Fprintf(&b, "-%s\n", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			fmt.Fprintf(&b, "+%s\n", l)
		}
	}
	return b.String()
}

// trackedChangesOnly is trackedChanges without the HEAD.
func (w *gitWorkspace) trackedChangesOnly(ctx context.Context) ([]scm.Change, error) {
	cs, _, err := w.trackedChanges(ctx)
	return cs, err
}

// TestCloseThenSnapshotArmsNothing: a turn boundary that snapshots after
// the workspace was closed (racing the session's dispose) gets an error
// and leaves no watcher behind; nor does a Watch.
func TestCloseThenSnapshotArmsNothing(t *testing.T) {
	dir := newRepo(t)
	w := openGit(t, dir)
	must(t, w.Close())
	if _, err := w.Snapshot(context.Background(), true); err == nil {
		t.Error("Snapshot after Close succeeded")
	}
	if l, err := w.Watch(func([]string, bool) {}); err == nil {
		l.Stop()
		t.Error("Watch after Close succeeded")
	}
	w.tr.mu.Lock()
	fw := w.tr.fw
	w.tr.mu.Unlock()
	if fw != nil {
		fw.Close()
		t.Fatal("a watcher was armed after Close")
	}
}

// TestSnapshotAtOneHead: a commit landing between the reading of HEAD and
// the status of the working tree does not make a snapshot of the old
// HEAD's tree without the committed changes: the snapshot is the working
// tree as it is, so nothing differs from it live.
func TestSnapshotAtOneHead(t *testing.T) {
	dir := newRepo(t)
	w := openGit(t, dir)
	ctx := context.Background()
	writeFile(t, dir, "a.txt", "alpha committed meanwhile\n")
	once := true
	w.tr.beforeStatus = func() {
		if once {
			once = false
			gitRun(t, dir, "commit", "-q", "-a", "-m", "meanwhile")
		}
	}
	snap, err := w.Snapshot(ctx, true)
	must(t, err)
	w.tr.beforeStatus = nil
	if once {
		t.Fatal("the commit never ran")
	}
	list, err := w.Changes(ctx, session.Query{View: session.ViewTrees, From: snap})
	must(t, err)
	if got := listPaths(list); len(got) != 0 {
		t.Errorf("the working tree differs from the snapshot just taken in %v", got)
	}
}
