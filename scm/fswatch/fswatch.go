package fswatch

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

const (
	// defaultQuiet is the trailing quiet window. An editor's atomic save
	// (write a temp file, rename it over the target) and git's lock-file
	// dance (write index.lock, rename to index) complete within a few
	// milliseconds, so 50ms folds each into one batch, as well as a burst of
	// tool writes, while staying well under the ~100ms at which a UI update
	// stops feeling immediate. fsnotify's dedup example uses 100ms and VS
	// Code 75ms on top of its native watcher's own 50ms.
	defaultQuiet = 50 * time.Millisecond

	// defaultMaxLatency caps the delay from the first event to the flush,
	// so a continuous stream of writes (a build, a long checkout) still
	// produces a batch at least twice a second. gopls batches over 500ms.
	defaultMaxLatency = 500 * time.Millisecond

	// defaultPollInterval is the polling period. A stat walk of a
	// 10k-file tree takes a few tens of milliseconds; every 2s keeps that
	// under a few percent of one CPU while a change still shows up quickly
	// enough for a human watching an agent.
	defaultPollInterval = 2 * time.Second

	// defaultMaxQueued caps both the raw event queue and the number of
	// distinct pending paths. It matches the kernel's default
	// fs.inotify.max_queued_events (16384): past that many changes in one
	// batch the consumer's full rescan is cheaper than per-path work.
	defaultMaxQueued = 16384

	// probeTimeout bounds the wait for the canary event. On a local file
	// system inotify delivers it within microseconds; a second allows for
	// a heavily loaded machine.
	probeTimeout = time.Second

	// probePrefix names the canary files created in ProbeDir, so their
	// events can be dropped.
	probePrefix = ".changesetd-probe-"
)

// Options configure a Watcher. Only Root is required.
type Options struct {
	// Root is the absolute directory watched recursively.
	Root string

	// Ignore reports whether a path under Root is ignored. rel is
	// slash-separated and relative to Root. Ignored directories are pruned:
	// they are neither watched nor walked nor polled. Ignore may be nil.
	// Directories named .git are always pruned (the repository's own
	// directory and nested repositories); use Extra for git's files.
	Ignore func(rel string, isDir bool) bool

	// DeferTree leaves the directories below Root to the caller at first:
	// New watches Root's Extra paths only, and the tree is watched as the
	// caller calls Arm (a directory, before it reads it) and ArmTree (a
	// subtree it does not read), typically from a walk of its own that
	// reads every directory anyway. No event comes from a directory until
	// it is armed. A tree watched again later (an overflow, Root
	// replaced) is walked by the Watcher as usual.
	DeferTree bool

	// Extra lists absolute paths watched outside the tree walk, typically
	// .git/HEAD, .git/index, .git/packed-refs and .git/refs/heads. For each,
	// the parent directory is watched and events are filtered by name,
	// because git replaces these files by renaming a lock file over them.
	// An Extra path that is a directory is also watched itself, including
	// its subdirectories (refs/heads/feature/x), and any change inside is
	// reported as the Extra path.
	Extra []string

	// Quiet is the coalescing quiet window (default 50ms, see defaultQuiet).
	Quiet time.Duration
	// MaxLatency is the maximum delay from the first event to the flush
	// (default 500ms).
	MaxLatency time.Duration
	// PollInterval is the polling period, also used to retry when Root has
	// disappeared (default 2s).
	PollInterval time.Duration

	// Logger receives mode switches (Warn) and lifecycle messages; nil
	// discards.
	Logger *slog.Logger

	// ForcePoll starts in polling mode (tests, network file systems).
	ForcePoll bool

	// MaxWatches is the watch budget: if Root has more directories, the
	// Watcher polls instead. inotify watches are per user and shared by
	// every process (editors, gopls), so by default the budget is a quarter
	// of fs.inotify.max_user_watches, leaving the rest to others. Negative
	// means no budget (only the kernel's ENOSPC stops us).
	MaxWatches int

	// ProbeDir, if set, enables the canary probe: New creates and removes
	// one empty file named .changesetd-probe-* in ProbeDir and falls back to
	// polling if fsnotify does not report it within a second. ProbeDir must
	// be on the same file system as Root and somewhere the daemon may write,
	// for example the repository's .git directory; the probe never writes
	// into the worktree on its own. Empty disables the probe.
	ProbeDir string

	// SyncDir, if set, is the absolute directory where Sync creates its
	// marker files (.changesetd-sync-*, empty, removed again at once). It
	// must be on the same file system as Root, somewhere the daemon may
	// write and not in the user's working tree: typically the repository's
	// .git directory, which is already watched when an Extra path is in it
	// (otherwise Sync watches it, not recursively). Empty makes Sync a best
	// effort with a short fixed wait; see Sync. Paths whose base name starts
	// with .changesetd-sync- are never reported, wherever they are.
	SyncDir string

	// TrustRemoteFS keeps fsnotify even when Root is on a remote or FUSE
	// file system (nfs, cifs/smb, 9p, fuse, which includes sshfs and
	// virtiofs). There inotify sees only changes made through this kernel,
	// so by default the Watcher polls, as git's fsmonitor refuses remote
	// repositories by default.
	TrustRemoteFS bool

	// maxQueued overrides defaultMaxQueued (tests).
	maxQueued int
	// newNotifier replaces fsnotify.NewWatcher (tests).
	newNotifier func() (notifier, <-chan fsnotify.Event, <-chan error, error)
}

// Batch is one coalesced set of possible changes.
type Batch struct {
	// Paths are slash-separated paths relative to Root that may have
	// changed (files or directories), deduplicated and sorted. The files
	// of a newly created directory are included. A directory path means
	// anything under it may have changed.
	Paths []string
	// Extra are the Options.Extra paths that may have changed, sorted.
	Extra []string
	// Overflow reports that events were lost, or that Root disappeared or
	// came back: the consumer must rescan everything. Paths may then be
	// incomplete.
	Overflow bool
}

// Mode is how a Watcher learns about changes.
type Mode string

const (
	ModeFsnotify Mode = "fsnotify"
	ModePoll     Mode = "poll"
)

// Watcher watches one tree. Create it with New and stop it with Close.
type Watcher struct {
	opts    Options
	root    string
	onBatch func(Batch)
	log     *slog.Logger

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	syncCh chan chan<- error // Sync calls, received by the run goroutine
	armCh  chan armRequest   // Arm and ArmTree calls, received by the run goroutine

	q *queue

	// mu guards the status read by Mode, ModeReason and Err.
	mu     sync.Mutex
	mode   Mode
	reason string
	err    error

	// Everything below is owned by the run goroutine (and by New before it
	// starts it).
	rootInfo  os.FileInfo // identity of Root, to notice it being replaced
	lost      bool        // Root is missing; retrying every PollInterval
	fw        notifier
	gen       uint64              // generation of fw, to drop stale queue entries
	watched   map[string]struct{} // absolute directories with a watch
	pruned    map[string]struct{} // absolute ignored directories seen by walks
	extraDirs map[string]struct{} // Extra paths that are directories
	probePath string              // canary file; its events are dropped
	snap      map[string]fileStat // polling: Root-relative path -> stat
	extraSnap map[string]fileStat // polling: absolute path under Extra -> stat
	pend      pending

	syncTimer  *time.Timer    // the current round's wait
	round      *syncRound     // the Sync round in progress, if any
	syncNext   []chan<- error // Sync calls waiting for the next round
	syncWarned bool           // the marker failure was logged
}

// New validates opts, establishes the watches and starts watching. onBatch is
// called from a single goroutine, serially; a slow onBatch delays later
// batches but never loses events (beyond the queue cap).
func New(opts Options, onBatch func(Batch)) (*Watcher, error) {
	if onBatch == nil {
		return nil, errors.New("fswatch: nil onBatch")
	}
	if !filepath.IsAbs(opts.Root) {
		return nil, fmt.Errorf("fswatch: root %q is not absolute", opts.Root)
	}
	for _, e := range opts.Extra {
		if !filepath.IsAbs(e) {
			return nil, fmt.Errorf("fswatch: extra path %q is not absolute", e)
		}
	}
	if opts.Quiet <= 0 {
		opts.Quiet = defaultQuiet
	}
	if opts.MaxLatency <= 0 {
		opts.MaxLatency = defaultMaxLatency
	}
	if opts.MaxLatency < opts.Quiet {
		opts.MaxLatency = opts.Quiet
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = defaultPollInterval
	}
	if opts.maxQueued <= 0 {
		opts.maxQueued = defaultMaxQueued
	}
	if opts.MaxWatches == 0 {
		opts.MaxWatches = defaultWatchBudget()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	root := filepath.Clean(opts.Root)
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("fswatch: root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("fswatch: root %s is not a directory", root)
	}
	extra := make([]string, len(opts.Extra))
	for i, e := range opts.Extra {
		extra[i] = filepath.Clean(e)
	}
	opts.Extra = extra
	if opts.SyncDir != "" {
		if !filepath.IsAbs(opts.SyncDir) {
			return nil, fmt.Errorf("fswatch: sync directory %q is not absolute", opts.SyncDir)
		}
		opts.SyncDir = filepath.Clean(opts.SyncDir)
	}

	w := &Watcher{
		opts:     opts,
		root:     root,
		onBatch:  onBatch,
		log:      log.With("component", "fswatch", "root", root),
		stop:     make(chan struct{}),
		syncCh:   make(chan chan<- error),
		armCh:    make(chan armRequest),
		q:        newQueue(opts.maxQueued),
		rootInfo: fi,
		pend:     newPending(opts.maxQueued),
	}

	remote := ""
	if !opts.TrustRemoteFS {
		remote = remoteFSName(root)
	}
	poll, why := startMode(opts, remote, kqueueBackend)
	switch {
	case opts.ForcePoll || (poll && kqueueBackend):
		// Chosen, not fallen back to: nothing to warn about.
		w.log.Info("fswatch: polling", "reason", why)
		w.startPoll(why)
	case poll:
		w.fallback(why, false)
	default:
		if reason := w.startNotify(!opts.DeferTree); reason != "" {
			w.fallback(reason, false)
		} else if opts.ProbeDir != "" {
			if reason := w.probe(); reason != "" {
				w.fallback(reason, false)
			}
		}
	}

	w.wg.Go(w.run)
	return w, nil
}

// Mode reports whether the Watcher currently uses fsnotify or polling.
func (w *Watcher) Mode() Mode {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mode
}

// ModeReason says why the Watcher polls, or "" when it uses fsnotify.
func (w *Watcher) ModeReason() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

// Err describes the current problem, such as Root missing, or nil. The
// Watcher keeps retrying while Err is non-nil.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close stops all goroutines and waits for them. onBatch is not called after
// Close returns. Close is idempotent.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
	return nil
}

func (w *Watcher) setStatus(mode Mode, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mode, w.reason = mode, reason
}

func (w *Watcher) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

func (w *Watcher) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// run is the single consumer goroutine: it processes queued events,
// coalesces them, polls when polling, retries a missing Root, and calls
// onBatch.
func (w *Watcher) run() {
	defer w.closeNotify()
	defer w.endSync()

	flush := time.NewTimer(time.Hour)
	flush.Stop()
	w.syncTimer = time.NewTimer(time.Hour)
	w.syncTimer.Stop()
	tick := time.NewTicker(w.opts.PollInterval)
	defer tick.Stop()

	// rearm sets the flush timer after events arrived at now: a quiet
	// window after the latest event, but no later than MaxLatency after the
	// first one of the batch.
	rearm := func(now time.Time) {
		if w.pend.empty() {
			return
		}
		if w.pend.first.IsZero() {
			w.pend.first = now
		}
		d := min(w.opts.Quiet, w.pend.first.Add(w.opts.MaxLatency).Sub(now))
		flush.Reset(max(d, 0))
	}
	rearm(time.Now()) // a fallback in New may have left an Overflow pending

	for {
		select {
		case <-w.stop:
			return
		case <-w.q.wake:
			w.drainQueue()
			rearm(time.Now())
		case <-flush.C:
			w.deliver()
		case <-tick.C:
			switch {
			case w.lost:
				w.retryRoot()
			case w.mode == ModePoll:
				w.poll()
			}
			if w.lost || w.mode == ModePoll || w.pend.overflow {
				// A poll result is already coalesced over the interval,
				// and a lost or recovered root is news on its own.
				w.deliver()
			}
		case done := <-w.syncCh:
			w.syncRequest(done)
		case r := <-w.armCh:
			w.arm(r)
			close(r.done)
		case <-w.syncTimer.C:
			w.syncExpired()
		}
		w.checkSync()
	}
}

// deliver calls onBatch with the pending batch, if any.
func (w *Watcher) deliver() {
	if w.pend.empty() || w.stopped() {
		return
	}
	b := w.pend.batch()
	w.pend = newPending(w.opts.maxQueued)
	w.onBatch(b)
}

// fallback switches to polling, logging the reason once. overflow is set
// when changes may have been missed since the consumer last looked.
func (w *Watcher) fallback(reason string, overflow bool) {
	if w.mode == ModePoll {
		return
	}
	w.log.Warn("fswatch: falling back to polling", "reason", reason)
	w.closeNotify()
	w.startPoll(reason)
	if overflow {
		w.pend.setOverflow()
	}
}

// rootLost handles Root disappearing or being replaced by another directory.
func (w *Watcher) rootLost(err error) {
	w.pend.setOverflow()
	if err == nil {
		// Replaced: the old watches follow the old directory, so rebuild.
		w.log.Info("fswatch: root replaced; re-establishing watches")
		w.reestablish()
		return
	}
	if !w.lost {
		w.log.Warn("fswatch: root lost; retrying", "err", err)
	}
	w.lost = true
	w.setErr(fmt.Errorf("fswatch: root %s: %w", w.root, err))
	w.closeNotify()
	w.snap, w.extraSnap = nil, nil
}

// checkRoot reports whether Root is still the directory New saw; err is
// non-nil if Root is missing or not a directory.
func (w *Watcher) checkRoot() (same bool, fi os.FileInfo, err error) {
	fi, err = os.Stat(w.root)
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	if err != nil {
		return false, nil, err
	}
	return os.SameFile(fi, w.rootInfo), fi, nil
}

// retryRoot runs every PollInterval while Root is lost.
func (w *Watcher) retryRoot() {
	_, fi, err := w.checkRoot()
	if err != nil {
		return
	}
	w.log.Info("fswatch: root is back")
	w.lost = false
	w.rootInfo = fi
	w.setErr(nil)
	w.pend.setOverflow()
	w.reestablish()
}

// reestablish rebuilds the watches or the poll snapshot from scratch, in the
// current mode.
func (w *Watcher) reestablish() {
	if fi, err := os.Stat(w.root); err == nil {
		w.rootInfo = fi
	}
	if w.mode == ModePoll {
		w.startPoll(w.reason)
		return
	}
	w.closeNotify()
	if reason := w.startNotify(true); reason != "" {
		w.fallback(reason, true)
	}
}

// pending accumulates one batch.
type pending struct {
	max      int
	paths    map[string]struct{}
	extra    map[string]struct{}
	overflow bool
	first    time.Time
}

func newPending(max int) pending {
	return pending{max: max, paths: map[string]struct{}{}, extra: map[string]struct{}{}}
}

func (p *pending) empty() bool {
	return len(p.paths) == 0 && len(p.extra) == 0 && !p.overflow
}

func (p *pending) addPath(rel string) {
	if p.overflow {
		return
	}
	if len(p.paths) >= p.max {
		p.setOverflow()
		return
	}
	p.paths[rel] = struct{}{}
}

func (p *pending) addExtra(abs string) { p.extra[abs] = struct{}{} }

// setOverflow marks the batch as lossy; individual paths are dropped, since
// the consumer rescans everything anyway.
func (p *pending) setOverflow() {
	p.overflow = true
	clear(p.paths)
}

func (p *pending) batch() Batch {
	b := Batch{Overflow: p.overflow}
	for k := range p.paths {
		b.Paths = append(b.Paths, k)
	}
	for k := range p.extra {
		b.Extra = append(b.Extra, k)
	}
	slices.Sort(b.Paths)
	slices.Sort(b.Extra)
	return b
}

// rel returns the slash-separated path of abs relative to Root, and false if
// abs is Root itself or outside it.
func (w *Watcher) rel(abs string) (string, bool) {
	if len(abs) <= len(w.root) || abs[:len(w.root)] != w.root || !os.IsPathSeparator(abs[len(w.root)]) {
		if w.root == string(filepath.Separator) && len(abs) > 1 && abs[0] == filepath.Separator {
			return filepath.ToSlash(abs[1:]), true
		}
		return "", false
	}
	return filepath.ToSlash(abs[len(w.root)+1:]), true
}

// ignored reports whether a Root-relative path is pruned: any directory named
// .git, anything inside a .git directory, Sync's marker files, or what
// Options.Ignore says.
func (w *Watcher) ignored(rel string, isDir bool) bool {
	if isGitPath(rel) || isSyncMarker(rel) {
		return true
	}
	return w.opts.Ignore != nil && w.opts.Ignore(rel, isDir)
}

// isGitPath reports whether rel is a .git entry or inside one.
func isGitPath(rel string) bool {
	for {
		dir, base := pathSplit(rel)
		if base == ".git" {
			return true
		}
		if dir == "" {
			return false
		}
		rel = dir
	}
}

// isSyncMarker reports whether a path's base name is that of Sync's markers.
func isSyncMarker(path string) bool {
	_, base := pathSplit(filepath.ToSlash(path))
	return strings.HasPrefix(base, syncPrefix)
}

func pathSplit(rel string) (dir, base string) {
	for i := len(rel) - 1; i >= 0; i-- {
		if rel[i] == '/' {
			return rel[:i], rel[i+1:]
		}
	}
	return "", rel
}

// extraFor returns the Extra path that abs is, or is inside (for Extra
// directories).
func (w *Watcher) extraFor(abs string) (string, bool) {
	for _, e := range w.opts.Extra {
		if abs == e {
			return e, true
		}
		if _, ok := w.extraDirs[e]; ok && len(abs) > len(e) && abs[:len(e)] == e && os.IsPathSeparator(abs[len(e)]) {
			return e, true
		}
	}
	return "", false
}
