package fswatch

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
)

// The coalescing contract, on a fake clock: the tests below run a real
// Watcher (its run and drain goroutines, queue and timers) inside a
// synctest bubble, with the test standing in for inotify, so every
// delivery time is exact rather than "soon enough".

// fakeNotifier stands in for an fsnotify watcher: the test sends its
// events, and Add and Remove watch nothing.
type fakeNotifier struct {
	events chan fsnotify.Event
	errs   chan error
	once   sync.Once
}

func newFakeNotifier() *fakeNotifier {
	return &fakeNotifier{events: make(chan fsnotify.Event), errs: make(chan error)}
}

func (f *fakeNotifier) Add(string) error    { return nil }
func (f *fakeNotifier) Remove(string) error { return nil }
func (f *fakeNotifier) Close() error {
	f.once.Do(func() { close(f.events); close(f.errs) })
	return nil
}

// delivery is one batch and when, since the watcher started, it came.
type delivery struct {
	at    time.Duration
	paths []string
}

// fakeWatcher is a Watcher fed by a fakeNotifier, and what it delivered.
type fakeWatcher struct {
	w     *Watcher
	n     *fakeNotifier
	root  string
	start time.Time

	mu  sync.Mutex
	got []delivery
}

// startFake starts a fakeWatcher; it must be called inside a bubble, and
// is closed at the end of the test.
func startFake(t *testing.T, quiet, maxLatency time.Duration) *fakeWatcher {
	t.Helper()
	if kqueueBackend {
		t.Skip("the watcher polls where fsnotify's backend is kqueue")
	}
	f := &fakeWatcher{n: newFakeNotifier(), root: t.TempDir(), start: time.Now()}
	w, err := New(Options{
		Root:          f.root,
		Quiet:         quiet,
		MaxLatency:    maxLatency,
		PollInterval:  time.Hour,
		MaxWatches:    -1,
		TrustRemoteFS: true,
		Logger:        testLogger(t),
		newNotifier: func() (notifier, <-chan fsnotify.Event, <-chan error, error) {
			return f.n, f.n.events, f.n.errs, nil
		},
	}, func(b Batch) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.got = append(f.got, delivery{at: time.Since(f.start), paths: b.Paths})
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if w.Mode() != ModeFsnotify {
		t.Fatalf("Mode() = %q (%s), want fsnotify", w.Mode(), w.ModeReason())
	}
	f.w = w
	t.Cleanup(func() { w.Close() })
	return f
}

// event reports a write to name, as inotify would.
func (f *fakeWatcher) event(name string) {
	f.n.events <- fsnotify.Event{Name: filepath.Join(f.root, name), Op: fsnotify.Write}
}

// at sleeps until d after the watcher started, then lets the watcher's
// goroutines do what is due.
func (f *fakeWatcher) at(d time.Duration) {
	time.Sleep(time.Until(f.start.Add(d)))
	synctest.Wait()
}

func (f *fakeWatcher) deliveries() []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func (d delivery) String() string { return fmt.Sprintf("%v:%s", d.at, strings.Join(d.paths, ",")) }

// TestCoalesceQuietWindow: events closer together than the quiet window
// are one batch, delivered exactly one quiet window after the last of
// them; after a silence the next event starts a batch of its own; and a
// watcher that sees nothing delivers nothing.
func TestCoalesceQuietWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = 50 * time.Millisecond
		f := startFake(t, quiet, 500*time.Millisecond)
		ms := time.Millisecond

		f.at(10 * time.Second)
		if got := f.deliveries(); len(got) != 0 {
			t.Fatalf("batches without events: %v", got)
		}
		base := 10 * time.Second
		// A burst 20ms apart, one path twice.
		for i, name := range []string{"a", "b", "a", "c"} {
			f.at(base + time.Duration(i)*20*ms)
			f.event(name)
		}
		last := base + 60*ms
		f.at(last + quiet - ms)
		if got := f.deliveries(); len(got) != 0 {
			t.Fatalf("delivered before the quiet window after the last event passed: %v", got)
		}
		f.at(last + quiet)
		want := []delivery{{last + quiet, []string{"a", "b", "c"}}}
		if got := f.deliveries(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("burst delivered as %v, want %v", got, want)
		}

		// After the silence, a lone event is a batch of its own.
		f.at(last + time.Second)
		f.event("d")
		f.at(last + time.Second + 10*time.Second)
		want = append(want, delivery{last + time.Second + quiet, []string{"d"}})
		if got := f.deliveries(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("delivered %v, want %v", got, want)
		}
	})
}

// TestCoalesceMaxLatency: a stream of events that never leaves a quiet
// window still gets a batch out MaxLatency after the first event of each
// batch, with nothing lost or repeated, and the stream's tail goes out
// once it falls quiet.
func TestCoalesceMaxLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			quiet      = 50 * time.Millisecond
			maxLatency = 500 * time.Millisecond
			every      = 30 * time.Millisecond // < quiet: never quiet
			end        = 1950 * time.Millisecond
		)
		f := startFake(t, quiet, maxLatency)
		var sent []string
		for at := time.Duration(0); at <= end; at += every {
			f.at(time.Second + at)
			name := fmt.Sprintf("f%04d", at/time.Millisecond)
			sent = append(sent, name)
			f.event(name)
		}
		f.at(time.Second + end + 10*time.Second)

		// Batches start at 0, 510, 1020 and 1530ms (the first event after
		// each delivery); the first three are cut at MaxLatency, the last
		// by the quiet window after the stream ends.
		wantAt := []time.Duration{500, 1010, 1520, 2000}
		got := f.deliveries()
		var all []string
		for i, d := range got {
			all = append(all, d.paths...)
			if i < len(wantAt) && d.at != time.Second+wantAt[i]*time.Millisecond {
				t.Errorf("batch %d delivered at %v, want %v", i, d.at-time.Second, wantAt[i]*time.Millisecond)
			}
			first, _ := time.ParseDuration(strings.TrimPrefix(d.paths[0], "f") + "ms")
			if late := d.at - time.Second - first; late > maxLatency {
				t.Errorf("batch %d delivered %v after its first event, more than MaxLatency %v", i, late, maxLatency)
			}
		}
		if len(got) != len(wantAt) {
			t.Errorf("%d batches, want %d: %v", len(got), len(wantAt), got)
		}
		if !slices.Equal(all, sent) {
			t.Errorf("delivered paths %q, want each of %q once, in order", all, sent)
		}
	})
}
