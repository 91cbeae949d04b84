package source

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm/snapstore"
	"github.com/changesetd/changesetd/session"
)

// fileSummary is what a view says of each file: its sides, counts,
// operation and patch.
func fileSummary(list *session.ChangeList) map[string]string {
	out := map[string]string{}
	for _, f := range list.Files {
		var old, cur string
		if f.Old != nil {
			old = f.Old.Path + "@" + f.Old.OID
		}
		if f.New != nil {
			cur = f.New.Path + "@" + f.New.OID
		}
		own, _ := f.Meta["changesetd"].(protocol.Object)
		op, _ := own["operation"].(string)
		out[f.Path()] = old + " " + cur + " " + op + " " + strconv.Itoa(f.Added) + "/" + strconv.Itoa(f.Removed) + "\n" + f.Patch
	}
	return out
}

// TestLastKnownView: a workspace reopened on the state the previous one
// saved offers that one's uncommitted view (a modification, an addition
// and a rename) before any scan, the same file for file; once it computed
// its own view it offers none, nor once the index changed. A session on
// a subdirectory of the same repository is not offered the whole tree's
// view.
func TestLastKnownView(t *testing.T) {
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "alpha\nmore alpha\n")
	writeFile(t, dir, "new.txt", "untracked\n")
	must(t, os.Remove(filepath.Join(dir, "dir", "c.txt")))
	writeFile(t, dir, "dir/c2.txt", "charlie\n")
	snaps, err := snapstore.Open(t.TempDir())
	must(t, err)
	defer snaps.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	openAt := func(d string) *gitWorkspace {
		t.Helper()
		ws, err := Opener(quiet, snaps)(d)
		must(t, err)
		return ws.(*gitWorkspace)
	}

	w := openAt(dir)
	if _, ok := w.LastKnown(); ok {
		t.Errorf("a first start offers a last-known view")
	}
	list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(t, err)
	want := fileSummary(list)
	if len(want) != 3 {
		t.Fatalf("the view lists %v, want a.txt, dir/c2.txt (a rename) and new.txt", want)
	}
	must(t, w.Close())

	w = openAt(dir)
	known, ok := w.LastKnown()
	if !ok {
		t.Fatal("a restart on the unchanged tree offers no last-known view")
	}
	if now := w.viewStamp(); known.View != now {
		t.Errorf("last-known view stamp %q, want the stamp of now %q", known.View, now)
	}
	for _, f := range known.Files {
		for _, v := range []*session.FileVersion{f.Old, f.New} {
			if v != nil && (v.View == "" || v.View != known.View) {
				t.Errorf("last-known %s has view stamp %q, want the list's %q", f.Path(), v.View, known.View)
			}
		}
	}
	got := fileSummary(known)
	for p, s := range want {
		if got[p] != s {
			t.Errorf("last-known %s:\n%s\nwant:\n%s", p, got[p], s)
		}
	}
	if len(got) != len(want) {
		t.Errorf("last-known lists %d files, want %d", len(got), len(want))
	}
	_, err = w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(t, err)
	if _, ok := w.LastKnown(); ok {
		t.Errorf("the last-known view is still offered after a computed one")
	}
	must(t, w.Close())

	w = openAt(dir)
	gitRun(t, dir, "add", "a.txt") // the index changes after the open
	if _, ok := w.LastKnown(); ok {
		t.Errorf("the last-known view is offered after the index changed")
	}
	must(t, w.Close())

	sub := openAt(filepath.Join(dir, "dir"))
	defer sub.Close()
	if _, ok := sub.LastKnown(); ok {
		t.Errorf("a session on a subdirectory is offered the whole tree's view")
	}
}

// A view too large to keep (files of megabytes created at once, whose
// content and lines its results hold) is not kept as the last-known view
// nor written into the state file; the next view small enough is.
func TestLastKnownViewIsBoundedInBytes(t *testing.T) {
	dir := newRepo(t)
	line := strings.Repeat("x", 63) + "\n"
	for i := range 6 { // 6 × 8 MiB of results' content and lines: past the bound
		writeFile(t, dir, fmt.Sprintf("big%d.txt", i), strings.Repeat(line, (4<<20)/len(line)))
	}
	snaps, err := snapstore.Open(t.TempDir())
	must(t, err)
	defer snaps.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	openAt := func() *gitWorkspace {
		t.Helper()
		ws, err := Opener(quiet, snaps)(dir)
		must(t, err)
		return ws.(*gitWorkspace)
	}
	w := openAt()
	list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(t, err)
	if len(list.Files) != 6 {
		t.Fatalf("%d files, want the 6 created", len(list.Files))
	}
	must(t, w.Close())
	w = openAt()
	if known, ok := w.LastKnown(); ok {
		t.Errorf("a restart offers a last-known view of %d files too large to keep", len(known.Files))
	}
	for i := range 6 {
		must(t, os.Remove(filepath.Join(dir, fmt.Sprintf("big%d.txt", i))))
	}
	writeFile(t, dir, "small.txt", "small\n")
	_, err = w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(t, err)
	must(t, w.Close())
	w = openAt()
	defer w.Close()
	if known, ok := w.LastKnown(); !ok || len(known.Files) != 1 {
		t.Errorf("after a small view, the restart offers %v (ok %v), want small.txt", known, ok)
	}
}
