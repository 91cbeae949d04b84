package source

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/metrics"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/scm/snapstore"
	"github.com/changesetd/changesetd/session"
)

// TestAssumeUnchangedAsGitShowsIt: files marked assume-unchanged and
// edited on disk are left out of the uncommitted changes, as git diff
// HEAD leaves them out; one whose staged content differs from HEAD is
// shown with git's counts, which are those of the index's blob.
func TestAssumeUnchangedAsGitShowsIt(t *testing.T) {
	dir := newRepo(t)
	writeFile(t, dir, "dir/c.txt", "charlie\nstaged\n")
	gitRun(t, dir, "add", "dir/c.txt")
	gitRun(t, dir, "update-index", "--assume-unchanged", "a.txt", "dir/c.txt")
	w := openGit(t, dir)
	writeFile(t, dir, "a.txt", "alpha\nedited while marked\n")
	writeFile(t, dir, "dir/c.txt", "charlie\nstaged\nand three\nmore\nlines\n")
	writeFile(t, dir, "b.txt", "bravo\n") // not marked

	list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(t, err)
	if got, want := listPaths(list), gitPaths(t, dir); !slices.Equal(got, want) {
		t.Fatalf("uncommitted: %v, git: %v", got, want)
	}
	numstat := gitRun(t, dir, "diff", "HEAD", "--numstat", "--", "dir/c.txt")
	for _, f := range list.Files {
		if f.Path() != "dir/c.txt" {
			continue
		}
		if got := fmt.Sprintf("%d\t%d\tdir/c.txt\n", f.Added, f.Removed); got != numstat {
			t.Errorf("dir/c.txt counts %q, git %q", got, numstat)
		}
	}
}

// TestGlobalExcludesFileSetWhileRunning: core.excludesFile set in the
// user's global config while the workspace is watched, and the file it
// names edited afterwards, each reach the listeners at once and change
// what is listed, without waiting for another scan.
func TestGlobalExcludesFileSetWhileRunning(t *testing.T) {
	global := filepath.Join(t.TempDir(), "gitconfig")
	must(t, os.WriteFile(global, []byte("[user]\n\tname = T\n"), 0o644))
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	excludes := filepath.Join(t.TempDir(), "ignore-later")

	dir := newRepo(t)
	writeFile(t, dir, "x.tmp", "scratch\n")
	writeFile(t, dir, "y.bak", "scratch\n")
	w := openGit(t, dir)
	all := make(chan struct{}, 16)
	l, err := w.Watch(func(_ []string, a bool) {
		if a {
			all <- struct{}{}
		}
	})
	must(t, err)
	defer l.Stop()
	uncommitted := func() []string {
		t.Helper()
		list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
		must(t, err)
		return listPaths(list)
	}
	// waitFor drains refreshes until the listing shows want or the
	// deadline passes.
	waitFor := func(what string, ok func([]string) bool) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case <-all:
				if got := uncommitted(); ok(got) {
					return
				}
			case <-deadline:
				t.Fatalf("%s: no refresh made the listing right; now %v", what, uncommitted())
			}
		}
	}
	if got := uncommitted(); !slices.Contains(got, "x.tmp") || !slices.Contains(got, "y.bak") {
		t.Fatalf("before: %v", got)
	}

	must(t, os.WriteFile(excludes, []byte("*.tmp\n"), 0o644))
	must(t, os.WriteFile(global, []byte(fmt.Sprintf("[user]\n\tname = T\n[core]\n\texcludesFile = %s\n", excludes)), 0o644))
	waitFor("core.excludesFile set", func(got []string) bool { return !slices.Contains(got, "x.tmp") })
	if got := uncommitted(); !slices.Equal(got, gitPaths(t, dir)) {
		t.Errorf("after core.excludesFile was set: %v, git %v", got, gitPaths(t, dir))
	}

	must(t, os.WriteFile(excludes, []byte("*.tmp\n*.bak\n"), 0o644))
	waitFor("the new excludes file edited", func(got []string) bool { return !slices.Contains(got, "y.bak") })
	if got := uncommitted(); !slices.Equal(got, gitPaths(t, dir)) || strings.Contains(strings.Join(got, " "), ".bak") {
		t.Errorf("after the excludes file was edited: %v, git %v", got, gitPaths(t, dir))
	}
}

// filesDiffed reads the engine's diff counter.
func filesDiffed(t *testing.T) float64 {
	t.Helper()
	var m dto.Metric
	must(t, metrics.FilesDiffed.Write(&m))
	return m.GetCounter().GetValue()
}

// TestChangedFilesDiffedAsTheyAreRead: the first view reads each
// modified file and diffs it before reading many more, instead of
// loading every changed file's two sides first; the counts are git's.
func TestChangedFilesDiffedAsTheyAreRead(t *testing.T) {
	dir := newRepo(t)
	const n = 120
	for i := range n {
		writeFile(t, dir, fmt.Sprintf("m/f%03d.txt", i), strings.Repeat(fmt.Sprintf("line %d\n", i), 20))
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "more")
	for i := range n {
		writeFile(t, dir, fmt.Sprintf("m/f%03d.txt", i), strings.Repeat(fmt.Sprintf("line %d\n", i), 20)+"added\n")
	}
	w := openGit(t, dir)
	var mu sync.Mutex
	var reads int
	var ahead float64 // most files read and not yet diffed at one time
	base := filesDiffed(t)
	w.readWorktree = func(p string) ([]byte, uint32, error) {
		mu.Lock()
		reads++
		ahead = max(ahead, float64(reads)-(filesDiffed(t)-base))
		mu.Unlock()
		b, mode, _, err := w.repo.ReadWorktreeCanonical(p)
		return b, mode, err
	}
	list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(t, err)
	if len(list.Files) != n {
		t.Fatalf("%d files changed, want %d", len(list.Files), n)
	}
	if limit := float64(2*runtime.GOMAXPROCS(0) + 1); ahead > limit {
		t.Errorf("%v files were read before being diffed at one time, want at most %v", ahead, limit)
	}
	numstat := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(gitRun(t, dir, "diff", "HEAD", "--numstat")), "\n") {
		f := strings.Fields(l)
		numstat[f[2]] = f[0] + " " + f[1]
	}
	for _, f := range list.Files {
		if got := fmt.Sprintf("%d %d", f.Added, f.Removed); got != numstat[f.Path()] {
			t.Errorf("%s: %s, git %s", f.Path(), got, numstat[f.Path()])
		}
	}
}

// TestStoredSideOverTheLimitNotRead: a stored blob larger than any diff
// takes is given as its size and id, without being read into memory.
func TestStoredSideOverTheLimitNotRead(t *testing.T) {
	dir := newRepo(t)
	writeFile(t, dir, "big.txt", strings.Repeat("x", maxLoadedFile+10))
	gitRun(t, dir, "add", "big.txt")
	gitRun(t, dir, "commit", "-q", "-m", "big")
	oid := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD:big.txt"))
	w := openGit(t, dir)
	s, err := w.storedSide(&snapstore.Entry{Path: "big.txt", Mode: changeset.ModeRegular, OID: oid})
	must(t, err)
	if s.Content != nil || s.Size != maxLoadedFile+10 || s.OID != oid {
		t.Errorf("side of %d content bytes, size %d, id %s; want no content, size %d, id %s", len(s.Content), s.Size, s.OID, maxLoadedFile+10, oid)
	}
}

// TestWorktreeStateAcrossRestart: a workspace closed and opened again on
// the same state directory takes the files it hashed from its saved
// state; a damaged state is named in one log line and not used; the view
// matches git's either way.
func TestWorktreeStateAcrossRestart(t *testing.T) {
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "alpha, modified\n")
	writeFile(t, dir, "dir/c.txt", "charlie, modified\n")
	old := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(filepath.Join(dir, "a.txt"), old, old))
	must(t, os.Chtimes(filepath.Join(dir, "dir/c.txt"), old, old))
	// Hashed files enter the stat cache (and so the state) only once
	// their ctime, set by the Chtimes above, is out of its racy window.
	time.Sleep(300 * time.Millisecond)
	snaps, err := snapstore.Open(t.TempDir())
	must(t, err)
	defer snaps.Close()
	start := func() (*gitWorkspace, string) {
		t.Helper()
		var logs strings.Builder
		var mu sync.Mutex
		h := slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(b)
		}), &slog.HandlerOptions{Level: slog.LevelDebug})
		ws, err := Opener(slog.New(h), snaps)(dir)
		must(t, err)
		w := ws.(*gitWorkspace)
		list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
		must(t, err)
		if got, want := listPaths(list), gitPaths(t, dir); !slices.Equal(got, want) {
			t.Errorf("uncommitted %v, git %v", got, want)
		}
		mu.Lock()
		defer mu.Unlock()
		return w, logs.String()
	}
	w, logs := start()
	if strings.Contains(logs, "working-tree state") {
		t.Errorf("first start: %s", logs)
	}
	must(t, w.Close())
	if _, err := os.Stat(w.statePath); err != nil {
		t.Fatalf("no state saved: %v", err)
	}

	w, logs = start()
	if !strings.Contains(logs, "working-tree state loaded") || !strings.Contains(logs, "entries=2") {
		t.Errorf("restart did not load the two hashed files' state:\n%s", logs)
	}
	must(t, w.Close())

	b, err := os.ReadFile(w.statePath)
	must(t, err)
	b[len(b)-1] ^= 1
	must(t, os.WriteFile(w.statePath, b, 0o600))
	w, logs = start()
	if n := strings.Count(logs, "working-tree state is not used"); n != 1 {
		t.Errorf("damaged state: %d log lines about it, want 1:\n%s", n, logs)
	}
	must(t, w.Close())
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// TestDiffsKeptAcrossRestart: after a restart on the unchanged tree the
// changed files' diffs come from the saved state without reading the
// files, equal to the first run's; a file edited while stopped is read
// and diffed again, with git's counts.
func TestDiffsKeptAcrossRestart(t *testing.T) {
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "alpha\nmore alpha\n")
	writeFile(t, dir, "b.txt", "bravo\nBRAVO\nbravo\n")
	writeFile(t, dir, "new.txt", "untracked\n")
	snaps, err := snapstore.Open(t.TempDir())
	must(t, err)
	defer snaps.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	run := func() (map[string]session.FileChange, map[string]int) {
		t.Helper()
		ws, err := Opener(quiet, snaps)(dir)
		must(t, err)
		w := ws.(*gitWorkspace)
		defer w.Close()
		var mu sync.Mutex
		reads := map[string]int{}
		w.readWorktree = func(p string) ([]byte, uint32, error) {
			mu.Lock()
			reads[p]++
			mu.Unlock()
			b, mode, _, err := w.repo.ReadWorktreeCanonical(p)
			return b, mode, err
		}
		list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
		must(t, err)
		out := map[string]session.FileChange{}
		for _, f := range list.Files {
			out[f.Path()] = f
		}
		mu.Lock()
		defer mu.Unlock()
		return out, reads
	}
	first, _ := run()
	second, reads := run()
	for _, p := range []string{"a.txt", "b.txt"} {
		if reads[p] != 0 {
			t.Errorf("restart: %s read %d times, want its diff from the saved state", p, reads[p])
		}
		a, b := first[p], second[p]
		if a.Patch != b.Patch || a.Added != b.Added || a.Removed != b.Removed || !reflect.DeepEqual(a.ACP, b.ACP) || !reflect.DeepEqual(a.Meta, b.Meta) {
			t.Errorf("%s: restart's diff differs from the first run's:\n%+v\n%+v", p, a, b)
		}
	}
	if reads["new.txt"] != 1 {
		t.Errorf("the untracked file read %d times, want 1", reads["new.txt"])
	}

	writeFile(t, dir, "a.txt", "alpha\nedited while stopped\nand more\n")
	third, reads := run()
	if reads["a.txt"] != 1 {
		t.Errorf("a.txt edited while stopped read %d times, want 1", reads["a.txt"])
	}
	numstat := strings.Fields(gitRun(t, dir, "diff", "HEAD", "--numstat", "--", "a.txt"))
	if got := fmt.Sprint(third["a.txt"].Added, third["a.txt"].Removed); got != numstat[0]+" "+numstat[1] {
		t.Errorf("a.txt after the edit: %s, git %v", got, numstat)
	}
}

// TestSavedDiffsOfAnotherBuildNotUsed: diffs saved by another build of
// the daemon (whose diff may differ) are refused, and a damaged file too.
func TestSavedDiffsOfAnotherBuildNotUsed(t *testing.T) {
	c := scmChange("a.txt", "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222")
	var d diffCache
	old := &changeset.Side{Path: "a.txt", Mode: changeset.ModeRegular, OID: c.Head.OID, Content: []byte("a\n")}
	cur := &changeset.Side{Path: "a.txt", Mode: changeset.ModeRegular, OID: c.Work.OID, Content: []byte("b\n")}
	c.Work.OID = changeset.BlobOID(cur.Content)
	cur.OID = c.Work.OID
	d.put(c, changeset.Compare(old, cur, changeset.Options{}))
	path := filepath.Join(t.TempDir(), "x.diffs")
	must(t, d.save(path))
	var fresh diffCache
	if n, err := fresh.load(path); err != nil || n != 1 {
		t.Fatalf("load: %d, %v", n, err)
	}
	if _, ok := fresh.get(c); !ok {
		t.Fatalf("the saved diff is not found")
	}

	b, err := os.ReadFile(path)
	must(t, err)
	body := []byte(strings.Replace(string(b[:len(b)-4]), builtBy, "another build", 1))
	must(t, os.WriteFile(path, binary.BigEndian.AppendUint32(body, crc32.Checksum(body, castagnoli)), 0o600))
	var other diffCache
	if n, err := other.load(path); err == nil || n != 0 {
		t.Errorf("another build's diffs: %d loaded, err %v", n, err)
	}
	must(t, os.WriteFile(path, b[:len(b)-3], 0o600))
	if n, err := other.load(path); err == nil || n != 0 {
		t.Errorf("truncated diffs: %d loaded, err %v", n, err)
	}
}

func scmChange(p, head, work string) scm.Change {
	return scm.Change{Path: p, Kind: scm.Modified,
		Head: &scm.FileState{Path: p, Mode: changeset.ModeRegular, OID: head},
		Work: &scm.FileState{Path: p, Mode: changeset.ModeRegular, OID: work}}
}
