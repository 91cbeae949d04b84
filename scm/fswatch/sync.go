package fswatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by Sync once the Watcher is closed.
var ErrClosed = errors.New("fswatch: watcher closed")

const (
	// syncPrefix names the marker files Sync creates in SyncDir. Events
	// for such names are dropped, and paths with such a base name are
	// never reported.
	syncPrefix = ".changesetd-sync-"

	// syncFallbackWait is how long Sync waits for events to arrive when it
	// has no marker (SyncDir empty or unusable). inotify queues an event
	// when the system call that caused it returns, so this only has to
	// cover the hand-offs from the kernel to fsnotify's reader goroutine
	// and on to the drain goroutine, normally microseconds.
	syncFallbackWait = 20 * time.Millisecond

	// syncMarkerTimeout bounds the wait for a marker's event. On a local
	// file system it arrives within microseconds; if it does not arrive,
	// Sync delivers an Overflow batch rather than return without the
	// guarantee.
	syncMarkerTimeout = 5 * time.Second
)

// syncSeq numbers marker files, process-wide: several Watchers may share a
// SyncDir.
var syncSeq atomic.Uint64

// syncRound is one barrier in fsnotify mode, shared by the Sync calls that
// reached the run goroutine before it started.
type syncRound struct {
	waiters []chan<- error
	marker  string // absolute path of the marker; "" for a timed round
	base    string // its base name, as matched against events
	gen     uint64 // fsnotify generation the marker was created under
	seen    bool   // the marker's create event was consumed
	expired bool   // the wait (timed round) or its bound (marker) ran out
}

// Sync returns once every file-system change that completed before Sync
// was called has been delivered through onBatch (possibly merged into a
// batch with later changes, or covered by a batch with Overflow set). It is
// how a caller takes an exact snapshot at a moment of its choosing without
// waiting for the coalescing window.
//
// With fsnotify, Sync creates an empty marker file named
// .changesetd-sync-<pid>-<n> in [Options.SyncDir] and waits until its
// creation event has been read: inotify reports the events of one watcher in
// order, so every earlier event has been read too. It then delivers all that
// is pending, removes the marker and returns. Without SyncDir (or if the
// marker cannot be created) Sync only waits a short, bounded time
// (20ms) for in-flight events and then delivers what has been
// received: a best effort, not a guarantee. While polling, Sync runs one
// poll cycle at once and delivers its result.
//
// onBatch is called from the Watcher's goroutine as always, never
// concurrently; if nothing changed, Sync returns without a batch. Sync may
// be called from several goroutines at once; concurrent calls share a
// marker. It returns ctx.Err() if ctx ends first, and ErrClosed after Close.
// It must not be called from onBatch, which would deadlock.
func (w *Watcher) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.stopped() {
		return ErrClosed
	}
	done := make(chan error, 1) // never blocks the run goroutine
	select {
	case w.syncCh <- done:
	case <-w.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-w.stop:
		select {
		case err := <-done:
			return err
		default:
			return ErrClosed
		}
	}
}

// syncRequest serves a Sync call received by the run goroutine, together
// with any others already waiting to be received.
func (w *Watcher) syncRequest(done chan<- error) {
	reqs := []chan<- error{done}
	for more := true; more; {
		select {
		case d := <-w.syncCh:
			reqs = append(reqs, d)
		default:
			more = false
		}
	}
	w.serveSync(reqs)
}

func (w *Watcher) serveSync(reqs []chan<- error) {
	switch {
	case w.lost:
		w.retryRoot()
		w.deliver()
		w.replySync(reqs)
	case w.mode == ModePoll:
		w.poll()
		w.deliver()
		w.replySync(reqs)
	case w.round != nil:
		// The current marker may predate these calls: wait for the next.
		w.syncNext = append(w.syncNext, reqs...)
	default:
		w.startRound(reqs)
	}
}

// startRound creates a marker (or, failing that, starts a timed wait) for
// reqs. Only in fsnotify mode.
func (w *Watcher) startRound(reqs []chan<- error) {
	r := &syncRound{waiters: reqs, gen: w.gen}
	marker, err := w.createMarker()
	switch {
	case marker != "":
		r.marker, r.base = marker, filepath.Base(marker)
		w.syncTimer.Reset(syncMarkerTimeout)
	default:
		if err != nil && !w.syncWarned {
			w.syncWarned = true
			w.log.Warn("fswatch: Sync cannot create its marker; waiting a fixed time instead", "dir", w.opts.SyncDir, "err", err)
		}
		w.syncTimer.Reset(syncFallbackWait)
	}
	w.round = r
}

// createMarker watches SyncDir if needed and creates a new marker file in
// it. It returns "" and nil without SyncDir.
func (w *Watcher) createMarker() (string, error) {
	dir := w.opts.SyncDir
	if dir == "" || w.fw == nil {
		return "", nil
	}
	if _, ok := w.watched[dir]; !ok {
		// Not recursively: only the markers matter here. Events for other
		// entries of a directory outside Root, or inside .git, are dropped
		// by handle.
		if err := w.fw.Add(dir); err != nil {
			return "", err
		}
		w.watched[dir] = struct{}{}
	}
	var err error
	for range 3 {
		p := filepath.Join(dir, fmt.Sprintf("%s%d-%d", syncPrefix, os.Getpid(), syncSeq.Add(1)))
		var f *os.File
		f, err = os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // left behind by a dead process with our pid
		}
		if err != nil {
			return "", err
		}
		f.Close()
		return p, nil
	}
	return "", err
}

// syncEvent handles an event for a marker's name: it is never reported, and
// the current marker's creation completes the round.
func (w *Watcher) syncEvent(base string, create bool) {
	if r := w.round; r != nil && create && base == r.base && r.gen == w.gen {
		r.seen = true
	}
}

// syncExpired runs when the round's timer fires.
func (w *Watcher) syncExpired() {
	r := w.round
	if r == nil {
		return
	}
	w.drainQueue() // what has arrived so far
	if w.round != r {
		return
	}
	r.expired = true
	if r.marker != "" && !r.seen {
		w.log.Warn("fswatch: Sync marker event not received; reporting overflow", "marker", r.marker, "timeout", syncMarkerTimeout)
		w.pend.setOverflow()
	}
}

// checkSync completes the current round once it can: its marker was seen,
// its wait expired, or the fsnotify watcher it relied on is gone (then the
// batch has Overflow set, which covers every earlier change). A pending
// Overflow alone would also cover them, but the round still waits for its
// marker, so that Sync returns only once the Watcher has caught up.
func (w *Watcher) checkSync() {
	for {
		r := w.round
		if r == nil {
			return
		}
		replaced := r.gen != w.gen || w.fw == nil
		if !r.seen && !r.expired && !replaced {
			return
		}
		if replaced {
			w.pend.setOverflow() // already set by whatever replaced it
		}
		w.round = nil
		w.syncTimer.Stop()
		w.deliver()
		if r.marker != "" {
			_ = os.Remove(r.marker)
		}
		w.replySync(r.waiters)
		if next := w.syncNext; len(next) > 0 {
			w.syncNext = nil
			w.serveSync(next)
		}
	}
}

// replySync releases Sync calls.
func (w *Watcher) replySync(reqs []chan<- error) {
	var err error
	if w.stopped() {
		err = ErrClosed // deliver skipped onBatch
	}
	for _, d := range reqs {
		d <- err
	}
}

// endSync removes a marker left by a round still open when run returns.
func (w *Watcher) endSync() {
	if r := w.round; r != nil && r.marker != "" {
		_ = os.Remove(r.marker)
	}
	w.round, w.syncNext = nil, nil
}
