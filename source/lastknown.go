package source

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// The last-known view is the uncommitted changeset as the workspace last
// computed it, kept in the working-tree state file across restarts: a
// restart shows it at once, marked recomputing by the session, while the
// first scan verifies it. It is trusted only for the HEAD, index and
// ignore and attribute inputs it was computed against (scm.Repo.StateKey)
// and the build that computed it; anything else shows no view until the
// scan's.

// lastView holds the diff results of the workspace's latest uncommitted
// view, by the file's path (a rename's new path), and the state key it
// was computed against. Results keep their sides' sizes and blob ids,
// and no content but that of a text file created or deleted (its count);
// their patches are the strings the session holds anyway.
type lastView struct {
	mu    sync.Mutex
	key   string // "" when unknown: nothing is saved
	stamp string // the view stamp of HEAD and the index it carries
	files map[string]viewFile
}

// viewFile is one file of a view: its diff and where its change stands in
// the index (_meta.changesetd.index).
type viewFile struct {
	p     packed
	index string
}

// resultSink collects the diff results of one computation, from the
// goroutines that diff.
type resultSink struct {
	mu    sync.Mutex
	rs    []changeset.Result
	bytes int64 // what rs holds, estimated
	over  bool  // past maxLastViewBytes: rs let go, no view kept
}

// maxLastViewBytes bounds what the last-known view holds (and writes
// into the state file): a view of a few thousand ordinary files is a
// few MB, but a hundred files of megabytes created at once would keep
// their content and every line as hunks. A view past it is not kept;
// a restart then shows the computed view only.
const maxLastViewBytes = 32 << 20

// add keeps r without its sides' content, except the one side of a text
// file created or deleted: its line count is counted from it (a
// modification's from the hunks). A nil sink keeps nothing.
func (k *resultSink) add(r changeset.Result) {
	if k == nil {
		return
	}
	counted := !r.Binary && !r.TooLarge && (r.ChangeType() == changeset.Created || r.ChangeType() == changeset.Deleted)
	if r.Old != nil && !counted {
		r.Old = bare(r.Old)
	}
	if r.New != nil && !counted {
		r.New = bare(r.New)
	}
	n := resultBytes(&r)
	for _, sd := range []*changeset.Side{r.Old, r.New} {
		if sd != nil {
			n += int64(len(sd.Content))
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.over {
		return
	}
	if k.bytes += n; k.bytes > maxLastViewBytes {
		k.over, k.rs = true, nil
		return
	}
	k.rs = append(k.rs, r)
}

// resultPath is the path a result's file is listed under.
func resultPath(r *changeset.Result) string {
	if r.New != nil {
		return r.New.Path
	}
	return r.Old.Path
}

// record makes the results of a computation of the uncommitted view the
// last-known view: the whole of it when paths is nil (computed against
// key), else the files under paths, whose earlier results go.
// A result the diff cache holds is kept as the cache keeps it, shared.
func (v *lastView) record(key, stamp string, paths []string, sink *resultSink, list *session.ChangeList, cache *diffCache) {
	index := make(map[string]string, len(list.Files))
	for _, fc := range list.Files {
		if own, ok := fc.Meta["changesetd"].(protocol.Object); ok {
			if m, ok := own["index"].(string); ok {
				index[fc.Path()] = m
			}
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if sink.over {
		// Too large to keep: no last-known view until a smaller one.
		v.key, v.stamp, v.files = "", "", nil
		return
	}
	if paths == nil {
		v.key, v.stamp, v.files = key, stamp, make(map[string]viewFile, len(sink.rs))
	} else if v.files == nil {
		return // no whole view to update
	} else {
		ps := newPathScopes(paths)
		for p, f := range v.files {
			if ps.covers(p) || (f.p.r.Old != nil && ps.covers(f.p.r.Old.Path)) {
				delete(v.files, p)
			}
		}
	}
	for _, r := range sink.rs {
		p := resultPath(&r)
		kept, ok := cache.packedOf(&r)
		if !ok {
			kept = pack(r)
		}
		v.files[p] = viewFile{p: kept, index: index[p]}
	}
}

// savedView is the last-known view as the state file keeps it. A file
// whose diff is in the saved diffs is named by its key alone.
type savedView struct {
	Build, Key, Scope, Stamp string
	Files                    []savedViewFile
}

type savedViewFile struct {
	Diff   *diffKey
	Result *changeset.Result
	Index  string
}

// encode is the view for the state file, nil when there is none to keep.
// Diffs found in cache are named by key: they are saved with it.
func (v *lastView) encode(scope string, cache *diffCache) []byte {
	v.mu.Lock()
	sv := savedView{Build: builtBy, Key: v.key, Scope: scope, Stamp: v.stamp}
	if v.key == "" || v.files == nil {
		v.mu.Unlock()
		return nil
	}
	paths := make([]string, 0, len(v.files))
	for p := range v.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		f := v.files[p]
		sf := savedViewFile{Index: f.index}
		if k, ok := resultKey(&f.p.r); ok && cache.keep(k) {
			sf.Diff = &k
		} else {
			r := f.p.result()
			sf.Result = &r
		}
		sv.Files = append(sv.Files, sf)
	}
	v.mu.Unlock()
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(sv); err != nil {
		return nil
	}
	return b.Bytes()
}

// resultKey is the diff cache's key of a plain modification.
func resultKey(r *changeset.Result) (diffKey, bool) {
	if r.Old == nil || r.New == nil || r.Old.Path != r.New.Path || r.Old.OID == "" || r.New.OID == "" {
		return diffKey{}, false
	}
	return diffKey{r.New.Path, r.Old.OID, r.New.OID, r.Old.Mode, r.New.Mode}, true
}

// entry returns the cache's packed result under k, the very one it holds
// (a packed result is never changed), and keeps it for the next save.
func (d *diffCache) entry(k diffKey) (packed, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.m[k]
	if ok {
		d.used[k] = true
	}
	return p, ok
}

// keep reports whether the cache holds k, and keeps it for the next save.
func (d *diffCache) keep(k diffKey) bool {
	_, ok := d.entry(k)
	return ok
}

// packedOf is the cache's entry for r's diff.
func (d *diffCache) packedOf(r *changeset.Result) (packed, bool) {
	k, ok := resultKey(r)
	if d == nil || !ok {
		return packed{}, false
	}
	return d.entry(k)
}

// lookup returns the cached result under k, sides without content, and
// keeps it for the next save.
func (d *diffCache) lookup(k diffKey) (changeset.Result, bool) {
	p, ok := d.entry(k)
	if !ok {
		return changeset.Result{}, false
	}
	r := p.result()
	r.Old, r.New = copySide(r.Old), copySide(r.New)
	return r, true
}

// decodeView reads what encode wrote into the view it describes, for a
// repository now in the state key, or fails saying why it is not used.
// Saved diffs must be loaded first.
func decodeView(b []byte, key, scope string, cache *diffCache) (map[string]viewFile, string, error) {
	var sv savedView
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&sv); err != nil {
		return nil, "", fmt.Errorf("last-known view: %w", err)
	}
	switch {
	case sv.Build != builtBy:
		return nil, "", fmt.Errorf("last-known view: written by another build (%s)", sv.Build)
	case sv.Scope != scope:
		return nil, "", fmt.Errorf("last-known view: of directory %q of the repository, not %q", sv.Scope, scope)
	case sv.Key != key:
		return nil, "", errors.New("last-known view: computed for another HEAD, index or ignore configuration")
	case sv.Stamp == "":
		return nil, "", errors.New("last-known view: without a view stamp")
	}
	files := make(map[string]viewFile, len(sv.Files))
	for _, f := range sv.Files {
		var p packed
		switch {
		case f.Diff != nil:
			// Shared with the cache, as record keeps it.
			c, ok := cache.entry(*f.Diff)
			if !ok {
				return nil, "", fmt.Errorf("last-known view: the diff of %s was not saved", f.Diff.Path)
			}
			p = c
		case f.Result != nil && (f.Result.Old != nil || f.Result.New != nil):
			p = pack(*f.Result)
		default:
			return nil, "", errors.New("last-known view: a file without its diff")
		}
		files[resultPath(&p.r)] = viewFile{p: p, index: f.Index}
	}
	return files, sv.Stamp, nil
}

// known is the view loaded at open, offered until the first computed view
// replaces it.
type known struct {
	mu    sync.Mutex
	key   string              // the state key it was computed against
	stamp string              // the view stamp it was computed with
	files map[string]viewFile // nil: none (any more)
}

// LastKnown returns the uncommitted changes as the workspace last computed
// them, before this process started (session.LastKnower): the state file's
// view, for the same HEAD, index and ignore inputs as now. False once the
// workspace computed a view of its own, or when none was trusted. Its
// files carry the view stamp saved with it: an operation on one is
// refused once HEAD or the index moved from it, as on a computed view.
func (w *gitWorkspace) LastKnown() (*session.ChangeList, bool) {
	k := &w.known
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.files == nil {
		return nil, false
	}
	// The saved stamp is the one viewStamp would give now when the
	// state key (HEAD's commit, the index's bytes) is the same and HEAD
	// names the same branch, the stamp's first field; it is not
	// computed, which would decode the whole index before the view
	// could be shown.
	stamp := k.stamp
	head, _ := os.ReadFile(filepath.Join(w.repo.GitDir(), "HEAD"))
	if key, err := w.repo.StateKey(); err != nil || key != k.key || !strings.HasPrefix(stamp, strings.TrimSpace(string(head))+" ") {
		k.files = nil
		return nil, false
	}
	q := session.Query{View: protocol.KindUncommitted}
	root := w.repo.Root()
	files := make([]viewFile, 0, len(k.files))
	for _, f := range k.files {
		files = append(files, f)
	}
	list := &session.ChangeList{Files: make([]session.FileChange, len(files)), View: stamp}
	// Each file is built from its packed diff alone: on every core, as
	// a restart's first listing waits for all of them.
	parallel(context.Background(), len(files), func(i int) {
		f := &files[i]
		fc := resultChange(f.p.result(), q, root, true)
		if own, ok := fc.Meta["changesetd"].(protocol.Object); ok && f.index != "" {
			own["index"] = f.index
		}
		// Stamped as stampView does, Staged taken from the index mark
		// rather than from HEAD's tree, which is not read yet.
		staged := f.index == "staged" || f.index == "partial"
		for _, v := range []*session.FileVersion{fc.Old, fc.New} {
			if v != nil {
				v.View, v.Staged = stamp, staged
			}
		}
		list.Files[i] = fc
	})
	slices.SortFunc(list.Files, func(a, b session.FileChange) int { return strings.Compare(a.Path(), b.Path()) })
	// As the computed view will say, so that no badge comes and goes.
	w.markGenerated(list)
	// While the session builds and publishes the view, on one core, the
	// first scan's preparation takes the other.
	w.startPrep()
	return list, true
}

// forgetKnown stops offering the loaded view: a computed one replaces it.
func (w *gitWorkspace) forgetKnown() {
	w.known.mu.Lock()
	w.known.files = nil
	w.known.mu.Unlock()
}

// hasKnown reports whether a last-known view is offered.
func (w *gitWorkspace) hasKnown() bool {
	w.known.mu.Lock()
	defer w.known.mu.Unlock()
	return w.known.files != nil
}

// firstScan is the workspace's first full status when it is deferred (a
// restart with a last-known view to show meanwhile): it starts when
// something watches the tree or needs the status (the session does both
// once it has shown the view), so that showing the view does not share
// the cores with it; what needs the status waits for it. What it needs
// first (prepareFirst) starts as soon as the view's files are built;
// started from Watch without it, it arms the watcher while it reads the
// index and HEAD's tree.
type firstScan struct {
	done     chan struct{} // closed when it ended; nil: it ran in Opener
	kick     chan struct{} // closed to start it
	prep     chan struct{} // closed to start what it needs first (prepareFirst)
	once     sync.Once
	prepOnce sync.Once
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// startFirst starts the deferred first scan unless it has started.
func (w *gitWorkspace) startFirst() {
	if w.first.kick != nil {
		w.first.once.Do(func() { close(w.first.kick) })
	}
}

// startPrep starts the deferred first scan's preparation
// (prepareFirst), unless the scan or its preparation has started.
func (w *gitWorkspace) startPrep() {
	if w.first.prep != nil {
		w.first.prepOnce.Do(func() { close(w.first.prep) })
	}
}

// prepareFirst does what the deferred first scan needs before it can
// start: the index and HEAD's tree read, and every watch armed (which
// walks the directories). It runs once the view's files are built
// (LastKnown), while the session publishes them on one core, so that
// the scan starts at once when the session watches the tree. Arming
// before the scan is all the scan needs: a change made meanwhile is in
// the tree it reads.
func (w *gitWorkspace) prepareFirst(ctx context.Context) {
	tr := &w.tr
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.fw != nil || tr.closed || ctx.Err() != nil {
		return
	}
	if err := w.armPreloadingLocked(ctx); err != nil {
		// Watch or the scan arms it again, and reports what fails.
		w.log.Debug("cannot arm the watcher yet", "err", err)
	}
}

// awaitFirst starts the first scan if it has not started, and waits for
// it or for ctx.
func (w *gitWorkspace) awaitFirst(ctx context.Context) error {
	if w.first.done == nil {
		return nil
	}
	w.startFirst()
	select {
	case <-w.first.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deferFirstScan arranges the first full status to run in the
// background once something needs it, owned by the workspace: Close
// cancels and waits for it.
func (w *gitWorkspace) deferFirstScan() {
	ctx, cancel := context.WithCancel(context.Background())
	w.first.done, w.first.kick, w.first.prep, w.first.cancel = make(chan struct{}), make(chan struct{}), make(chan struct{}), cancel
	w.first.wg.Go(func() {
		defer close(w.first.done)
		select {
		case <-w.first.prep:
			w.prepareFirst(ctx)
			select {
			case <-w.first.kick:
			case <-ctx.Done():
				return
			}
		case <-w.first.kick:
		case <-ctx.Done():
			return
		}
		if _, _, err := w.trackedChanges(ctx); err != nil && ctx.Err() == nil {
			// The changeset's own computation runs the status again
			// and reports what fails.
			w.log.Warn("the first scan failed", "err", err)
		}
	})
}

// stopFirstScan cancels the deferred first scan and waits for it.
func (w *gitWorkspace) stopFirstScan() {
	if w.first.cancel != nil {
		w.first.cancel()
	}
	w.first.wg.Wait()
}
