package source

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/metrics"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/scm/snapstore"
	"github.com/changesetd/changesetd/session"
)

// gitWorkspace adapts a scm.Repo, the file watcher and the diff engine to
// session.Workspace.
type gitWorkspace struct {
	repo  *scm.Repo
	snaps *snapstore.Store
	log   *slog.Logger
	// top is the repository's top directory spelt from the session's
	// directory (symbolic links in it kept), the root of file URIs.
	top string
	// scope is the session's directory relative to the repository's top,
	// slash-separated; "" when the session is on the top. Changes lists
	// only files at or below it, as git diff -- . run there does.
	scope string

	snapMu sync.Mutex // serialises snapshots
	// firstView is the workspace's first full uncommitted view while it
	// is computed: a snapshot that is not a turn's waits for it before
	// it reads and stores the changed files (firstViewGate).
	firstView firstViewGate
	tr        tracker
	own       ownViews // the operations' own index writes (editor.go)

	// hashWorktree is repo.HashWorktree; tests count its calls.
	hashWorktree func(ctx context.Context, path string) (string, error)

	// statePath is where the working tree's state (scm.Repo.SaveState)
	// is kept between runs: the stat data and blob ids of the files
	// hashed, so a restart does not hash them again.
	statePath string
	// diffs are the diffs of files changed on both sides, by content,
	// saved beside the state.
	diffs diffCache
	// last is the latest uncommitted view, saved with the state; known
	// is the one loaded at open, offered until a computed one replaces
	// it; first runs the first scan in the background when there is one
	// to show meanwhile.
	last  lastView
	known known
	first firstScan
	// viewBytes is the view saved last (or loaded), kept in each state
	// written between two saves of the view: it carries its own state
	// key, so a stale one is not trusted.
	viewMu    sync.Mutex
	viewBytes []byte

	// readWorktree, when set by a test, stands in for
	// repo.ReadWorktreeCanonical (to simulate a file that cannot be read,
	// which a test run as root cannot make).
	readWorktree func(p string) ([]byte, uint32, error)
}

// reader returns a function that reads working-tree files as git would
// store them, for the files of one computation: git's configuration and
// attribute files are read once for all of them (scm.WorktreeReader).
func (w *gitWorkspace) reader() func(p string) ([]byte, uint32, error) {
	if w.readWorktree != nil {
		return w.readWorktree
	}
	read := w.repo.WorktreeReader()
	return func(p string) ([]byte, uint32, error) {
		b, mode, _, err := read(p)
		return b, mode, err
	}
}

// vanished reports whether a read failed because the file is no longer
// there (or a directory above it is now a file), as opposed to being
// there but unreadable.
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// unreadable collects, during one computation of changes, the files that
// exist but cannot be read (permissions, say), with why.
type unreadable struct {
	mu    sync.Mutex
	paths map[string]error
}

func (u *unreadable) add(p string, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.paths == nil {
		u.paths = map[string]error{}
	}
	u.paths[p] = err
}

// mark shows each unreadable file of list as changed without content
// (no counts, no patch) with a warning, instead of as deleted or not at
// all, and adds one warning per file to the list's.
func (u *unreadable) mark(list *session.ChangeList, sizes map[string]int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := range list.Files {
		f := &list.Files[i]
		if f.New == nil {
			continue
		}
		err, ok := u.paths[f.New.Path]
		if !ok {
			continue
		}
		f.Precise, f.Added, f.Removed = false, 0, 0
		f.New.Size = sizes[f.New.Path]
		own, _ := f.Meta["changesetd"].(protocol.Object)
		if own == nil {
			own = protocol.Object{}
			f.Meta["changesetd"] = own
		}
		delete(own, "tooLarge")
		own["unreadable"] = err.Error()
		list.Warnings = append(list.Warnings, fmt.Sprintf("%s cannot be read (%v): it is shown as changed, without its content", f.New.Path, err))
	}
}

var _ session.Workspace = (*gitWorkspace)(nil)
var _ session.PathSnapshotter = (*gitWorkspace)(nil)

// Opener returns the function that opens a session's directory: a git
// working tree, or a plain directory when it is not in a repository.
// Snapshots are stored in snaps.
func Opener(log *slog.Logger, snaps *snapstore.Store) func(dir string) (session.Workspace, error) {
	return func(dir string) (session.Workspace, error) {
		repo, err := scm.Open(dir)
		if notGit(err) {
			// Not a repository: snapshots still give it sessions and turns.
			pw, err := openPlain(dir, snaps, log)
			if err != nil {
				return nil, err
			}
			return pw, nil
		}
		if err != nil {
			return nil, err
		}
		// Snapshots reference the project's objects instead of copying them.
		if err := snaps.AddAlternate(filepath.Join(repo.CommonDir(), "objects")); err != nil {
			return nil, err
		}
		top, scope, err := scopeOf(dir, repo.Root())
		if err != nil {
			return nil, err
		}
		w := &gitWorkspace{repo: repo, snaps: snaps, top: top, scope: scope, log: log.With("component", "workspace", "root", repo.Root())}
		w.hashWorktree = repo.HashWorktree
		w.statePath = statePath(snaps, repo.Root())
		n, extra, err := repo.LoadStateWith(w.statePath)
		if err == nil {
			w.log.Debug("working-tree state loaded", "entries", n)
		} else if !errors.Is(err, fs.ErrNotExist) {
			// Another HEAD or index, or a damaged file: nothing of it
			// is used, and the first scan hashes what it must.
			w.log.Info("the saved working-tree state is not used", "reason", err)
		}
		if n, err := w.diffs.load(w.diffsPath()); err == nil {
			w.log.Debug("saved diffs loaded", "files", n)
		} else if !errors.Is(err, fs.ErrNotExist) {
			w.log.Info("the saved diffs are not used", "reason", err)
		}
		if len(extra) > 0 {
			key, err := repo.StateKey()
			if err == nil {
				w.known.key = key
				w.known.files, w.known.stamp, err = decodeView(extra, key, scope, &w.diffs)
			}
			if err != nil {
				w.log.Info("the last-known view is not shown", "reason", err)
			} else {
				w.viewBytes = extra
				w.log.Debug("last-known view loaded", "files", len(w.known.files))
			}
		}
		if w.hasKnown() {
			// The session shows the last-known view; the first scan,
			// which verifies it, starts once the session watches the
			// tree or asks for the status (deferFirstScan).
			w.deferFirstScan()
			return w, nil
		}
		// The first scan fills the stat cache and starts the tracker: the
		// session's baseline snapshot and the first uncommitted changeset
		// then take its result (and what the watcher reported since)
		// instead of walking the tree again each.
		if _, _, err := w.trackedChanges(context.Background()); err != nil {
			w.Close()
			return nil, err
		}
		return w, nil
	}
}

// statePath is where the working tree at root keeps its state: one file
// per working tree, named by its path, beside the snapshots.
func statePath(snaps *snapstore.Store, root string) string {
	sum := sha1.Sum([]byte(root))
	return filepath.Join(snaps.Dir(), "worktree-state", hex.EncodeToString(sum[:10])+".state")
}

// saveState writes the working tree's state for the next run, and with
// diffs the diffs kept (at close only: after a burst they are megabytes,
// which a full status must not wait for); a failure costs the next run
// some hashing or diffing, nothing else.
func (w *gitWorkspace) saveState(diffs bool) {
	if w.statePath == "" {
		return
	}
	w.viewMu.Lock()
	if diffs {
		// The view is encoded at close only, like the diffs; a state
		// written between carries the one saved or loaded last.
		if b := w.last.encode(w.scope, &w.diffs); b != nil {
			w.viewBytes = b
		}
	}
	view := w.viewBytes
	w.viewMu.Unlock()
	if err := w.repo.SaveStateWith(w.statePath, view); errors.Is(err, fs.ErrNotExist) {
		w.log.Debug("cannot save the working-tree state", "err", err) // the repository went away
	} else if err != nil {
		w.log.Warn("cannot save the working-tree state", "err", err)
	}
	if !diffs {
		return
	}
	if err := w.diffs.save(w.diffsPath()); err != nil {
		w.log.Warn("cannot save the diffs", "err", err)
	}
}

// diffsPath is where the diffs of the working tree's changed files are
// kept between runs.
func (w *gitWorkspace) diffsPath() string {
	return strings.TrimSuffix(w.statePath, ".state") + ".diffs"
}

// scopeOf returns the repository top as seen from dir and dir's path
// below it.
func scopeOf(dir, root string) (top, scope string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	real := abs
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		real = r
	}
	rel, ok := confine.Rel(root, real)
	if !ok {
		return "", "", fmt.Errorf("%s is not inside the repository at %s", dir, root)
	}
	if rel == "." {
		return abs, "", nil
	}
	scope = filepath.ToSlash(rel)
	// Keep the session's spelling of the path when it ends in scope, so
	// that file URIs start with the directory the session was given.
	top = root
	if t, ok := strings.CutSuffix(abs, string(filepath.Separator)+rel); ok {
		top = t
	}
	return top, scope, nil
}

func (w *gitWorkspace) Root() string { return w.top }

// inScope reports whether a repository path is under the session's
// directory.
func (w *gitWorkspace) inScope(p string) bool {
	return w.scope == "" || p == w.scope || strings.HasPrefix(p, w.scope+"/")
}

// status is a full status of the session's directory: the whole tree, or
// only the subdirectory the session is on (without the warnings, which
// only a whole-tree status gathers).
func (w *gitWorkspace) status(ctx context.Context) (*scm.Status, error) {
	if w.scope == "" {
		return w.repo.Status(ctx)
	}
	cs, err := w.repo.StatusPaths(ctx, []string{w.scope})
	if err != nil {
		return nil, err
	}
	return &scm.Status{Changes: cs}, nil
}

// scoped drops the changes outside the session's directory.
func (w *gitWorkspace) scoped(cs []scm.Change) []scm.Change {
	if w.scope == "" {
		return cs
	}
	return slices.DeleteFunc(cs, func(c scm.Change) bool { return !w.inScope(c.Path) })
}

// ReadBlob reads an object of the project or of a snapshot.
func (w *gitWorkspace) ReadBlob(oid string) ([]byte, error) {
	if b, err := w.repo.ReadBlob(oid); err == nil {
		return b, nil
	}
	return w.snaps.ReadBlob(oid)
}

// BlobSize reports the size of an object of the repository without
// reading it (session.BlobSizer); the snapshot store's objects, which
// are never larger than maxLoadedFile, are not looked up.
func (w *gitWorkspace) BlobSize(oid string) (int64, bool) {
	n, err := w.repo.BlobSize(oid)
	return n, err == nil
}

// maxLoadedFile is the largest file read into memory to be diffed. A
// bigger one is never diffed anyway (changeset.DefaultMaxFileBytes: no
// hunks, no counts, marked tooLarge), so it is not read either: memory
// stays bounded by this size per file diffed at once, whatever the size
// of the files in the tree.
const maxLoadedFile = changeset.DefaultMaxFileBytes

// maxSnapshotFile bounds the files a snapshot stores; a bigger changed file
// keeps its committed version in the snapshot and a warning is logged.
const maxSnapshotFile = 64 << 20

// maxListedHash bounds the files hashed only so that a listing can name
// their blob (the content is neither diffed nor stored): git status lists
// a file of any size without reading it, and a 40 GiB file (even a
// sparse one) would take minutes. A bigger file is listed with its size
// and no blob id.
const maxListedHash = maxSnapshotFile

// Snapshot records the working tree: HEAD's tree with every changed file
// overlaid. The change set comes from the tracker, which after the first
// snapshot re-checks only the paths the watcher reported, so a turn
// boundary costs a watcher barrier plus the changed files, not a scan.
func (w *gitWorkspace) Snapshot(ctx context.Context, track bool) (string, error) {
	if err := w.awaitFirst(ctx); err != nil {
		return "", err
	}
	w.snapMu.Lock()
	defer w.snapMu.Unlock()
	// The changes are overlaid on the tree of the HEAD they were read
	// against, never on one read before or after them.
	var tracked []scm.Change
	var head headState
	var err error
	if track || w.tracking() {
		tracked, head, err = w.trackedChanges(ctx)
	} else {
		head, err = w.atOneHead(func(headState) error {
			st, err := w.status(ctx)
			if err == nil {
				tracked = st.Changes
			}
			return err
		})
	}
	if err != nil {
		return "", err
	}
	tree, _, err := w.overlay(ctx, head, tracked, !track)
	return tree, err
}

// SnapshotPaths records HEAD's tree with only paths overlaid as they are
// now (session.PathSnapshotter): the current versions of a few files,
// kept without a scan of the tree or a wait for the tracker.
func (w *gitWorkspace) SnapshotPaths(ctx context.Context, paths []string) (string, map[string]string, error) {
	if err := w.awaitFirst(ctx); err != nil {
		return "", nil, err
	}
	var changed []scm.Change
	head, err := w.atOneHead(func(headState) error {
		cs, err := w.repo.StatusPaths(ctx, paths)
		changed = cs
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return w.overlay(ctx, head, changed, false)
}

// overlay writes the snapshot of HEAD's tree with the changes overlaid,
// storing the files not stored yet, and returns the blob id it put at
// each changed path (none for a deleted one). With yield, it waits for
// the workspace's first full view while that is computed, before each
// file it reads and each object it stores.
func (w *gitWorkspace) overlay(ctx context.Context, head headState, tracked []scm.Change, yield bool) (string, map[string]string, error) {
	changes := make([]snapstore.Change, 0, len(tracked))
	oids := make(map[string]string, len(tracked))
	read := w.reader()
	for _, c := range tracked {
		if yield {
			if err := w.firstView.wait(ctx); err != nil {
				return "", nil, err
			}
		}
		if c.Work == nil {
			changes = append(changes, snapstore.Change{Path: c.Path, Delete: true})
			continue
		}
		if c.Work.Mode == changeset.ModeGitlink {
			changes = append(changes, snapstore.Change{Path: c.Path, Mode: c.Work.Mode, OID: c.Work.OID})
			continue
		}
		if c.Work.OID != "" && (c.Work.Stored || w.snaps.Has(c.Work.OID)) {
			// Already stored (an earlier boundary, or the project's own
			// objects): no need to read the file again.
			changes = append(changes, snapstore.Change{Path: c.Path, Mode: c.Work.Mode, OID: c.Work.OID})
			continue
		}
		if c.Work.Size > maxSnapshotFile {
			w.log.Warn("file too large for a snapshot; its committed version is kept", "path", c.Path, "size", c.Work.Size)
			continue
		}
		b, mode, err := read(c.Path)
		if vanished(err) {
			// Gone since the status: record it as absent.
			changes = append(changes, snapstore.Change{Path: c.Path, Delete: true})
			continue
		}
		if err != nil {
			w.log.Warn("file cannot be read for a snapshot; its committed version is kept", "path", c.Path, "err", err)
			continue
		}
		changes = append(changes, snapstore.Change{Path: c.Path, Mode: mode, Content: b})
	}
	for _, c := range changes {
		switch {
		case c.Delete:
		case c.Content != nil:
			oids[c.Path] = changeset.BlobOID(c.Content)
		default:
			oids[c.Path] = c.OID
		}
	}
	if yield {
		ctx = snapstore.WithPause(ctx, w.firstView.wait)
	}
	tree, err := w.snaps.Overlay(ctx, head.tree, changes)
	return tree, oids, err
}

// firstViewShownWithin bounds how long the first view holds the
// baseline back once it is computed, when nobody says it was published.
// firstViewReaders is how long it holds it once published: its
// subscribers decode megabytes on the same cores meanwhile (bench -scale
// at 20k files, 1,000 changed: with it, the bench's reader saw ready
// 5-28 ms sooner, and 30-60 ms less of the daemon's processor time had
// gone by then, than with the baseline let go at the publication).
const (
	firstViewShownWithin = time.Second
	firstViewReaders     = 100 * time.Millisecond
)

// endOnceShown arms end to run firstViewShownWithin from now, and
// returns the list's Shown, which runs it firstViewReaders after it is
// called instead.
func endOnceShown(end func()) (shown func()) {
	var once sync.Once
	release := func() { once.Do(end) }
	t := time.AfterFunc(firstViewShownWithin, release)
	return func() {
		if t.Stop() {
			time.AfterFunc(firstViewReaders, release)
		}
	}
}

// firstViewGate is held while the workspace computes its first full
// uncommitted view. A new session's baseline snapshot starts with the
// session, and a client's first view of the uncommitted changes comes
// a moment later: on a tree with a thousand changed files, storing them
// costs as much processor time as diffing them, and the two would share
// the cores while someone waits for the view. The snapshot waits instead,
// once: the session is ready only once it is taken (so an edit after
// that is never part of it), whenever that is. The wait is checked
// before each file and each object, since the view may start at any
// point of the snapshot.
type firstViewGate struct {
	mu      sync.Mutex
	started bool          // the first full view has started (once)
	running chan struct{} // closed when it ends; nil when none runs
	// waiting, when set by a test, is called when a snapshot starts
	// waiting.
	waiting func()
}

// begin marks the start of a full view, and returns the function that
// marks its end; nil when it is not the first.
func (g *firstViewGate) begin() func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.started {
		return nil
	}
	g.started = true
	ch := make(chan struct{})
	g.running = ch
	return func() {
		g.mu.Lock()
		g.running = nil
		g.mu.Unlock()
		close(ch)
	}
}

// wait returns once the first full view is not being computed, or with
// ctx's error.
func (g *firstViewGate) wait(ctx context.Context) error {
	g.mu.Lock()
	ch, waiting := g.running, g.waiting
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	if waiting != nil {
		waiting()
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Changes computes the changes of q and diffs every changed file. The
// versions carry the state of HEAD and the index as it was before the
// computation (editor.go), which the operations check.
func (w *gitWorkspace) Changes(ctx context.Context, q session.Query) (list *session.ChangeList, err error) {
	if q.View == protocol.KindUncommitted && q.Paths == nil {
		if end := w.firstView.begin(); end != nil {
			// The first view holds the baseline back until its readers
			// have had firstViewReaders to take it in after it is
			// published (ChangeList.Shown), or firstViewShownWithin
			// after it is computed, whatever its caller does.
			defer func() {
				if err != nil || list == nil {
					end()
					return
				}
				list.Shown = endOnceShown(end)
			}()
		}
	}
	if err := w.awaitFirst(ctx); err != nil {
		return nil, err
	}
	var key string
	if q.View == protocol.KindUncommitted && q.Paths == nil && q.MaxPatchBytes == 0 && !q.IgnoreWhitespace {
		// Read before the stamp: a view saved with both is trusted
		// only while the state is the key's, and the stamp was then
		// taken on that state or a later one (which operations refuse).
		key, _ = w.repo.StateKey()
	}
	stamp := w.viewStamp()
	ctx, tally := withPatchTally(ctx, q.MaxPatchBytes)
	defer tally.stop()
	list, err = w.changes(ctx, q, key, stamp)
	if tally.exceeded() {
		return nil, session.ErrPatchTooLarge
	}
	w.stampView(list, q, stamp)
	w.markGenerated(list)
	if list != nil && (q.View == protocol.KindUncommitted || q.View == protocol.KindBranch) {
		list.View = stamp
	}
	return list, err
}

func (w *gitWorkspace) changes(ctx context.Context, q session.Query, key, stamp string) (*session.ChangeList, error) {
	scope := "full"
	if q.Paths != nil {
		scope = "paths"
	}
	defer func(start time.Time) { metrics.Scans.WithLabelValues(scope).Observe(time.Since(start).Seconds()) }(time.Now())
	if err := w.present(); err != nil {
		return nil, err
	}
	var (
		changes  []scm.Change
		warnings []string
		// sink gathers the uncommitted view's diffs, the last-known
		// view of the next start (against key, stamped stamp).
		sink *resultSink
	)
	switch q.View {
	case protocol.KindUncommitted:
		if q.MaxPatchBytes == 0 && !q.IgnoreWhitespace {
			sink = &resultSink{}
		}
		if q.Paths != nil {
			// The bytes the scan reads to hash a changed file are the
			// ones its diff needs: kept, within keptContent, instead of
			// opening and reading each file twice.
			cs, err := w.repo.StatusPathsWith(ctx, q.Paths, scm.StatusOptions{KeepContent: keptContent, MaxKeptFile: maxLoadedFile})
			if err != nil {
				return nil, err
			}
			changes = cs
		} else if w.tracking() {
			// The tracker keeps the status current from watcher batches:
			// no walk of the tree is needed.
			cs, _, err := w.trackedChanges(ctx)
			if err != nil {
				return nil, err
			}
			changes, warnings = cs, w.trackedWarnings()
		} else {
			st, err := w.status(ctx)
			if err != nil {
				return nil, err
			}
			changes, warnings = st.Changes, st.Warnings
		}
		changes = w.scoped(changes)
	case session.ViewTrees:
		return w.between(ctx, q)
	case protocol.KindBranch:
		base := q.Base
		if base == "" {
			b, _, err := w.repo.BranchBase()
			if err != nil {
				return nil, fmt.Errorf("no base branch to compare with: %w", err)
			}
			base = b
		}
		st, err := w.repo.StatusAgainst(ctx, base)
		if err != nil {
			return nil, err
		}
		changes, warnings = w.scoped(st.Changes), st.Warnings
		if q.Paths != nil {
			ps := newPathScopes(q.Paths)
			changes = slices.DeleteFunc(changes, func(c scm.Change) bool { return !ps.covers(c.Path) })
		}
	default:
		return nil, fmt.Errorf("changeset kind %q is not computed from git", q.View)
	}

	var bad unreadable
	read := w.reader()
	load := func(c scm.Change) ([2]*changeset.Side, error) {
		old, err := w.oldSide(c)
		if err != nil {
			return [2]*changeset.Side{}, err
		}
		cur, err := w.newSide(c, &bad, read)
		return [2]*changeset.Side{old, cur}, err
	}
	// A file present on both sides is never part of a rename: it is
	// loaded and diffed at once, on every core, and its content dropped
	// before more is read. Only additions and deletions are loaded all
	// together, for rename pairing.
	var both, single []scm.Change
	for _, c := range changes {
		if c.Head != nil && c.Work != nil {
			both = append(both, c)
		} else {
			single = append(single, c)
		}
	}
	streamed, rest, err := diffStream(ctx, w.repo.Root(), both, w.headOrder(both), load, q, &w.diffs, sink, false)
	if err != nil {
		return nil, err
	}
	var sides [][2]*changeset.Side
	if renamesPossible(single) {
		sides, err = loadAll(ctx, single, load)
	} else {
		// Only additions, or only deletions: no rename to pair, so they
		// stream like the rest instead of all being loaded at once (an
		// agent that writes a hundred large files).
		var alone []session.FileChange
		alone, sides, err = diffStream(ctx, w.repo.Root(), single, w.headOrder(single), load, q, &w.diffs, sink, true)
		streamed = append(streamed, alone...)
	}
	if err != nil {
		return nil, err
	}
	list, err := diffAll(ctx, w.repo.Root(), append(sides, rest...), q, func(*changeset.Side) bool { return true }, sink)
	if err != nil {
		return nil, err
	}
	if len(streamed) > 0 {
		list.Files = append(list.Files, streamed...)
		slices.SortFunc(list.Files, func(a, b session.FileChange) int { return strings.Compare(a.Path(), b.Path()) })
	}
	list.Warnings = warnings
	bad.mark(list, workSizes(changes))
	if q.View == protocol.KindUncommitted {
		w.markIndex(list, changes)
	}
	if sink != nil {
		w.last.record(key, stamp, q.Paths, sink, list, &w.diffs)
		if q.Paths == nil {
			w.forgetKnown() // a computed view replaces the loaded one
		}
	}
	return list, nil
}

// markIndex records in each uncommitted file's _meta.changesetd.index
// whether its change is "staged", "unstaged" or "partial" (some of each),
// for a review panel to show them as git's own tools do; a partly staged
// file also gets its staged part (HEAD → index) in _meta.changesetd.staged
// (see stagedPart): what a commit records, and which hunks are in. A
// file whose index cannot be read gets no mark: the changeset does not
// fail for it.
func (w *gitWorkspace) markIndex(list *session.ChangeList, changes []scm.Change) {
	states, err := w.repo.IndexStates(changes)
	if err != nil {
		w.log.Debug("cannot read the index states", "err", err)
		return
	}
	heads := make(map[string]*scm.FileState, len(changes))
	for _, c := range changes {
		heads[c.Path] = c.Head
	}
	for _, fc := range list.Files {
		var st scm.IndexState
		for _, v := range []*session.FileVersion{fc.Old, fc.New} {
			if v != nil {
				s := states[v.Path]
				st.Staged, st.Unstaged = st.Staged || s.Staged, st.Unstaged || s.Unstaged
			}
		}
		own, _ := fc.Meta["changesetd"].(protocol.Object)
		switch {
		case own == nil:
		case st.Staged && st.Unstaged:
			own["index"] = "partial"
			if fc.New != nil && (fc.Old == nil || fc.Old.Path == fc.New.Path) {
				if part, ok := w.stagedPart(fc.New.Path, heads[fc.New.Path], states[fc.New.Path]); ok {
					own["staged"] = part
				}
			}
		case st.Staged:
			own["index"] = "staged"
		default:
			own["index"] = "unstaged"
		}
	}
}

// stagedPart describes a partly staged file's staged change, HEAD's
// version against the index's: {added, removed, hunks}, its line counts
// and its hunks, each {id, first, last}: the id names the hunk's path and
// changed lines (a hunk of the uncommitted diff with that id is in the
// index as it is), first..last the 0-based lines of the index's version
// it changes (the range an unstage of it names). False when a side cannot be read, is too large to load, or
// is binary.
func (w *gitWorkspace) stagedPart(path string, head *scm.FileState, st scm.IndexState) (protocol.Object, bool) {
	side := func(oid string, mode uint32) *changeset.Side {
		if oid == "" {
			return nil
		}
		s := &changeset.Side{Path: path, Mode: mode, OID: oid}
		if mode != changeset.ModeGitlink {
			if n, ok := w.BlobSize(oid); ok && n > maxLoadedFile {
				return nil
			}
			b, err := w.repo.ReadBlob(oid)
			if err != nil {
				return nil
			}
			s.Content = b
		}
		return s
	}
	var h *changeset.Side
	if head != nil {
		if h = side(head.OID, head.Mode); h == nil {
			return nil, false
		}
	}
	ix := side(st.IndexOID, st.IndexMode)
	if st.IndexOID != "" && ix == nil {
		return nil, false
	}
	r := changeset.Compare(h, ix, changeset.Options{})
	a, d, ok := r.Counts()
	if !ok {
		return nil, false
	}
	hunks := []protocol.Object{}
	for i, hk := range hunkList(r) {
		first, last := changedLines(r.Hunks[i])
		hunks = append(hunks, protocol.Object{"id": hk.ID, "first": first, "last": last})
	}
	return protocol.Object{"added": a, "removed": d, "hunks": hunks}, true
}

// changedLines is the span of the lines h changes on its new side,
// 0-based: its added lines, and where its removed lines stood (the line
// after them), which is what an unstage's range names.
func changedLines(h changeset.Hunk) (first, last int) {
	first, last = -1, -1
	n := h.NewStart - 1
	if h.NewLines == 0 {
		n = h.NewStart // git gives the line before an empty side
	}
	for _, l := range h.Lines {
		if l.Op != ' ' {
			if first < 0 {
				first = n
			}
			last = n
		}
		if l.Op != '-' {
			n++
		}
	}
	return max(first, 0), max(last, 0)
}

// parallel calls f(i) for every i below n, spread over the cores, until
// ctx ends; it returns when every call has.
// packRun is the most items of headOrder one core takes at a time.
const packRun = 16

// headOrder is the order to read the HEAD sides of changes in: the
// order their blobs lie in the packs (scm.Repo.PackOrder), for a few
// changes or more. In path order, the files sharing a delta chain are
// far apart, and each walked it from its base again once the chain's
// bases had left the object reader's cache: the 1,000 changed files' HEAD
// blobs of bench -scale's 20,000-file repository, read on one core, took
// 106 ms in path order and 68 ms in pack order (67 ms in either order
// with a cache sixteen times as large).
func (w *gitWorkspace) headOrder(items []scm.Change) []int {
	if len(items) < 8 {
		return nil
	}
	oids := make([]string, len(items))
	for i, c := range items {
		if c.Head != nil {
			oids[i] = c.Head.OID
		}
	}
	return w.repo.PackOrder(oids)
}

func parallel(ctx context.Context, n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// loadAll loads the sides of every change, spread over the cores: reading
// a working file and reading a blob are mostly independent waits.
func loadAll[T any](ctx context.Context, items []T, load func(T) ([2]*changeset.Side, error)) ([][2]*changeset.Side, error) {
	sides := make([][2]*changeset.Side, len(items))
	errs := make([]error, len(items))
	parallel(ctx, len(items), func(i int) { sides[i], errs[i] = load(items[i]) })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return sides, nil
}

// keptContent bounds the bytes of the changed files' content a
// path-scoped status keeps for their diffs (scm.StatusOptions): a file
// past it is read a second time by its diff, as before. With diffBudget,
// a refresh holds at most both in file content at once.
const keptContent = 64 << 20

// diffBudget bounds the bytes of file content loaded and not yet diffed
// by diffStream: with the changed files read on every core, memory stays
// bounded whatever their number.
const diffBudget = 64 << 20

// budget is a counting semaphore of bytes.
type budget struct {
	mu   sync.Mutex
	cond *sync.Cond
	free int64
}

func newBudget(n int64) *budget {
	b := &budget{free: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// take waits for n bytes (all of the budget when n exceeds it, so one
// file larger than the budget still goes, alone) and returns what it
// took.
func (b *budget) take(n, total int64) int64 {
	n = min(max(n, 1), total)
	b.mu.Lock()
	for b.free < n {
		b.cond.Wait()
	}
	b.free -= n
	b.mu.Unlock()
	return n
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// diffStream loads and diffs the changes, each present on both sides,
// spread over the cores: each file's two sides are read, diffed and let
// go before the worker reads the next, within diffBudget bytes loaded at
// once. A change whose working file vanished meanwhile (one side nil) is
// returned in rest, to go through rename pairing with the additions and
// deletions.
//
// With the view's default limits, a file whose two blob ids are in cache
// is not read at all, and each new diff goes into it.
//
// With oneSided, the items are additions or deletions with no rename to
// pair among them: a change with one side is diffed as it is.
func diffStream(ctx context.Context, root string, items []scm.Change, order []int, load func(scm.Change) ([2]*changeset.Side, error), q session.Query, cache *diffCache, sink *resultSink, oneSided bool) ([]session.FileChange, [][2]*changeset.Side, error) {
	if len(items) == 0 {
		return nil, nil, nil
	}
	opt := diffOptions(q)
	root = filepath.ToSlash(root)
	out := make([]session.FileChange, len(items))
	done := make([]bool, len(items))
	loose := make([][2]*changeset.Side, len(items))
	errs := make([]error, len(items))
	bud := newBudget(diffBudget)
	if q.MaxPatchBytes != 0 || q.IgnoreWhitespace {
		cache = nil // a whole-changeset patch has other limits, a -w diff other hunks
	}
	one := func(i int) {
		c := items[i]
		if r, ok := cache.get(c); ok {
			sink.add(r)
			out[i], done[i] = resultChange(r, q, root, true), true
			return
		}
		var size int64
		for _, f := range []*scm.FileState{c.Head, c.Work} {
			if f != nil {
				size += min(f.Size, maxLoadedFile)
			}
		}
		took := bud.take(size, diffBudget)
		defer bud.give(took)
		sd, err := load(c)
		if err != nil {
			errs[i] = err
			return
		}
		if sd[0] == nil && sd[1] == nil {
			return // gone from both sides since the status
		}
		if !oneSided && (sd[0] == nil || sd[1] == nil) {
			loose[i] = sd
			return
		}
		r := compare(sd, opt)
		tallyOf(ctx).add(len(r.Patch))
		cache.put(c, r)
		sink.add(r)
		out[i], done[i] = resultChange(r, q, root, true), true
	}
	if order == nil {
		parallel(ctx, len(items), one)
	} else {
		// Runs of consecutive items of order to one core each: the next
		// item's blob is likely on the same delta chain, whose bases that
		// core has just cached. Handed out one by one, two cores walked
		// each chain from its base side by side. A run is at most
		// packRun long, and short enough that every core gets several.
		run := min(packRun, max(1, len(order)/(4*runtime.GOMAXPROCS(0))))
		runs := (len(order) + run - 1) / run
		parallel(ctx, runs, func(k int) {
			for _, i := range order[k*run : min((k+1)*run, len(order))] {
				if ctx.Err() != nil {
					return
				}
				one(i)
			}
		})
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	files := make([]session.FileChange, 0, len(items))
	var rest [][2]*changeset.Side
	for i := range items {
		if done[i] {
			files = append(files, out[i])
		} else if loose[i] != ([2]*changeset.Side{}) {
			rest = append(rest, loose[i])
		}
	}
	return files, rest, nil
}

// renamesPossible reports whether changes, each with one side, hold both
// an addition and a deletion: only then can a rename pair them.
func renamesPossible(changes []scm.Change) bool {
	var added, deleted bool
	for _, c := range changes {
		added = added || c.Head == nil
		deleted = deleted || c.Work == nil
	}
	return added && deleted
}

// patchTally counts the patch bytes a whole-changeset patch has made so
// far, and stops the computation once they pass its limit: a patch that
// will be refused is not computed to its end, holding every file's patch.
type patchTally struct {
	limit  int64
	n      atomic.Int64
	over   atomic.Bool
	cancel context.CancelFunc
}

type patchTallyKey struct{}

// withPatchTally gives ctx a tally of limit bytes, cancelled once past
// it; with no limit (0) it returns ctx and a nil tally.
func withPatchTally(ctx context.Context, limit int) (context.Context, *patchTally) {
	if limit <= 0 {
		return ctx, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	t := &patchTally{limit: int64(limit), cancel: cancel}
	return context.WithValue(ctx, patchTallyKey{}, t), t
}

func tallyOf(ctx context.Context) *patchTally {
	t, _ := ctx.Value(patchTallyKey{}).(*patchTally)
	return t
}

// add counts n more bytes.
func (t *patchTally) add(n int) {
	if t != nil && t.n.Add(int64(n)) > t.limit && !t.over.Swap(true) {
		t.cancel()
	}
}

// stop releases the tally's context.
func (t *patchTally) stop() {
	if t != nil {
		t.cancel()
	}
}

// exceeded reports whether the limit was passed.
func (t *patchTally) exceeded() bool { return t != nil && t.over.Load() }

// diffOptions are the diff's limits for q.
func diffOptions(q session.Query) changeset.Options {
	opt := changeset.Options{IgnoreWhitespace: q.IgnoreWhitespace}
	if q.MaxPatchBytes > 0 {
		// A whole-changeset patch: every file's patch up to the limit,
		// binary sides up to it too.
		opt.MaxPatchBytes = q.MaxPatchBytes
		opt.MaxFileBytes = max(q.MaxPatchBytes, changeset.DefaultMaxFileBytes)
	}
	return opt
}

// diffPair diffs one pair of sides (either may be nil) into the
// session's fact type, its result kept in sink. live tells whether the
// new side is the working-tree file.
func diffPair(p [2]*changeset.Side, opt changeset.Options, q session.Query, root string, live bool, sink *resultSink) session.FileChange {
	r := compare(p, opt)
	sink.add(r)
	return resultChange(r, q, root, live)
}

// compare diffs a pair of sides, counted in the metrics.
func compare(p [2]*changeset.Side, opt changeset.Options) changeset.Result {
	for _, sd := range p {
		if sd != nil && sd.Content != nil && sd.Sniffed == nil && sd.Mode != changeset.ModeGitlink && sd.Mode != changeset.ModeSymlink {
			sd.Sniffed = changeset.Sniff(sd.Path, sd.Content)
		}
	}
	start := time.Now()
	r := changeset.Compare(p[0], p[1], opt)
	metrics.DiffSeconds.Observe(time.Since(start).Seconds())
	metrics.FilesDiffed.Inc()
	return r
}

// resultChange is a diff's result as the session's fact type.
func resultChange(r changeset.Result, q session.Query, root string, live bool) session.FileChange {
	fc := fileChange(r)
	if q.MaxPatchBytes == 0 { // not for a whole-changeset patch
		fc.ACP = acpDiff(r, root, fc.Meta["changesetd"].(protocol.Object)["fileType"].(string), fc.Meta["jetbrains"])
	}
	if fc.New != nil {
		fc.New.Live = live
	}
	return fc
}

// diffAll pairs renames among the sides and diffs every pair, keeping
// the results in sink (nil: none kept). live tells whether a new side is
// the working-tree file; root is where the absolute paths of ACP diffs
// start.
func diffAll(ctx context.Context, root string, sides [][2]*changeset.Side, q session.Query, live func(*changeset.Side) bool, sink *resultSink) (*session.ChangeList, error) {
	opt := diffOptions(q)
	list := &session.ChangeList{}
	var deleted, added []*changeset.Side
	var pairs [][2]*changeset.Side
	for _, sd := range sides {
		old, cur := sd[0], sd[1]
		switch {
		case old == nil && cur == nil:
			continue
		case old == nil:
			added = append(added, cur)
		case cur == nil:
			deleted = append(deleted, old)
		default:
			pairs = append(pairs, [2]*changeset.Side{old, cur})
		}
	}
	renamed, deleted, added := changeset.PairRenames(deleted, added)
	pairs = append(pairs, renamed...)
	for _, d := range deleted {
		pairs = append(pairs, [2]*changeset.Side{d, nil})
	}
	for _, a := range added {
		pairs = append(pairs, [2]*changeset.Side{nil, a})
	}
	root = filepath.ToSlash(root)
	// Diffs are independent and CPU-bound: spread them over the cores.
	list.Files = make([]session.FileChange, len(pairs))
	parallel(ctx, len(pairs), func(i int) {
		p := pairs[i]
		list.Files[i] = diffPair(p, opt, q, root, p[1] != nil && live(p[1]), sink)
		tallyOf(ctx).add(len(list.Files[i].Patch))
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Files, func(a, b session.FileChange) int { return strings.Compare(a.Path(), b.Path()) })
	return list, nil
}

// pathScopes is a set of paths, files or directories, that answers
// whether a path is at or below one of them in time that grows with the
// path's depth, not with the number of paths: a burst's refresh names
// ten thousand paths and every file of the view is checked against them
// (a loop over the list made that refresh quadratic, a second of CPU).
type pathScopes map[string]struct{}

func newPathScopes(paths []string) pathScopes {
	ps := make(pathScopes, len(paths))
	for _, p := range paths {
		ps[p] = struct{}{}
	}
	return ps
}

// covers reports whether p is one of the paths or below one ("" covers
// every path).
func (ps pathScopes) covers(p string) bool {
	if _, ok := ps[""]; ok {
		return true
	}
	for {
		if _, ok := ps[p]; ok {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// oldSide loads a change's base side from the object store.
func (w *gitWorkspace) oldSide(c scm.Change) (*changeset.Side, error) {
	if c.Head == nil {
		return nil, nil
	}
	if c.Head.Size > maxLoadedFile && c.Head.OID != "" && c.Head.Mode != changeset.ModeGitlink {
		return &changeset.Side{Path: c.Head.Path, Mode: c.Head.Mode, OID: c.Head.OID, Size: c.Head.Size}, nil
	}
	return w.storedSide(&snapstore.Entry{Path: c.Head.Path, Mode: c.Head.Mode, OID: c.Head.OID})
}

// newSide loads a change's working-tree side. A file that exists but
// cannot be read is recorded in bad and given a side without content
// that the diff reports without hunks or counts.
func (w *gitWorkspace) newSide(c scm.Change, bad *unreadable, read func(string) ([]byte, uint32, error)) (*changeset.Side, error) {
	if c.Work == nil {
		return nil, nil
	}
	if c.Work.Stored {
		// git does not look at this file (assume-unchanged or
		// skip-worktree): its side is the index's blob.
		return w.storedSide(&snapstore.Entry{Path: c.Work.Path, Mode: c.Work.Mode, OID: c.Work.OID})
	}
	s := &changeset.Side{Path: c.Work.Path, Mode: c.Work.Mode, OID: c.Work.OID}
	if c.Work.Mode == changeset.ModeGitlink {
		s.Content = []byte(c.Work.OID)
		return s, nil
	}
	if b := c.Work.Content; b != nil && w.readWorktree == nil {
		// Read by the status to hash it, which c.Work.OID is the hash
		// of: not read again. Let go of it here, as a read would be.
		c.Work.Content = nil
		s.Content = b
		return s, nil
	}
	if c.Work.Size > maxLoadedFile && c.Work.Mode != changeset.ModeSymlink {
		// Too large to diff: never loaded, hashed streaming if status
		// did not hash it and it is small enough to hash for a listing.
		if s.OID == "" && c.Work.Size <= maxListedHash {
			oid, err := w.hashWorktree(context.Background(), c.Work.Path)
			if err != nil {
				w.log.Debug("file vanished while hashing", "path", c.Work.Path, "err", err)
				return nil, nil
			}
			s.OID = oid
		}
		s.Size = c.Work.Size
		return s, nil
	}
	b, mode, err := read(c.Work.Path)
	if vanished(err) {
		// The file went away between status and read: the next watcher
		// batch reports it; show it as absent now.
		w.log.Debug("file vanished while diffing", "path", c.Work.Path, "err", err)
		return nil, nil
	}
	if err != nil {
		w.log.Warn("file cannot be read", "path", c.Work.Path, "err", err)
		bad.add(c.Work.Path, err)
		if s.OID == "" {
			// Its content is unknown: an id of its own, not any content's.
			s.OID = changeset.BlobOID([]byte("changesetd unreadable " + c.Work.Path))
		}
		// Unloaded and over the diff limit: compared without content.
		s.Size = maxLoadedFile + 1
		return s, nil
	}
	s.Content, s.Mode = b, mode
	if s.OID == "" {
		s.OID = changeset.BlobOID(b)
	}
	return s, nil
}

// fileChange converts a diff result into the session's fact type. Counts
// follow the AIR rules and are left out when they cannot be exact.
func fileChange(r changeset.Result) session.FileChange {
	added, removed, ok := r.Counts()
	fc := session.FileChange{Binary: r.Binary, Precise: ok, Added: added, Removed: removed}
	side := func(s *changeset.Side, live bool) *session.FileVersion {
		if s == nil {
			return nil
		}
		oid := s.OID
		if oid == "" && (s.Content != nil || s.Size == 0) {
			// A loaded side; an unloaded one too large to hash keeps
			// no id rather than the empty blob's.
			oid = changeset.BlobOID(s.Content)
		}
		mode := s.Mode
		if mode == 0 {
			mode = changeset.ModeRegular
		}
		size := int64(len(s.Content))
		if s.Content == nil {
			size = s.Size
		}
		return &session.FileVersion{Path: s.Path, OID: oid, Mode: mode, Size: size, Live: live}
	}
	fc.Old, fc.New = side(r.Old, false), side(r.New, true)
	fc.Meta = fileMeta(r, fc)
	fc.Patch = r.Patch
	return fc
}

// fileMeta builds a file's _meta: the AIR statistics where they are exact,
// and ours: operation, file type, blob ids and the hunks.
func fileMeta(r changeset.Result, fc session.FileChange) protocol.Object {
	meta := protocol.Object{}
	for k, v := range r.AIRMeta() {
		meta[k] = v
	}
	own := protocol.Object{"operation": operation(r.ChangeType()), "fileType": fileType(r, fc)}
	if fc.Old != nil {
		own["oldBlob"] = fc.Old.OID
		own["oldMode"] = octalMode(fc.Old.Mode)
	}
	if fc.New != nil {
		own["newBlob"] = fc.New.OID
		own["newMode"] = octalMode(fc.New.Mode)
	}
	if r.Similarity > 0 && r.ChangeType() == changeset.Renamed {
		own["similarity"] = r.Similarity
	}
	if hs := hunkList(r); hs != nil {
		own[session.MetaHunks] = session.HunkList(hs)
	}
	if r.PatchOmitted {
		own["patchOmitted"] = true
	}
	if r.TooLarge {
		own["tooLarge"] = true
	}
	if why := generatedBy(r); why != "" {
		own[metaGenerated] = why
	}
	if img := imageSizes(r, fc); img != nil {
		own["image"] = img
	}
	meta["changesetd"] = own
	return meta
}

// octalMode spells a git mode as git does, in six octal digits; the
// common ones without formatting (two per file of every view).
func octalMode(m uint32) string {
	switch m {
	case changeset.ModeRegular:
		return "100644"
	case changeset.ModeExecutable:
		return "100755"
	case changeset.ModeSymlink:
		return "120000"
	case changeset.ModeGitlink:
		return "160000"
	}
	return fmt.Sprintf("%06o", m)
}

func operation(k changeset.ChangeType) string {
	switch k {
	case changeset.Created:
		return "add"
	case changeset.Deleted:
		return "delete"
	case changeset.Renamed:
		return "move"
	}
	return "modify"
}

func fileType(r changeset.Result, fc session.FileChange) string {
	s := fc.New
	if s == nil {
		s = fc.Old
	}
	switch {
	case s.Mode == changeset.ModeGitlink:
		return "submodule"
	case s.Mode == changeset.ModeSymlink:
		return "symlink"
	case r.Binary:
		return "binary"
	}
	return "text"
}

// between diffs snapshot tree q.From against q.To, or against the live
// working tree when q.To is "".
func (w *gitWorkspace) between(ctx context.Context, q session.Query) (*session.ChangeList, error) {
	if q.To != "" {
		diffs, err := w.snaps.DiffTrees(ctx, q.From, q.To)
		if err != nil {
			return nil, err
		}
		sides := make([][2]*changeset.Side, 0, len(diffs))
		ps := newPathScopes(q.Paths)
		for _, d := range diffs {
			if (q.Paths != nil && !ps.covers(d.Path)) || !w.inScope(d.Path) {
				continue
			}
			old, err := w.storedSide(d.Old)
			if err != nil {
				return nil, err
			}
			cur, err := w.storedSide(d.New)
			if err != nil {
				return nil, err
			}
			sides = append(sides, [2]*changeset.Side{old, cur})
		}
		return diffAll(ctx, w.repo.Root(), sides, q, func(*changeset.Side) bool { return false }, nil)
	}

	// Live: the working tree is HEAD plus the status changes. Candidates are
	// the paths where the snapshot differs from HEAD and the changed paths.
	var changes []scm.Change
	var warnings []string
	h, err := w.atOneHead(func(headState) error {
		if q.Paths != nil {
			cs, err := w.repo.StatusPaths(ctx, q.Paths)
			changes = cs
			return err
		}
		st, err := w.status(ctx)
		if st != nil {
			changes, warnings = st.Changes, st.Warnings
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	head := h.tree
	changes = w.scoped(changes)
	dirty := make(map[string]scm.Change, len(changes))
	for _, c := range changes {
		dirty[c.Path] = c
	}
	base, err := w.snaps.DiffTrees(ctx, q.From, head)
	if err != nil {
		return nil, err
	}
	candidates := map[string]bool{}
	ps := newPathScopes(q.Paths)
	for _, d := range base {
		if (q.Paths == nil || ps.covers(d.Path)) && w.inScope(d.Path) {
			candidates[d.Path] = true
		}
	}
	for p := range dirty {
		candidates[p] = true
	}
	sides := make([][2]*changeset.Side, 0, len(candidates))
	var bad unreadable
	read := w.reader()
	for p := range candidates {
		oldEntry, err := w.snaps.Lookup(ctx, q.From, p)
		if err != nil {
			return nil, err
		}
		old, err := w.storedSide(oldEntry)
		if err != nil {
			return nil, err
		}
		var cur *changeset.Side
		if c, ok := dirty[p]; ok {
			if cur, err = w.newSide(c, &bad, read); err != nil {
				return nil, err
			}
		} else {
			e, err := w.snaps.Lookup(ctx, head, p)
			if err != nil {
				return nil, err
			}
			if cur, err = w.storedSide(e); err != nil {
				return nil, err
			}
		}
		if old != nil && cur != nil && old.OID == cur.OID && old.Mode == cur.Mode {
			continue
		}
		if old == nil && cur == nil {
			continue
		}
		sides = append(sides, [2]*changeset.Side{old, cur})
	}
	list, err := diffAll(ctx, w.repo.Root(), sides, q, func(*changeset.Side) bool { return true }, nil)
	if err != nil {
		return nil, err
	}
	list.Warnings = warnings
	bad.mark(list, workSizes(changes))
	return list, nil
}

// workSizes maps each change's path to its working file's size.
func workSizes(changes []scm.Change) map[string]int64 {
	out := make(map[string]int64, len(changes))
	for _, c := range changes {
		if c.Work != nil {
			out[c.Work.Path] = c.Work.Size
		}
	}
	return out
}

// storedSide loads a side from the object store; nil for an absent entry.
func (w *gitWorkspace) storedSide(e *snapstore.Entry) (*changeset.Side, error) {
	if e == nil {
		return nil, nil
	}
	s := &changeset.Side{Path: e.Path, Mode: e.Mode, OID: e.OID}
	if e.Mode == changeset.ModeGitlink {
		s.Content = []byte(e.OID)
		return s, nil
	}
	if n, ok := w.BlobSize(e.OID); ok && n > maxLoadedFile && e.Mode != changeset.ModeSymlink {
		// Never diffed (tooLarge): not read either.
		s.Size = n
		return s, nil
	}
	b, err := w.ReadBlob(e.OID)
	if err != nil {
		return nil, fmt.Errorf("read %s (%s): %w", e.Path, e.OID, err)
	}
	s.Content = b
	return s, nil
}

// present reports a working directory that was moved or deleted in words
// a person can act on.
func (w *gitWorkspace) present() error {
	if _, err := os.Stat(filepath.Join(w.repo.GitDir(), "HEAD")); err != nil {
		if _, err := os.Stat(w.repo.Root()); err != nil {
			return fmt.Errorf("the working directory %s is gone (moved or deleted); its changes come back when it returns", w.repo.Root())
		}
		return fmt.Errorf("%s is no longer a git repository (its .git is missing)", w.repo.Root())
	}
	return nil
}

// Identity names the repository by its root commit, for the session record.
func (w *gitWorkspace) Identity() (repo, head string) {
	root, head, err := w.repo.RootCommit()
	if err != nil {
		w.log.Warn("cannot name the repository; a restart will not tell another project at this path", "err", err)
	}
	return root, head
}
