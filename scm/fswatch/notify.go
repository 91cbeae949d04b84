package fswatch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// rawEvent is one fsnotify event as queued by the drain goroutine.
type rawEvent struct {
	gen  uint64
	name string
	op   fsnotify.Op
}

// queue carries events from the drain goroutine to the run goroutine. Pushing
// never blocks, so the drain goroutine keeps fsnotify's channels empty.
type queue struct {
	max  int
	wake chan struct{} // capacity 1: "something was queued"

	// mu guards the fields below.
	mu         sync.Mutex
	events     []rawEvent
	dropped    bool  // more than max events were queued
	kernelOver bool  // fsnotify reported ErrEventOverflow
	lastErr    error // latest other error from fsnotify
}

func newQueue(max int) *queue {
	return &queue{max: max, wake: make(chan struct{}, 1)}
}

func (q *queue) push(ev rawEvent) {
	q.mu.Lock()
	// Sync's markers are never dropped: a Sync waits for its marker.
	if len(q.events) >= q.max && !isSyncMarker(ev.name) {
		q.dropped = true
	} else {
		q.events = append(q.events, ev)
	}
	q.mu.Unlock()
	q.signal()
}

func (q *queue) pushErr(err error) {
	q.mu.Lock()
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		q.kernelOver = true
	} else {
		q.lastErr = err
	}
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take empties the queue.
func (q *queue) take() (events []rawEvent, dropped, kernelOver bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	events, dropped, kernelOver, err = q.events, q.dropped, q.kernelOver, q.lastErr
	q.events, q.dropped, q.kernelOver, q.lastErr = nil, false, false, nil
	return
}

// notifier is what the run goroutine uses of an fsnotify watcher; its
// events and errors reach the queue through drain. Tests stand in for it
// (Options.newNotifier) to drive the run goroutine with events of their
// own under a fake clock.
type notifier interface {
	Add(name string) error
	Remove(name string) error
	Close() error
}

// newFsnotify creates an fsnotify watcher and returns its channels.
func newFsnotify() (notifier, <-chan fsnotify.Event, <-chan error, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, nil, nil, err
	}
	return fw, fw.Events, fw.Errors, nil
}

// drain moves events from one fsnotify watcher's channels into the queue
// until the watcher is closed. It must never call fw.Add or fw.Remove.
func drain(events <-chan fsnotify.Event, errs <-chan error, gen uint64, q *queue) {
	for events != nil || errs != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			q.push(rawEvent{gen: gen, name: ev.Name, op: ev.Op})
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			q.pushErr(err)
		}
	}
}

// errLimit marks a failure that means fsnotify cannot cover the tree.
type errLimit struct{ reason string }

func (e *errLimit) Error() string { return e.reason }

// limitReason classifies an error from fsnotify's Add or NewWatcher.
func limitReason(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "inotify watch limit reached (ENOSPC)"
	case errors.Is(err, syscall.EMFILE):
		return "inotify instance or file descriptor limit reached (EMFILE)"
	case errors.Is(err, syscall.ENFILE):
		return "system file descriptor limit reached (ENFILE)"
	}
	return ""
}

// startNotify creates an fsnotify watcher, watches the tree and the Extra
// paths, and starts the drain goroutine. It returns a reason to poll instead,
// or "" on success.
func (w *Watcher) startNotify(tree bool) string {
	newNotifier := w.opts.newNotifier
	if newNotifier == nil {
		newNotifier = newFsnotify
	}
	fw, events, errs, err := newNotifier()
	if err != nil {
		if r := limitReason(err); r != "" {
			return r
		}
		return fmt.Sprintf("fsnotify unavailable: %v", err)
	}
	w.fw = fw
	w.gen++
	w.watched = map[string]struct{}{}
	w.pruned = map[string]struct{}{}
	w.extraDirs = map[string]struct{}{}
	w.snap, w.extraSnap = nil, nil
	// Without tree (Options.DeferTree), Root and its directories come by
	// Arm.
	if tree {
		if err := w.addTree(w.root, false); err != nil {
			w.closeNotify()
			var lim *errLimit
			if errors.As(err, &lim) {
				return lim.reason
			}
			return fmt.Sprintf("watching %s: %v", w.root, err)
		}
	}
	for _, e := range w.opts.Extra {
		if err := w.addExtra(e, false); err != nil {
			w.closeNotify()
			return err.reason
		}
	}
	gen := w.gen
	w.wg.Go(func() { drain(events, errs, gen, w.q) })
	w.setStatus(ModeFsnotify, "")
	return ""
}

// closeNotify closes the fsnotify watcher, if any; its drain goroutine then
// exits. Events it already queued are dropped by generation.
func (w *Watcher) closeNotify() {
	if w.fw == nil {
		return
	}
	w.fw.Close()
	w.fw = nil
	w.gen++
	w.watched, w.pruned = nil, nil
}

// watch adds one directory watch.
func (w *Watcher) watch(dir string) error {
	if _, ok := w.watched[dir]; ok {
		return nil
	}
	if w.opts.MaxWatches > 0 && len(w.watched) >= w.opts.MaxWatches {
		return &errLimit{fmt.Sprintf("more than %d directories to watch (the watch budget, a quarter of fs.inotify.max_user_watches unless set)", w.opts.MaxWatches)}
	}
	if err := w.fw.Add(dir); err != nil {
		if r := limitReason(err); r != "" {
			return &errLimit{r}
		}
		return err
	}
	w.watched[dir] = struct{}{}
	return nil
}

// addTree watches dir and every non-ignored directory below it. With
// synthesize, it adds dir's contents to the pending batch: files created
// before the watch was armed produce no events of their own.
func (w *Watcher) addTree(dir string, synthesize bool) error {
	if !synthesize {
		return w.addDirs(dir)
	}
	n := 0
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if n++; n%256 == 0 && w.stopped() {
			return filepath.SkipAll
		}
		if err != nil {
			// Vanished or unreadable: its removal (if any) is an event of
			// its own; nothing to watch here.
			if path == dir && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
		if !d.IsDir() && !synthesize {
			return nil // only directories are watched; files need no check
		}
		rel, inTree := w.rel(path)
		if inTree && w.ignored(rel, d.IsDir()) {
			if d.IsDir() {
				w.pruned[path] = struct{}{}
				return filepath.SkipDir
			}
			return nil
		}
		if synthesize && inTree {
			w.pend.addPath(rel)
		}
		if !d.IsDir() {
			return nil
		}
		if err := w.watch(path); err != nil {
			var lim *errLimit
			if errors.As(err, &lim) {
				return err
			}
			if path == dir && path == w.root {
				return err
			}
			// ENOENT (removed meanwhile), EACCES: skip the subtree.
			w.log.Debug("fswatch: cannot watch directory", "dir", path, "err", err)
			return filepath.SkipDir
		}
		return nil
	})
}

// errStopped ends addDirs when the watcher is stopped.
var errStopped = errors.New("fswatch: stopped")

// addDirs is addTree without synthesized events: only directories are
// looked at, so it reads each directory's subdirectories alone
// (subdirs), which spares the allocation of an entry for every file of
// the tree on the first arming.
func (w *Watcher) addDirs(dir string) error {
	n := 0
	var visit func(path string) error
	visit = func(path string) error {
		if n++; n%256 == 0 && w.stopped() {
			return errStopped
		}
		top := path == dir
		if rel, inTree := w.rel(path); inTree && w.ignored(rel, true) {
			w.pruned[path] = struct{}{}
			return nil
		}
		if err := w.watch(path); err != nil {
			var lim *errLimit
			if errors.As(err, &lim) {
				return err
			}
			if top && path == w.root {
				return err
			}
			// ENOENT (removed meanwhile), EACCES: skip the subtree.
			w.log.Debug("fswatch: cannot watch directory", "dir", path, "err", err)
			return nil
		}
		names, err := subdirs(path)
		if err != nil {
			// Vanished or unreadable: its removal (if any) is an event
			// of its own; nothing to watch below it.
			if top && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
		for _, name := range names {
			if err := visit(filepath.Join(path, name)); err != nil {
				return err
			}
		}
		return nil
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := visit(dir); err != nil && !errors.Is(err, errStopped) {
		return err
	}
	return nil
}

// addExtra watches the parent directory of an Extra path and, if it is a
// directory, the path itself and its subdirectories. A missing parent is
// skipped: there is nothing to watch yet.
func (w *Watcher) addExtra(e string, synthesize bool) *errLimit {
	var lim *errLimit
	if err := w.watch(filepath.Dir(e)); errors.As(err, &lim) {
		return lim
	} else if err != nil {
		w.log.Debug("fswatch: cannot watch extra path's directory", "path", e, "err", err)
	}
	fi, err := os.Stat(e)
	if err != nil || !fi.IsDir() {
		return nil
	}
	w.extraDirs[e] = struct{}{}
	if synthesize {
		w.pend.addExtra(e)
	}
	return w.watchExtraDir(e)
}

// watchExtraDir watches dir, which is or is under an Extra directory, and
// its subdirectories.
func (w *Watcher) watchExtraDir(dir string) *errLimit {
	var lim *errLimit
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if err := w.watch(path); errors.As(err, &lim) {
			return err
		}
		return nil
	})
	return lim
}

// unwatchTree forgets the watches on dir and below, after dir was removed or
// renamed away. Watches on a renamed directory would otherwise keep
// reporting its children under the old name.
func (w *Watcher) unwatchTree(dir string) {
	prefix := dir + string(filepath.Separator)
	for p := range w.watched {
		if p == dir || strings.HasPrefix(p, prefix) {
			_ = w.fw.Remove(p) // already gone with the directory: fine
			delete(w.watched, p)
		}
	}
}

// drainQueue processes everything queued by the drain goroutine.
func (w *Watcher) drainQueue() {
	events, dropped, kernelOver, err := w.q.take()
	if w.fw == nil {
		return // polling or lost: stale events from a closed watcher
	}
	if err != nil {
		w.log.Debug("fswatch: fsnotify error", "err", err)
	}
	if kernelOver {
		w.fallback("inotify event queue overflowed (IN_Q_OVERFLOW)", true)
		return
	}
	for _, ev := range events {
		if ev.gen != w.gen {
			continue
		}
		if err := w.handle(ev); err != nil {
			var lim *errLimit
			if errors.As(err, &lim) {
				w.fallback(lim.reason, true)
				return
			}
		}
		if w.fw == nil {
			return // root lost or replaced while handling
		}
	}
	if dropped {
		// Dropped events may include directory creations: add any missing
		// watches, and let the consumer rescan.
		w.pend.setOverflow()
		if err := w.addTree(w.root, false); err != nil {
			var lim *errLimit
			if errors.As(err, &lim) {
				w.fallback(lim.reason, true)
			}
		}
	}
}

// handle interprets one event as a hint: the path may have changed, and if it
// is now a directory we do not watch yet, it was created (or moved in) and is
// watched and walked.
func (w *Watcher) handle(ev rawEvent) error {
	name := filepath.Clean(ev.name)
	if base := filepath.Base(name); strings.HasPrefix(base, syncPrefix) {
		w.syncEvent(base, ev.op.Has(fsnotify.Create))
		return nil
	}
	if name == w.probePath || (w.opts.ProbeDir != "" && filepath.Dir(name) == w.opts.ProbeDir && strings.HasPrefix(filepath.Base(name), probePrefix)) {
		return nil
	}
	if name == w.root {
		if ev.op.Has(fsnotify.Remove) || ev.op.Has(fsnotify.Rename) {
			if same, _, err := w.checkRoot(); !same {
				w.rootLost(err)
			}
		}
		return nil
	}
	gone := ev.op.Has(fsnotify.Remove) || ev.op.Has(fsnotify.Rename)
	if gone {
		if _, ok := w.watched[name]; ok {
			w.unwatchTree(name)
		}
	}

	if e, ok := w.extraFor(name); ok {
		w.pend.addExtra(e)
		if fi, err := os.Stat(name); err == nil && fi.IsDir() {
			if _, watched := w.watched[name]; !watched {
				var lim *errLimit
				if name == e {
					lim = w.addExtra(e, true)
				} else {
					lim = w.watchExtraDir(name)
				}
				if lim != nil {
					return lim
				}
			}
		}
	}

	rel, ok := w.rel(name)
	if !ok {
		return nil
	}
	fi, err := os.Lstat(name)
	if err != nil {
		// Gone: report it unless it was an ignored directory.
		if _, ok := w.pruned[name]; ok {
			delete(w.pruned, name)
			return nil
		}
		if !w.ignored(rel, false) {
			w.pend.addPath(rel)
		}
		return nil
	}
	if w.ignored(rel, fi.IsDir()) {
		if fi.IsDir() {
			w.pruned[name] = struct{}{}
		}
		return nil
	}
	w.pend.addPath(rel)
	if fi.IsDir() {
		if _, ok := w.watched[name]; !ok {
			return w.addTree(name, true)
		}
	}
	return nil
}

// probe creates and removes a canary file in ProbeDir and waits for fsnotify
// to report it. It returns a reason to poll, or "". It runs in New, before
// the run goroutine starts; queued events stay queued for it.
func (w *Watcher) probe() string {
	dir := filepath.Clean(w.opts.ProbeDir)
	w.opts.ProbeDir = dir
	tmpWatch := false
	if _, ok := w.watched[dir]; !ok {
		if err := w.fw.Add(dir); err != nil {
			if r := limitReason(err); r != "" {
				return r
			}
			w.log.Warn("fswatch: probe skipped", "dir", dir, "err", err)
			return ""
		}
		tmpWatch = true
	}
	f, err := os.CreateTemp(dir, probePrefix+"*")
	if err != nil {
		w.log.Warn("fswatch: probe skipped", "dir", dir, "err", err)
		if tmpWatch {
			_ = w.fw.Remove(dir)
		}
		return ""
	}
	w.probePath = f.Name()
	f.Close()
	defer func() {
		os.Remove(w.probePath)
		if tmpWatch {
			_ = w.fw.Remove(dir)
		}
		w.q.signal() // let the run goroutine see what was queued meanwhile
	}()

	deadline := time.NewTimer(probeTimeout)
	defer deadline.Stop()
	for {
		select {
		case <-w.q.wake:
			if w.q.has(w.probePath) {
				return ""
			}
		case <-deadline.C:
			return "no events received from file system probe"
		}
	}
}

// has reports whether an event for name is queued.
func (q *queue) has(name string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, ev := range q.events {
		if filepath.Clean(ev.name) == name {
			return true
		}
	}
	return false
}
