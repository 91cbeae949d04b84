package fswatch

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds every wait. Conditions are normally met within
// milliseconds; the bound only turns a bug into a failure instead of a hang.
const waitTimeout = 10 * time.Second

// recorder collects batches and lets tests wait for a condition on them.
type recorder struct {
	mu      sync.Mutex
	batches []Batch
	changed chan struct{} // closed and replaced on every batch
	closed  bool          // set by the test after Close; a batch then fails it
	t       *testing.T
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{changed: make(chan struct{}), t: t}
}

func (r *recorder) onBatch(b Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.t.Errorf("onBatch called after Close: %+v", b)
	}
	r.batches = append(r.batches, b)
	close(r.changed)
	r.changed = make(chan struct{})
}

// mark returns the number of batches so far, for waiting on later ones.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches)
}

func (r *recorder) all() []Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// wait blocks until ok holds for the batches delivered since mark.
func (r *recorder) wait(t *testing.T, mark int, what string, ok func([]Batch) bool) []Batch {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		bs, ch := slices.Clone(r.batches[mark:]), r.changed
		r.mu.Unlock()
		if ok(bs) {
			return bs
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; batches since mark: %+v", what, bs)
		}
	}
}

// waitPaths waits until every path in want was reported since mark.
func (r *recorder) waitPaths(t *testing.T, mark int, want ...string) []Batch {
	t.Helper()
	return r.wait(t, mark, fmt.Sprintf("paths %q", want), func(bs []Batch) bool {
		seen := map[string]bool{}
		for _, b := range bs {
			for _, p := range b.Paths {
				seen[p] = true
			}
		}
		for _, p := range want {
			if !seen[p] {
				return false
			}
		}
		return true
	})
}

func hasOverflow(bs []Batch) bool {
	return slices.ContainsFunc(bs, func(b Batch) bool { return b.Overflow })
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// start creates a watcher on opts.Root (a new temp dir if empty) and closes
// it at the end of the test.
func start(t *testing.T, opts Options) (*Watcher, *recorder) {
	t.Helper()
	if !opts.ForcePoll && kqueueBackend {
		// Watchers poll here (see backend.go): what these tests expect
		// of fsnotify does not apply; the polling variants still run.
		t.Skip("fsnotify is not used where its backend is kqueue")
	}
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	r := newRecorder(t)
	w, err := New(opts, r.onBatch)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
	})
	return w, r
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bothModes runs f against a fsnotify watcher and a polling one.
func bothModes(t *testing.T, f func(t *testing.T, forcePoll bool)) {
	for _, poll := range []bool{false, true} {
		name := "fsnotify"
		if poll {
			name = "poll"
		}
		t.Run(name, func(t *testing.T) { f(t, poll) })
	}
}

func TestCreateModifyDelete(t *testing.T) {
	bothModes(t, func(t *testing.T, poll bool) {
		root := t.TempDir()
		write(t, filepath.Join(root, "sub", "keep.txt"), "x")
		w, r := start(t, Options{Root: root, ForcePoll: poll, PollInterval: 20 * time.Millisecond})
		if poll != (w.Mode() == ModePoll) {
			t.Fatalf("Mode() = %q (%s), ForcePoll %v", w.Mode(), w.ModeReason(), poll)
		}

		f := filepath.Join(root, "sub", "a.txt")
		m := r.mark()
		write(t, f, "one")
		r.waitPaths(t, m, "sub/a.txt")

		m = r.mark()
		write(t, f, "two!") // different size
		r.waitPaths(t, m, "sub/a.txt")

		m = r.mark()
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		r.waitPaths(t, m, "sub/a.txt")

		for _, b := range r.all() {
			if slices.Contains(b.Paths, "sub/keep.txt") {
				t.Errorf("untouched file reported: %+v", b)
			}
			if !slices.IsSorted(b.Paths) || len(slices.Compact(slices.Clone(b.Paths))) != len(b.Paths) {
				t.Errorf("paths not sorted and deduplicated: %q", b.Paths)
			}
		}
	})
}

// TestPollSameSizeNewMtime checks that polling compares stat data, not size
// alone: a same-size rewrite with a different mtime is reported.
func TestPollSameSizeNewMtime(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "f.txt")
	write(t, f, "aaaa")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(f, old, old); err != nil {
		t.Fatal(err)
	}
	_, r := start(t, Options{Root: root, ForcePoll: true, PollInterval: 20 * time.Millisecond})

	m := r.mark()
	write(t, f, "bbbb")
	newer := old.Add(time.Minute)
	if err := os.Chtimes(f, newer, newer); err != nil {
		t.Fatal(err)
	}
	r.waitPaths(t, m, "f.txt")
}

// TestNewTreeAtOnce is H2: a directory tree created faster than watches can
// be added still has all its files reported, because new directories are
// walked.
func TestNewTreeAtOnce(t *testing.T) {
	bothModes(t, func(t *testing.T, poll bool) {
		root := t.TempDir()
		_, r := start(t, Options{Root: root, ForcePoll: poll, PollInterval: 20 * time.Millisecond})
		m := r.mark()
		if err := os.MkdirAll(filepath.Join(root, "a", "b", "c", "d"), 0o755); err != nil {
			t.Fatal(err)
		}
		want := []string{"a/f0", "a/b/f1", "a/b/c/f2", "a/b/c/d/f3", "a/b/c/d/f4"}
		for _, p := range want {
			write(t, filepath.Join(root, filepath.FromSlash(p)), p)
		}
		r.waitPaths(t, m, want...)

		// The new directories are watched: a later write is seen too.
		m = r.mark()
		write(t, filepath.Join(root, "a", "b", "c", "d", "later"), "x")
		r.waitPaths(t, m, "a/b/c/d/later")
	})
}

// TestRecreatedDir removes a watched directory and recreates it at once: the
// new directory must be watched, not mistaken for the old one.
func TestRecreatedDir(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "d", "old"), "x")
	_, r := start(t, Options{Root: root})

	m := r.mark()
	if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "d", "new"), "y")
	r.waitPaths(t, m, "d/old", "d/new")

	m = r.mark()
	write(t, filepath.Join(root, "d", "later"), "z")
	r.waitPaths(t, m, "d/later")
}

func TestIgnoredNotWatched(t *testing.T) {
	bothModes(t, func(t *testing.T, poll bool) {
		root := t.TempDir()
		write(t, filepath.Join(root, "node_modules", "pkg", "index.js"), "x")
		var (
			mu     sync.Mutex
			asked  []string
			ignore = func(rel string, isDir bool) bool {
				mu.Lock()
				asked = append(asked, rel)
				mu.Unlock()
				return isDir && filepath.Base(rel) == "node_modules"
			}
		)
		_, r := start(t, Options{Root: root, Ignore: ignore, ForcePoll: poll, PollInterval: 20 * time.Millisecond})

		m := r.mark()
		write(t, filepath.Join(root, "node_modules", "pkg", "index.js"), "changed")
		write(t, filepath.Join(root, "node_modules", "new", "deep", "x.js"), "x")
		write(t, filepath.Join(root, "src", "node_modules", "y.js"), "y")
		// Events are processed in order, so once the sentinel is reported
		// the writes above have been seen and dropped.
		write(t, filepath.Join(root, "sentinel"), "s")
		bs := r.waitPaths(t, m, "sentinel")
		for _, b := range bs {
			for _, p := range b.Paths {
				if strings.Contains(p, "node_modules") {
					t.Errorf("ignored path reported: %q in %+v", p, b)
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rel := range asked {
			if strings.Contains(rel, "node_modules/") {
				t.Errorf("walked into ignored directory: Ignore asked about %q", rel)
			}
		}
	})
}

// TestRename covers a rename (both names reported) and H1, an atomic save:
// a temp file renamed over the target reports the target.
func TestRename(t *testing.T) {
	bothModes(t, func(t *testing.T, poll bool) {
		root := t.TempDir()
		write(t, filepath.Join(root, "old.txt"), "x")
		write(t, filepath.Join(root, "target.go"), "package a")
		_, r := start(t, Options{Root: root, ForcePoll: poll, PollInterval: 20 * time.Millisecond})

		m := r.mark()
		if err := os.Rename(filepath.Join(root, "old.txt"), filepath.Join(root, "new.txt")); err != nil {
			t.Fatal(err)
		}
		r.waitPaths(t, m, "old.txt", "new.txt")

		m = r.mark()
		write(t, filepath.Join(root, ".target.go.tmp"), "package b")
		if err := os.Rename(filepath.Join(root, ".target.go.tmp"), filepath.Join(root, "target.go")); err != nil {
			t.Fatal(err)
		}
		r.waitPaths(t, m, "target.go")
	})
}

// TestExtra simulates git updating .git/index and a branch ref by renaming
// lock files, and checks that only the Extra paths are reported for .git.
func TestExtra(t *testing.T) {
	bothModes(t, func(t *testing.T, poll bool) {
		root := t.TempDir()
		git := filepath.Join(root, ".git")
		write(t, filepath.Join(git, "HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(git, "index"), "v1")
		write(t, filepath.Join(git, "refs", "heads", "main"), "1111\n")
		write(t, filepath.Join(git, "objects", "ab", "cdef"), "blob")
		extra := []string{
			filepath.Join(git, "HEAD"),
			filepath.Join(git, "index"),
			filepath.Join(git, "packed-refs"), // absent
			filepath.Join(git, "refs", "heads"),
		}
		_, r := start(t, Options{Root: root, Extra: extra, ForcePoll: poll, PollInterval: 20 * time.Millisecond})

		waitExtra := func(m int, want string) []Batch {
			t.Helper()
			return r.wait(t, m, "extra "+want, func(bs []Batch) bool {
				return slices.ContainsFunc(bs, func(b Batch) bool { return slices.Contains(b.Extra, want) })
			})
		}
		lockRename := func(path, content string) {
			t.Helper()
			write(t, path+".lock", content)
			if err := os.Rename(path+".lock", path); err != nil {
				t.Fatal(err)
			}
		}

		m := r.mark()
		write(t, filepath.Join(git, "objects", "12", "3456"), "noise")
		lockRename(filepath.Join(git, "index"), "v2 longer")
		bs := waitExtra(m, filepath.Join(git, "index"))

		m = r.mark()
		lockRename(filepath.Join(git, "refs", "heads", "feature", "deep", "x"), "2222\n")
		bs = append(bs, waitExtra(m, filepath.Join(git, "refs", "heads"))...)

		m = r.mark()
		lockRename(filepath.Join(git, "packed-refs"), "# pack-refs\n")
		bs = append(bs, waitExtra(m, filepath.Join(git, "packed-refs"))...)

		for _, b := range bs {
			for _, p := range b.Paths {
				if strings.HasPrefix(p, ".git") {
					t.Errorf(".git path reported in Paths: %q", p)
				}
			}
			for _, e := range b.Extra {
				if !slices.Contains(extra, e) {
					t.Errorf("non-Extra path reported in Extra: %q", e)
				}
			}
		}
	})
}

// TestCoalesce checks that a burst of writes is delivered in a few batches.
// The bound is loose on purpose: it only fails if events are not coalesced
// at all.
func TestCoalesce(t *testing.T) {
	root := t.TempDir()
	_, r := start(t, Options{Root: root})
	const files, writes = 10, 20
	m := r.mark()
	var want []string
	for i := range files {
		name := fmt.Sprintf("f%02d", i)
		want = append(want, name)
		for j := range writes {
			write(t, filepath.Join(root, name), strings.Repeat("x", j))
		}
	}
	bs := r.waitPaths(t, m, want...)
	if len(bs) >= files*writes/10 {
		t.Errorf("%d writes delivered in %d batches; want far fewer", files*writes, len(bs))
	}
}

// TestQueueOverflow fills the internal cap and expects an Overflow batch, and
// the watcher to keep working afterwards.
func TestQueueOverflow(t *testing.T) {
	root := t.TempDir()
	w, r := start(t, Options{Root: root, maxQueued: 8, MaxLatency: time.Second, SyncDir: t.TempDir()})
	m := r.mark()
	for i := range 100 {
		write(t, filepath.Join(root, "burst", fmt.Sprintf("f%03d", i)), "x")
	}
	r.wait(t, m, "an Overflow batch", hasOverflow)
	// The rest of the burst may still be arriving, and a write now could be
	// folded into another Overflow batch: consume all of it first.
	w.mustSync(t)

	m = r.mark()
	write(t, filepath.Join(root, "burst", "after"), "x")
	r.waitPaths(t, m, "burst/after")
}

// mustSync calls Sync and fails the test on error.
func (w *Watcher) mustSync(t *testing.T) {
	t.Helper()
	if err := w.Sync(t.Context()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

// TestWatchBudget is H4's code path: when the tree needs more watches than
// allowed, the watcher polls and keeps working.
func TestWatchBudget(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "b", "c", "d"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, r := start(t, Options{Root: root, MaxWatches: 2, PollInterval: 20 * time.Millisecond})
	if w.Mode() != ModePoll || !strings.Contains(w.ModeReason(), "budget") {
		t.Fatalf("Mode() = %q, ModeReason() = %q; want poll because of the watch budget", w.Mode(), w.ModeReason())
	}
	m := r.mark()
	write(t, filepath.Join(root, "c", "new"), "x")
	r.waitPaths(t, m, "c/new")
}

// TestProbe runs the canary probe in the repository's .git directory: on a
// local file system it succeeds, leaves nothing behind and reports nothing.
func TestProbe(t *testing.T) {
	root := t.TempDir()
	git := filepath.Join(root, ".git")
	if err := os.Mkdir(git, 0o755); err != nil {
		t.Fatal(err)
	}
	w, r := start(t, Options{Root: root, ProbeDir: git})
	if w.Mode() != ModeFsnotify {
		t.Fatalf("Mode() = %q (%s); want fsnotify", w.Mode(), w.ModeReason())
	}
	if ents, err := os.ReadDir(git); err != nil || len(ents) != 0 {
		t.Errorf("probe left files behind: %v %v", ents, err)
	}
	m := r.mark()
	write(t, filepath.Join(root, "sentinel"), "x")
	bs := r.waitPaths(t, m, "sentinel")
	for _, b := range append(r.all()[:m], bs...) {
		for _, p := range b.Paths {
			if strings.Contains(p, probePrefix) {
				t.Errorf("probe file reported: %q", p)
			}
		}
	}
}

// TestRootRemoved removes Root: an Overflow batch and Err follow, then the
// watcher re-establishes itself when Root comes back.
func TestRootRemoved(t *testing.T) {
	bothModes(t, func(t *testing.T, poll bool) {
		root := filepath.Join(t.TempDir(), "root")
		write(t, filepath.Join(root, "sub", "f"), "x")
		w, r := start(t, Options{Root: root, ForcePoll: poll, PollInterval: 20 * time.Millisecond})
		if err := w.Err(); err != nil {
			t.Fatalf("Err() = %v before removal", err)
		}

		m := r.mark()
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		r.wait(t, m, "an Overflow batch after removing root", hasOverflow)
		if w.Err() == nil {
			t.Fatal("Err() = nil with root removed")
		}

		m = r.mark()
		write(t, filepath.Join(root, "back"), "x")
		r.wait(t, m, "an Overflow batch after recreating root", hasOverflow)
		if err := w.Err(); err != nil {
			t.Fatalf("Err() = %v after root came back", err)
		}

		m = r.mark()
		write(t, filepath.Join(root, "later", "f"), "x")
		r.waitPaths(t, m, "later/f")
	})
}

// TestRootMovedAway renames Root away and checks the same recovery.
func TestRootMovedAway(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	write(t, filepath.Join(root, "f"), "x")
	w, r := start(t, Options{Root: root, PollInterval: 20 * time.Millisecond})

	m := r.mark()
	if err := os.Rename(root, filepath.Join(parent, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	r.wait(t, m, "an Overflow batch after moving root", hasOverflow)
	if w.Err() == nil {
		t.Fatal("Err() = nil with root moved away")
	}
	// Writes in the moved directory are no longer ours.
	write(t, filepath.Join(parent, "elsewhere", "g"), "x")

	m = r.mark()
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	r.wait(t, m, "an Overflow batch after recreating root", hasOverflow)
	m = r.mark()
	write(t, filepath.Join(root, "h"), "x")
	bs := r.waitPaths(t, m, "h")
	for _, b := range bs {
		if slices.Contains(b.Paths, "g") {
			t.Errorf("write in moved-away directory reported: %+v", b)
		}
	}
}

func TestNewErrors(t *testing.T) {
	noop := func(Batch) {}
	file := filepath.Join(t.TempDir(), "file")
	write(t, file, "x")
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"relative root", Options{Root: "rel"}},
		{"missing root", Options{Root: filepath.Join(t.TempDir(), "missing")}},
		{"root is a file", Options{Root: file}},
		{"relative extra", Options{Root: t.TempDir(), Extra: []string{".git/index"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if w, err := New(tc.opts, noop); err == nil {
				w.Close()
				t.Fatal("New succeeded; want an error")
			}
		})
	}
}

func TestCloseTwice(t *testing.T) {
	w, err := New(Options{Root: t.TempDir()}, func(Batch) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDirRename moves a directory within the tree: the old name and the
// files under the new name are reported, and later writes under the new name
// are reported under that name (not the stale old one).
func TestDirRename(t *testing.T) {
	bothModes(t, func(t *testing.T, poll bool) {
		root := t.TempDir()
		write(t, filepath.Join(root, "a", "sub", "f"), "x")
		_, r := start(t, Options{Root: root, ForcePoll: poll, PollInterval: 20 * time.Millisecond})

		m := r.mark()
		if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b")); err != nil {
			t.Fatal(err)
		}
		r.waitPaths(t, m, "a", "b/sub/f")

		m = r.mark()
		write(t, filepath.Join(root, "b", "sub", "g"), "y")
		bs := r.waitPaths(t, m, "b/sub/g")
		for _, b := range bs {
			if slices.Contains(b.Paths, "a/sub/g") {
				t.Errorf("write reported under the old directory name: %+v", b)
			}
		}
	})
}
