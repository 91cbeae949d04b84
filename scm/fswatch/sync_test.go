package fswatch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// never is a coalescing window and poll interval that do not elapse during a
// test: whatever is delivered was delivered by Sync.
const never = time.Hour

// syncCase is one watcher configuration under test.
type syncCase struct {
	name string
	// opts returns the options for root, whose .git directory exists.
	opts func(root string) Options
	// syncDir is where markers go ("" for none), for the leftover check.
	syncDir func(root string) string
}

// syncCases covers fsnotify with SyncDir not watched otherwise, with SyncDir
// already watched for an Extra path, with SyncDir inside the tree (where an
// unfiltered marker would show up in Paths), and polling.
var syncCases = []syncCase{
	{
		name:    "fsnotify",
		opts:    func(root string) Options { return Options{SyncDir: filepath.Join(root, ".git")} },
		syncDir: func(root string) string { return filepath.Join(root, ".git") },
	},
	{
		name: "fsnotify-extra",
		opts: func(root string) Options {
			git := filepath.Join(root, ".git")
			return Options{SyncDir: git, Extra: []string{filepath.Join(git, "index"), filepath.Join(git, "refs", "heads")}}
		},
		syncDir: func(root string) string { return filepath.Join(root, ".git") },
	},
	{
		name:    "fsnotify-in-tree",
		opts:    func(root string) Options { return Options{SyncDir: filepath.Join(root, "state")} },
		syncDir: func(root string) string { return filepath.Join(root, "state") },
	},
	{
		name:    "poll",
		opts:    func(root string) Options { return Options{SyncDir: filepath.Join(root, ".git"), ForcePoll: true} },
		syncDir: func(root string) string { return filepath.Join(root, ".git") },
	},
}

// startSync starts a watcher for c on a new tree with a .git directory and a
// state directory, with timers that never fire.
func startSync(t *testing.T, c syncCase) (string, *Watcher, *recorder) {
	t.Helper()
	root := t.TempDir()
	write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(root, ".git", "refs", "heads", "main"), "1111\n")
	if err := os.Mkdir(filepath.Join(root, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := c.opts(root)
	opts.Root = root
	opts.Quiet, opts.MaxLatency, opts.PollInterval = never, never, never
	w, r := start(t, opts)
	if want := map[bool]Mode{true: ModePoll, false: ModeFsnotify}[opts.ForcePoll]; w.Mode() != want {
		t.Fatalf("Mode() = %q (%s); want %q", w.Mode(), w.ModeReason(), want)
	}
	return root, w, r
}

// delivered returns the paths reported in batches since mark, and whether
// any of them had Overflow set.
func (r *recorder) delivered(mark int) (map[string]bool, bool) {
	seen := map[string]bool{}
	over := false
	for _, b := range r.all()[mark:] {
		over = over || b.Overflow
		for _, p := range b.Paths {
			seen[p] = true
		}
	}
	return seen, over
}

// checkNoMarkers fails if a marker was reported or left behind.
func checkNoMarkers(t *testing.T, r *recorder, dir string) {
	t.Helper()
	for _, b := range r.all() {
		for _, p := range append(b.Paths, b.Extra...) {
			if strings.Contains(p, syncPrefix) {
				t.Errorf("marker reported: %q in %+v", p, b)
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), syncPrefix) {
			t.Errorf("marker left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
}

// TestSyncDelivers writes files and calls Sync at once: when Sync returns,
// every write has been delivered, although the coalescing window and the
// poll interval never elapse. Iterations vary the number of files and the
// kind of change (new files, files in a new directory tree, rewrites with a
// new size, removals).
func TestSyncDelivers(t *testing.T) {
	for _, c := range syncCases {
		t.Run(c.name, func(t *testing.T) {
			root, w, r := startSync(t, c)
			ctx := t.Context()
			var prev []string // files created by the previous iteration
			for i := range 50 {
				n := 1 + (i*7)%23
				m := r.mark()
				var want, removed []string
				switch i % 4 {
				case 0: // new files at the top
					for j := range n {
						want = append(want, fmt.Sprintf("i%02d-f%02d", i, j))
					}
				case 1: // a new directory tree, created faster than it can be watched
					for j := range n {
						want = append(want, fmt.Sprintf("d%02d/sub%d/f%02d", i, j%3, j))
					}
				case 2: // rewrites of existing files with a new size
					for j := range n {
						want = append(want, fmt.Sprintf("shared%02d", j))
					}
				case 3: // removals of the previous tree's files, and one new file
					for _, p := range prev {
						if err := os.Remove(filepath.Join(root, filepath.FromSlash(p))); err != nil {
							t.Fatal(err)
						}
					}
					removed, prev = prev, nil
					want = []string{fmt.Sprintf("i%02d-new", i)}
				}
				for _, p := range want {
					write(t, filepath.Join(root, filepath.FromSlash(p)), strings.Repeat("x", i))
				}
				if i%4 == 1 {
					prev = want
				}
				want = append(want, removed...)

				if err := w.Sync(ctx); err != nil {
					t.Fatalf("iteration %d: Sync: %v", i, err)
				}
				seen, over := r.delivered(m)
				if over {
					t.Fatalf("iteration %d: unexpected Overflow", i)
				}
				for _, p := range want {
					if !seen[p] {
						t.Fatalf("iteration %d: %q not delivered when Sync returned; delivered: %v", i, p, seen)
					}
				}
			}
			checkNoMarkers(t, r, c.syncDir(root))
		})
	}
}

// TestSyncNoChanges: Sync returns when nothing changed, delivering nothing.
func TestSyncNoChanges(t *testing.T) {
	for _, c := range syncCases {
		t.Run(c.name, func(t *testing.T) {
			root, w, r := startSync(t, c)
			for range 3 {
				if err := w.Sync(t.Context()); err != nil {
					t.Fatalf("Sync: %v", err)
				}
			}
			if bs := r.all(); len(bs) != 0 {
				t.Errorf("batches delivered with no changes: %+v", bs)
			}
			checkNoMarkers(t, r, c.syncDir(root))
		})
	}
}

// TestSyncConcurrent has goroutines write their own files and call Sync
// concurrently; each checks its own writes when its Sync returns. Run with
// -race.
func TestSyncConcurrent(t *testing.T) {
	for _, c := range syncCases {
		t.Run(c.name, func(t *testing.T) {
			root, w, r := startSync(t, c)
			const goroutines, rounds = 8, 15
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range rounds {
						p := fmt.Sprintf("g%d/f%02d", g, i)
						if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("g%d", g)), 0o755); err != nil {
							t.Error(err)
							return
						}
						if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(p)), []byte("x"), 0o644); err != nil {
							t.Error(err)
							return
						}
						if err := w.Sync(t.Context()); err != nil {
							t.Errorf("Sync: %v", err)
							return
						}
						if seen, _ := r.delivered(0); !seen[p] {
							t.Errorf("%q not delivered when Sync returned", p)
							return
						}
					}
				})
			}
			wg.Wait()
			checkNoMarkers(t, r, c.syncDir(root))
		})
	}
}

// TestSyncAfterClose: Sync fails with ErrClosed once the Watcher is closed.
func TestSyncAfterClose(t *testing.T) {
	for _, c := range syncCases {
		t.Run(c.name, func(t *testing.T) {
			_, w, _ := startSync(t, c)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Sync(t.Context()); !errors.Is(err, ErrClosed) {
				t.Fatalf("Sync after Close = %v; want ErrClosed", err)
			}
		})
	}
}

// TestSyncContext: Sync returns ctx.Err() for a context that has ended
// before the call, and for one that ends while the barrier cannot complete
// (onBatch is blocked, so the watcher's goroutine cannot serve it).
func TestSyncContext(t *testing.T) {
	bothModes(t, func(t *testing.T, poll bool) {
		root := t.TempDir()
		git := filepath.Join(root, ".git")
		if err := os.Mkdir(git, 0o755); err != nil {
			t.Fatal(err)
		}
		entered, gate := make(chan struct{}), make(chan struct{})
		var once sync.Once
		w, err := New(Options{Root: root, SyncDir: git, ForcePoll: poll, Quiet: never, MaxLatency: never, PollInterval: never, Logger: testLogger(t)},
			func(Batch) {
				once.Do(func() { close(entered) })
				<-gate
			})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := w.Sync(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sync with an ended context = %v; want context.Canceled", err)
		}

		write(t, filepath.Join(root, "f"), "x")
		first := make(chan error, 1)
		go func() { first <- w.Sync(t.Context()) }()
		<-entered // onBatch is now blocked inside the first Sync

		ctx, cancel = context.WithCancel(t.Context())
		second := make(chan error, 1)
		go func() { second <- w.Sync(ctx) }()
		cancel()
		if err := <-second; !errors.Is(err, context.Canceled) {
			t.Fatalf("Sync cancelled while blocked = %v; want context.Canceled", err)
		}

		close(gate)
		if err := <-first; err != nil {
			t.Fatalf("first Sync: %v", err)
		}
		if err := w.Sync(t.Context()); err != nil {
			t.Fatalf("Sync after cancellation: %v", err)
		}
		checkNoMarkers(t, newRecorder(t), git)
	})
}

// TestSyncFallback: without a usable SyncDir, Sync still returns (after its
// short wait), and the writes are delivered, but the test does not rely on
// the weaker guarantee holding exactly at that moment.
func TestSyncFallback(t *testing.T) {
	for _, name := range []string{"no SyncDir", "missing SyncDir"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			opts := Options{Root: root}
			if name == "missing SyncDir" {
				opts.SyncDir = filepath.Join(root, "missing")
			}
			w, r := start(t, opts)
			if err := w.Sync(t.Context()); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			m := r.mark()
			write(t, filepath.Join(root, "f"), "x")
			if err := w.Sync(t.Context()); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			r.waitPaths(t, m, "f")
		})
	}
}

func TestSyncDirRelative(t *testing.T) {
	if w, err := New(Options{Root: t.TempDir(), SyncDir: ".git"}, func(Batch) {}); err == nil {
		w.Close()
		t.Fatal("New succeeded with a relative SyncDir")
	}
}

// BenchmarkSync measures one Sync after a one-byte write (write) and with
// nothing changed (idle), in a tree of 100 files.
func BenchmarkSync(b *testing.B) {
	for _, poll := range []bool{false, true} {
		mode := map[bool]string{false: "fsnotify", true: "poll"}[poll]
		for _, idle := range []bool{false, true} {
			what := map[bool]string{false: "write", true: "idle"}[idle]
			b.Run(mode+"-"+what, func(b *testing.B) {
				root := b.TempDir()
				git := filepath.Join(root, ".git")
				if err := os.Mkdir(git, 0o755); err != nil {
					b.Fatal(err)
				}
				for i := range 100 {
					if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%03d", i)), nil, 0o644); err != nil {
						b.Fatal(err)
					}
				}
				w, err := New(Options{Root: root, SyncDir: git, ForcePoll: poll, Quiet: never, MaxLatency: never, PollInterval: never}, func(Batch) {})
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				// Appending to an open file keeps the write itself cheap
				// (truncating costs milliseconds on some disks), so the
				// result is mostly Sync's own latency.
				f, err := os.OpenFile(filepath.Join(root, "f000"), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				for b.Loop() {
					if !idle {
						if _, err := f.Write([]byte{'x'}); err != nil {
							b.Fatal(err)
						}
					}
					if err := w.Sync(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
