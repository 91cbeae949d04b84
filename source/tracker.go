package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/changesetd/changesetd/metrics"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/scm/fswatch"
	"github.com/changesetd/changesetd/session"
)

// tracker is a workspace's one file watcher, shared by every changeset
// that watches the workspace, plus the set of changes against HEAD that
// snapshots are built from.
//
// The watcher runs from the workspace's first scan, when the session
// opens it, until the workspace is closed: the baseline snapshot, the
// first uncommitted changeset and every turn boundary re-check only the
// paths reported since the previous look, instead of walking the tree.
type tracker struct {
	// busy serialises trackedChanges: two overlapping calls could each
	// see the other's pending paths half applied.
	busy sync.Mutex

	mu   sync.Mutex
	fw   *fswatch.Watcher
	mode string
	// ignoreSrc is the list of ignore inputs outside the tree that fw
	// watches (scm.Repo.IgnoreSources when it was armed).
	ignoreSrc []string
	listeners map[int]func(paths []string, all bool)
	nextID    int
	tracking  bool
	// closed is set by Close: the watcher is never armed again (a turn
	// boundary racing the session's dispose would otherwise start one
	// nobody closes).
	closed bool

	// treePending: fw was armed without the tree (fswatch's DeferTree),
	// which the next full status arms directory by directory as it reads
	// them (armHook).
	treePending bool

	// Guarded by mu, filled by batches while tracking.
	pending    map[string]bool
	pendingAll bool
	dirty      map[string]scm.Change // nil: unknown, needs a full status
	warnings   []string              // of the last full status
	// head is the HEAD dirty is against: a snapshot overlays dirty on
	// this commit's tree, never on another HEAD's.
	head headState

	// stopping counts the watchers being closed because nothing needed
	// them any more; Close waits for them.
	stopping sync.WaitGroup

	// beforeStatus, when set by a test, runs between reading HEAD and the
	// status that goes with it.
	beforeStatus func()
}

// headState is one reading of HEAD: its commit and tree ("" on an unborn
// branch).
type headState struct{ commit, tree string }

// errClosed is returned by what would need the watcher after Close.
var errClosed = errors.New("source: the workspace is closed")

// maxHeadRetries bounds how often a status is taken again because HEAD
// moved while it ran; each retry means another commit or checkout landed
// during a status, which does not go on for long.
const maxHeadRetries = 8

// atOneHead runs f, which reads the working tree's status against HEAD
// h, between two readings of HEAD, and again while they differ: what f
// saw was against the HEAD it returns, not half against the one before a
// commit.
func (w *gitWorkspace) atOneHead(f func(h headState) error) (headState, error) {
	for attempt := 0; ; attempt++ {
		c, t, err := w.repo.HeadTree()
		if err != nil {
			return headState{}, err
		}
		if hook := w.tr.beforeStatus; hook != nil {
			hook()
		}
		if err := f(headState{c, t}); err != nil {
			return headState{}, err
		}
		c2, t2, err := w.repo.HeadTree()
		if err != nil {
			return headState{}, err
		}
		if c2 == c && t2 == t {
			return headState{c, t}, nil
		}
		if attempt == maxHeadRetries {
			return headState{}, fmt.Errorf("source: HEAD moved during each of %d statuses; try again once the repository is settled", attempt+1)
		}
	}
}

// pollInterval is CHANGESETD_POLL_INTERVAL (a Go duration), or zero for
// the watcher's default. With CHANGESETD_WATCH=poll the tree is polled
// instead of watched, as on a network file system where events do not
// arrive.
func pollInterval() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("CHANGESETD_POLL_INTERVAL"))
	return d
}

// ensureLocked starts the watcher. tr.mu must be held.
func (w *gitWorkspace) ensureWatcherLocked() error { return w.armWatcherLocked(false) }

// watchRoot is the directory the watcher watches: the top of the
// working tree, or the session's directory in it.
func (w *gitWorkspace) watchRoot() string {
	if w.scope == "" {
		return w.repo.Root()
	}
	return filepath.Join(w.repo.Root(), filepath.FromSlash(w.scope))
}

// armWatcherLocked starts the watcher; with deferTree, its tree is left
// to the next full status (tracker.treePending). tr.mu must be held.
func (w *gitWorkspace) armWatcherLocked(deferTree bool) error {
	tr := &w.tr
	if tr.fw != nil {
		return nil
	}
	if tr.closed {
		return errClosed
	}
	gd := w.repo.GitDir()
	extra := []string{filepath.Join(gd, "HEAD"), filepath.Join(gd, "index"), filepath.Join(gd, "packed-refs"), filepath.Join(gd, "refs", "heads")}
	// What decides the ignored files outside the tree: an edit of
	// info/exclude or core.excludesFile applies at once.
	ignoreSrc := w.repo.IgnoreSources()
	extra = append(extra, ignoreSrc...)
	root, ignore := w.watchRoot(), w.repo.IsIgnored
	if w.scope != "" {
		// A session on a subdirectory watches only that directory, plus
		// the .gitignore files above it, which decide what is ignored in
		// it.
		ignore = func(rel string, isDir bool) bool { return w.repo.IsIgnored(w.fromWatch(rel), isDir) }
		for d := path.Dir(w.scope); ; d = path.Dir(d) {
			if d == "." {
				d = ""
			}
			extra = append(extra, filepath.Join(w.repo.Root(), filepath.FromSlash(d), ".gitignore"))
			if d == "" {
				break
			}
		}
	}
	fw, err := fswatch.New(fswatch.Options{
		Root:      root,
		Ignore:    ignore,
		Extra:     extra,
		SyncDir:   gd,
		DeferTree: deferTree,
		// An editor's save is a burst of events within a few ms; 8 ms of
		// quiet coalesces it while keeping a save's delivery well under
		// the time of one git status on a large repository. Turn
		// boundaries do not wait for it (they use Sync).
		Quiet:        8 * time.Millisecond,
		Logger:       w.log,
		ForcePoll:    os.Getenv("CHANGESETD_WATCH") == "poll",
		PollInterval: pollInterval(),
	}, w.onBatch)
	if err != nil {
		return err
	}
	tr.fw, tr.mode, tr.ignoreSrc = fw, string(fw.Mode()), ignoreSrc
	// Polling took its own look at the tree.
	tr.treePending = deferTree && fw.Mode() == fswatch.ModeFsnotify
	metrics.WatcherMode.WithLabelValues(tr.mode).Inc()
	if fw.Mode() != fswatch.ModeFsnotify {
		w.log.Warn("watching by polling", "reason", fw.ModeReason())
	}
	return nil
}

// armPreloadingLocked arms the watcher for a first full status, which
// arms the tree's directories as it reads them (armHook), while the
// index and HEAD's tree, which the status needs first, are read beside
// it. A failure to read them comes again from the status. tr.mu must be
// held.
func (w *gitWorkspace) armPreloadingLocked(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.repo.Preload(ctx) })
	err := w.armWatcherLocked(true)
	wg.Wait()
	return err
}

// armHook is the scm.WithDirHook function that arms fw's tree as a full
// status walks it; armed reports whether it reached the watcher's root.
func (w *gitWorkspace) armHook(fw *fswatch.Watcher) (hook func(rel string, tree bool), armed func() bool) {
	root := w.watchRoot()
	var reached atomic.Bool
	hook = func(rel string, tree bool) {
		abs := filepath.Join(w.repo.Root(), filepath.FromSlash(rel))
		if abs == root {
			reached.Store(true)
		}
		if tree {
			fw.ArmTree(abs)
		} else {
			fw.Arm(abs)
		}
	}
	return hook, reached.Load
}

// fromWatch turns a path relative to the watched directory into one
// relative to the repository's top.
func (w *gitWorkspace) fromWatch(rel string) string {
	switch {
	case w.scope == "":
		return rel
	case rel == "" || rel == ".":
		return w.scope
	}
	return w.scope + "/" + rel
}

func (w *gitWorkspace) onBatch(b fswatch.Batch) {
	tr := &w.tr
	all := b.Overflow || len(b.Extra) > 0
	if w.scope != "" {
		for i, p := range b.Paths {
			b.Paths[i] = w.fromWatch(p)
		}
	}
	for _, p := range append(b.Paths, b.Extra...) {
		if filepath.Base(p) == ".gitignore" {
			all = true // what is ignored may have changed anywhere below
			break
		}
	}
	if all {
		// A .gitignore, info/exclude, the config or core.excludesFile
		// may have changed (or HEAD or the index, which cost a full
		// status anyway): the rules are read again.
		w.repo.InvalidateIgnoreRules()
	}
	tr.mu.Lock()
	if len(b.Extra) > 0 {
		w.rearmIfSourcesMovedLocked()
	}
	if tr.tracking {
		if all {
			tr.pendingAll = true
		} else {
			if tr.pending == nil {
				tr.pending = map[string]bool{}
			}
			for _, p := range b.Paths {
				tr.pending[p] = true
			}
		}
	}
	ls := slices.Collect(maps.Values(tr.listeners))
	tr.mu.Unlock()
	for _, f := range ls {
		if all {
			f(nil, true)
		} else if len(b.Paths) > 0 {
			f(b.Paths, false)
		}
	}
}

// rearmIfSourcesMovedLocked replaces the watcher with one watching the
// ignore inputs as configured now, when a config edit named another
// excludes file: edits of the new file must apply at once too. The new
// watcher is armed before the old one is closed, so no event falls
// between them; the caller's batch already asks for a full status.
// tr.mu must be held; it runs on the old watcher's goroutine, so that
// watcher is closed by another.
func (w *gitWorkspace) rearmIfSourcesMovedLocked() {
	tr := &w.tr
	if tr.fw == nil || slices.Equal(w.repo.IgnoreSources(), tr.ignoreSrc) {
		return
	}
	old, mode := tr.fw, tr.mode
	tr.fw = nil
	if err := w.ensureWatcherLocked(); err != nil {
		// Keep the old one: edits of the new excludes file are then
		// seen at the next scan only.
		w.log.Warn("cannot watch the ignore files as configured now", "err", err)
		tr.fw = old
		return
	}
	tr.stopping.Go(func() {
		old.Close()
		metrics.WatcherMode.WithLabelValues(mode).Dec()
	})
}

// stopIfIdleLocked closes the watcher when nothing needs it. tr.mu must be
// held.
func (w *gitWorkspace) stopIfIdleLocked() {
	tr := &w.tr
	if tr.fw == nil || tr.tracking || len(tr.listeners) > 0 {
		return
	}
	fw, mode := tr.fw, tr.mode
	tr.fw = nil
	// Not under tr.mu: closing waits for the watcher's goroutines, one of
	// which may be waiting for tr.mu in onBatch.
	tr.stopping.Go(func() {
		fw.Close()
		metrics.WatcherMode.WithLabelValues(mode).Dec()
	})
}

// Watch registers a listener on the shared watcher.
func (w *gitWorkspace) Watch(onChange func(paths []string, all bool)) (session.Watch, error) {
	// A first scan deferred until now starts, and whichever of the two
	// arms the watcher reads the index and HEAD's tree meanwhile, which
	// the scan needs first.
	w.startFirst()
	tr := &w.tr
	tr.mu.Lock()
	defer tr.mu.Unlock()
	arm := w.ensureWatcherLocked
	if tr.fw == nil && w.first.kick != nil {
		arm = func() error { return w.armPreloadingLocked(context.Background()) }
	}
	if err := arm(); err != nil {
		return nil, err
	}
	if tr.listeners == nil {
		tr.listeners = map[int]func([]string, bool){}
	}
	tr.nextID++
	id := tr.nextID
	tr.listeners[id] = onChange
	return &listener{w: w, id: id}, nil
}

// listener is one Watch registration.
type listener struct {
	w  *gitWorkspace
	id int
}

func (l *listener) Mode() (string, string) {
	tr := &l.w.tr
	tr.mu.Lock()
	fw := tr.fw
	tr.mu.Unlock()
	if fw == nil {
		return "none", "not watching"
	}
	return string(fw.Mode()), fw.ModeReason()
}

func (l *listener) Stop() {
	tr := &l.w.tr
	tr.mu.Lock()
	defer tr.mu.Unlock()
	delete(tr.listeners, l.id)
	l.w.stopIfIdleLocked()
}

// trackedChanges returns the working tree's changes against HEAD as of
// now, and that HEAD: after a watcher barrier, only the paths reported
// since the last call are re-checked; the first call, an overflow or a
// change of HEAD or the index needs a full status. The changes and the
// HEAD are read together (atOneHead), so a commit landing meanwhile
// cannot make a snapshot of the old HEAD's tree with the new HEAD's
// changes.
func (w *gitWorkspace) trackedChanges(ctx context.Context) ([]scm.Change, headState, error) {
	tr := &w.tr
	tr.busy.Lock()
	defer tr.busy.Unlock()
	tr.mu.Lock()
	if tr.fw == nil {
		if tr.closed {
			tr.mu.Unlock()
			return nil, headState{}, errClosed
		}
		// (The status's own walk starts only once every watch is armed.)
		if err := w.armPreloadingLocked(ctx); err != nil {
			tr.mu.Unlock()
			return nil, headState{}, err
		}
	}
	tr.tracking = true
	fw := tr.fw
	tr.mu.Unlock()

	for {
		err := fw.Sync(ctx)
		if err == nil {
			break
		}
		// A watcher replaced meanwhile (rearmIfSourcesMovedLocked) is
		// closed; its successor is the one to wait for.
		tr.mu.Lock()
		next := tr.fw
		tr.mu.Unlock()
		if !errors.Is(err, fswatch.ErrClosed) || next == nil || next == fw {
			return nil, headState{}, err
		}
		fw = next
	}

	h, err := w.atOneHead(func(h headState) error {
		tr.mu.Lock()
		// The dirty set is kept only against the HEAD it was read with.
		all := tr.dirty == nil || tr.head != h || tr.pendingAll || tr.treePending
		armFW := tr.fw
		if !tr.treePending {
			armFW = nil
		}
		paths := slices.Sorted(maps.Keys(tr.pending))
		tr.pending, tr.pendingAll = nil, false
		tr.mu.Unlock()
		if all {
			sctx, armed := ctx, func() bool { return true }
			if armFW != nil {
				var hook func(string, bool)
				hook, armed = w.armHook(armFW)
				sctx = scm.WithDirHook(ctx, hook)
			}
			st, err := w.status(sctx)
			if err != nil {
				return err
			}
			if armFW != nil {
				if !armed() {
					// The walk did not read the watched directory (it
					// is ignored, say): the watcher walks it itself.
					armFW.ArmTree(w.watchRoot())
				}
				tr.mu.Lock()
				if tr.fw == armFW {
					tr.treePending = false
				}
				tr.mu.Unlock()
			}
			dirty := make(map[string]scm.Change, len(st.Changes))
			for _, c := range st.Changes {
				dirty[c.Path] = c
			}
			tr.mu.Lock()
			tr.dirty, tr.warnings, tr.head = dirty, st.Warnings, h
			tr.mu.Unlock()
			w.saveState(false)
			return nil
		}
		if len(paths) > 0 {
			cs, err := w.repo.StatusPaths(ctx, paths)
			if err != nil {
				return err
			}
			ps := newPathScopes(paths)
			tr.mu.Lock()
			for p := range tr.dirty {
				if ps.covers(p) {
					delete(tr.dirty, p)
				}
			}
			for _, c := range cs {
				tr.dirty[c.Path] = c
			}
			tr.mu.Unlock()
		}
		return nil
	})
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err != nil {
		tr.dirty = nil // a full status next time
		return nil, headState{}, err
	}
	out := slices.Collect(maps.Values(tr.dirty))
	slices.SortFunc(out, func(a, b scm.Change) int { return strings.Compare(a.Path, b.Path) })
	return out, h, nil
}

// tracking reports whether the tracker keeps the status current.
func (w *gitWorkspace) tracking() bool {
	w.tr.mu.Lock()
	defer w.tr.mu.Unlock()
	return w.tr.tracking && w.tr.fw != nil
}

// trackedWarnings returns what the last full status could not apply.
func (w *gitWorkspace) trackedWarnings() []string {
	w.tr.mu.Lock()
	defer w.tr.mu.Unlock()
	return w.tr.warnings
}

// Close stops the workspace's watcher, whatever still listens or tracks,
// and closes the repository's object files: the session owning the
// workspace is gone. It waits for the watcher's goroutines, so its inotify
// watches are released when it returns.
func (w *gitWorkspace) Close() error {
	w.stopFirstScan()
	tr := &w.tr
	tr.mu.Lock()
	fw, mode := tr.fw, tr.mode
	tr.fw = nil
	tr.tracking = false
	tr.listeners = nil
	tr.closed = true
	tr.mu.Unlock()
	tr.stopping.Wait()
	w.saveState(true)
	err := w.repo.Close() // its object files
	if fw == nil {
		return err
	}
	if e := fw.Close(); e != nil {
		err = e
	}
	metrics.WatcherMode.WithLabelValues(mode).Dec()
	return err
}
