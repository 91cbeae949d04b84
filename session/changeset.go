package session

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/changesetd/changesetd/hub"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/view"
	"github.com/changesetd/changesetd/store"
	"github.com/changesetd/changesetd/uritemplate"
)

// csChannel is one subscribed changeset of a session. It is owned by the
// session actor.
type csChannel struct {
	uri string
	ref uritemplate.Ref
	ch  *hub.Channel
	// v is the changeset as its subscribers hold it, with its review
	// marks and view stamps (package view).
	v *view.Model

	loaded    bool          // a full result has been published
	active    bool          // someone is subscribed: watchers run
	watchers  map[int]Watch // by workspace index
	computing bool
	gen       int // bumped on deactivate so late results are dropped
	// opGen is bumped when an operation ends: a computation that ran
	// across it may mix the tree before and after, so it is computed
	// again rather than published (operations.go).
	opGen int
	// pending work gathered while computing.
	pendingAll   bool
	pendingPaths map[int][]string // by workspace index
	// burst holds back the refresh of a burst's paths (holdBurst): first
	// and last are when its first and latest batch came, timer the wake
	// that refreshes once the window ends.
	burst struct {
		first, last time.Time
		timer       *time.Timer
	}
	// where each published file came from, by file id.
	origin map[string]fileOrigin
	// kept is the version each reviewed file was reviewed at, by file id
	// (sincereview.go).
	kept map[string]store.ReviewedVersion

	opStatus map[string]opState // last reported status per operation
	// opRunning counts invocations per operation that are queued or
	// running; the status goes back to idle when the last one ends.
	opRunning map[string]int
	undos     []*undoRecord // reverts that can be undone, oldest first (undo.go)
	drift     driftState    // files changed since a turn (rewind.go)
	// encoded is the state as JSON, handed out as the snapshot of every
	// subscriber that attaches until the state next changes; nil when
	// stale. See snapshot. A snapshot of a changeset with a thousand files
	// and their patches is megabytes of JSON; subscribers that attach
	// while it is unchanged share one encoding. It is made by the first of
	// them, not ahead of time: encoding after every full computation would
	// raise the daemon's peak memory for subscribers that may never come.
	encoded protocol.Encoded
	// enc makes encoded, from the previous encoding's bytes for the files
	// that have not changed since.
	enc stateEncoder
	// linger, while set, retires the changeset, which lost its last
	// subscriber, unless one comes back first (Options.IdleLinger).
	linger *time.Timer
}

type fileOrigin struct {
	ws       int
	from, to *FileVersion // the file's sides; nil when absent
	// The file's patch and ACP v2 diff block, read through the URIs of
	// its published _meta (patch.go), and their version. The block is
	// kept encoded, its text as its header and the patch's tail
	// (shareACP).
	patch  string
	acp    acpBlock
	patchV string
	// prev is the file's version before this one, still readable for a
	// while (setOrigin).
	prev *priorPatch
}

// priorPatch is a file's patch and ACP block of the version before the
// current one, served until a moment: a client whose read of the version
// it holds lands just after the next refresh still gets it, so a file
// rewritten continuously does not starve its readers with Conflict.
type priorPatch struct {
	v     string
	patch string
	acp   acpBlock
	until time.Time
}

// patchGrace is how long a file's previous patch stays readable after a
// refresh replaced it.
const patchGrace = 30 * time.Second

// setOrigin records where the published file id comes from, keeping the
// previous version's patch readable for patchGrace when it changed.
func (cs *csChannel) setOrigin(s *Session, id string, o fileOrigin) {
	if old, ok := cs.origin[id]; ok {
		switch {
		case old.patchV == o.patchV:
			o.prev = old.prev
		case old.patch != "" || old.acp.has():
			o.prev = &priorPatch{v: old.patchV, patch: old.patch, acp: old.acp, until: s.m.opts.Now().Add(patchGrace)}
		}
	}
	cs.origin[id] = o
}

// path is the file's current path, or its old path when it was deleted.
func (o fileOrigin) path() string {
	if o.to != nil {
		return o.to.Path
	}
	return o.from.Path
}

// old is the path a renamed file had, else "".
func (o fileOrigin) old() string {
	if o.from != nil && o.to != nil && o.from.Path != o.to.Path {
		return o.from.Path
	}
	return ""
}

func (s *Session) attachChangeset(sub Subscriber, uri string, ref uritemplate.Ref, lastSeen int64, done func(Attachment, error)) {
	if !s.do(func() {
		if s.disposed {
			done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: session was disposed", uri))
			return
		}
		if err := s.checkRef(ref); err != nil {
			done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: %v", uri, err))
			return
		}
		cs := s.changesets[uri]
		if cs == nil {
			cs = &csChannel{
				uri:    uri,
				ref:    ref,
				ch:     s.m.newChannel(uri),
				v:      view.New(patchMeta(uri), s.m.loadReviews(uri), s.m.loadHunkReviews(uri)),
				origin: map[string]fileOrigin{},
			}
			cs.setKeptLoaded(s.m.loadReviewedVersions(uri))
			cs.undos = s.loadUndos(uri)
			// Nothing before now can be replayed from this channel: a
			// cursor from an earlier channel of this URI (forgotten when
			// idle) gets a snapshot.
			cs.ch.ForgetHistory()
			s.changesets[uri] = cs
			s.m.opts.Metrics.ChangesetChannels(+1)
		}
		cs.showLastKnown(s)
		if cs.loaded && !cs.active && cs.live(s) && s.canActivate(cs) && cs.v.State.Status != protocol.StatusRecomputing {
			// Nobody watched the tree while the channel was idle: what it
			// holds may be stale. It says so until the refresh that
			// activating starts has brought it up to date.
			cs.commit(s, protocol.ChangesetStatusChanged{Status: protocol.StatusRecomputing}, nil)
		}
		// Encoded here, not under the hub's lock in attach: a large changeset is
		// megabytes of JSON, and every session's publish waits for that
		// lock. Nothing changes the state between here and the
		// registration: the actor owns it.
		cs.stopLinger()
		cs.encode()
		s.m.attachOwned(cs.ch, sub, lastSeen, cs.snapshot(), done)
		if !cs.active && s.canActivate(cs) {
			cs.activate(s)
		}
	}) {
		done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: session was disposed", uri))
	}
}

// snapshot returns the state a subscriber starts from: the encoded state
// when it is current (attachChangeset encodes it first), else a clone. A
// state in recomputing is encoded too: a 0.6/0.7 client, shown computing
// instead, gets its status rewritten at the front of the encoding
// (protocol.Adapt). It never encodes: attachChangeset does, first.
func (cs *csChannel) snapshot() any {
	if cs.encoded == nil {
		return cs.v.State.Clone()
	}
	return cs.encoded
}

// encode fills cs.encoded from the state unless it is current.
func (cs *csChannel) encode() {
	if cs.encoded != nil {
		return
	}
	if b, err := cs.enc.encode(&cs.v.State); err == nil {
		cs.encoded = b
	}
}

// checkRef reports whether the session can serve a changeset reference.
func (s *Session) checkRef(ref uritemplate.Ref) error {
	switch ref.Kind {
	case protocol.KindUncommitted, protocol.KindBranch:
		if s.workspaces != nil && !s.hasGit() {
			return fmt.Errorf("changeset %s needs a git repository; no working directory of session %s is one", ref.Kind, s.uri)
		}
		return nil
	case protocol.KindSession:
		if s.workspaces != nil && !s.hasSnapshots() {
			return fmt.Errorf("changeset %s needs a readable working directory; session %s has none", ref.Kind, s.uri)
		}
		return nil
	case protocol.KindTurn:
		if s.turnByID(ref.Vars["turnId"]) == nil {
			return fmt.Errorf("turn %q does not exist in session %s%s", ref.Vars["turnId"], s.uri, s.knownTurns())
		}
		return nil
	case protocol.KindCompareTurns:
		if _, err := s.endpoint(ref.Vars["modifiedTurnId"], 0); err != nil {
			return err
		}
		from, err := s.endpoint(ref.Vars["originalTurnId"], 0)
		if err != nil {
			return err
		}
		if from == "" && ref.Vars["originalTurnId"] == BaselineTurnID && !s.started {
			// Restored, not yet started: the baseline is known once it
			// is, and the changeset waits for that (canActivate).
			return nil
		}
		if from == "" {
			return fmt.Errorf("turn %q is still running: use it as the modified side, or compare once it has ended", ref.Vars["originalTurnId"])
		}
		return nil
	}
	return fmt.Errorf("changeset kind %q is not offered by session %s", ref.Kind, s.uri)
}

func (s *Session) detachChangeset(sub Subscriber, uri string) {
	cs := s.changesets[uri]
	if cs == nil {
		return
	}
	s.m.detachChannel(cs.ch, sub)
	if cs.ch.Subscribers() > 0 {
		return
	}
	// Only a live changeset lingers: one of stored trees (a turn that
	// ended, a comparison) is computed again from them at once.
	linger := s.m.opts.IdleLinger
	if linger <= 0 || !cs.active || !cs.live(s) {
		s.retire(cs, uri)
		return
	}
	// Still watched for a while: stopped when nobody came back by then.
	// The timer checks it is still the pending one: a timer that fired
	// while a subscriber came and went again must not cut the next
	// linger short.
	cs.stopLinger()
	var t *time.Timer
	t = time.AfterFunc(linger, func() {
		s.do(func() {
			if cs.linger != t || s.disposed || s.changesets[uri] != cs || cs.ch.Subscribers() > 0 {
				return
			}
			cs.linger = nil
			s.retire(cs, uri)
		})
	})
	cs.linger = t
}

// retire stops an idle changeset, and forgets it if it can be computed
// again when asked for.
func (s *Session) retire(cs *csChannel, uri string) {
	cs.deactivate()
	if cs.forgettable() {
		delete(s.changesets, uri)
		s.m.opts.Metrics.ChangesetChannels(-1)
	}
}

// stopLinger cancels a pending retire of an idle changeset.
func (cs *csChannel) stopLinger() {
	if cs.linger != nil {
		cs.linger.Stop()
		cs.linger = nil
	}
}

// forgettable reports whether an idle channel can be dropped: one of the
// unbounded kinds (a session has a turn channel per turn and a compare
// channel per pair), computed again from snapshots if asked for, with no
// operation queued or running and no revert to undo. Its review flags
// are in the store.
func (cs *csChannel) forgettable() bool {
	if cs.ref.Kind != protocol.KindTurn && cs.ref.Kind != protocol.KindCompareTurns {
		return false
	}
	if len(cs.undos) > 0 {
		return false
	}
	for _, n := range cs.opRunning {
		if n > 0 {
			return false
		}
	}
	return true
}

// activate starts watching and computing. s is the owning session.
func (cs *csChannel) activate(s *Session) {
	cs.active = true
	cs.pendingAll = true
	cs.showLastKnown(s)
	if !cs.startWatching(s) {
		cs.refresh(s)
	}
}

// startWatching watches the working trees when the changeset's new side is
// live. Arming a watch walks the tree, so it runs off the actor; the first
// scan starts once every watch is armed, so no change can fall between
// the scan and the watch. It reports whether it started arming (the
// refresh then follows it).
func (cs *csChannel) startWatching(s *Session) bool {
	if !cs.live(s) || cs.watchers != nil {
		return false
	}
	cs.watchers = map[int]Watch{}
	gen := cs.gen
	type armed struct {
		i   int
		ws  Workspace
		w   Watch
		err error
	}
	// The workspaces are taken here, on the actor: the arming goroutine
	// must not read s.workspaces, which the actor changes meanwhile (a
	// plain directory whose baseline failed is dropped).
	var todo []armed
	for i, e := range s.workspaces {
		if e.ws != nil {
			todo = append(todo, armed{i: i, ws: e.ws})
		}
	}
	s.m.spawn("arm watches", func() {
		for k := range todo {
			a := &todo[k]
			i := a.i
			a.w, a.err = a.ws.Watch(func(paths []string, all bool) {
				s.do(func() { cs.changed(s, i, paths, all) })
			})
		}
		s.do(func() {
			current := gen == cs.gen && cs.watchers != nil && !s.disposed
			for _, a := range todo {
				if a.err == nil && s.workspaces[a.i].ws != a.ws {
					a.w.Stop() // the workspace was dropped meanwhile
					continue
				}
				if a.err != nil {
					s.log.Warn("cannot watch working directory; changes show on the next refresh", "dir", s.workspaces[a.i].dir, "err", a.err)
					s.setWorkspaceInfo(a.i, func(wi *workingDirInfo) { wi.Watcher, wi.WatcherReason = "none", a.err.Error() })
					continue
				}
				if !current {
					a.w.Stop() // deactivated meanwhile
					continue
				}
				cs.watchers[a.i] = a.w
				mode, reason := a.w.Mode()
				s.setWorkspaceInfo(a.i, func(wi *workingDirInfo) { wi.Watcher, wi.WatcherReason = mode, reason })
			}
			if current {
				cs.refresh(s)
			}
		})
	})
	return true
}

func (cs *csChannel) stopWatching() {
	for _, w := range cs.watchers {
		w.Stop()
	}
	cs.watchers = nil
}

func (cs *csChannel) deactivate() {
	cs.stopLinger()
	cs.active = false
	cs.gen++
	cs.computing = false
	cs.stopWatching()
}

// close ends the channel for good when its session is disposed.
func (cs *csChannel) close(s *Session) {
	cs.deactivate()
	cs.commit(s, protocol.ChangesetCleared{}, nil)
	s.m.hub.DropSubscribers(cs.ch)
}

// changed records watcher hints and schedules a refresh.
func (cs *csChannel) changed(s *Session, ws int, paths []string, all bool) {
	if !cs.active || s.disposed {
		return
	}
	if w := cs.watchers[ws]; w != nil {
		mode, reason := w.Mode()
		s.setWorkspaceInfo(ws, func(wi *workingDirInfo) { wi.Watcher, wi.WatcherReason = mode, reason })
	}
	if all {
		cs.pendingAll = true
	} else {
		if cs.pendingPaths == nil {
			cs.pendingPaths = map[int][]string{}
		}
		cs.pendingPaths[ws] = append(cs.pendingPaths[ws], paths...)
		cs.burst.last = time.Now()
	}
	cs.refresh(s)
}

// burstPaths is how many changed paths waiting for a refresh make them a
// burst's: a save reports one or a few, a checkout, a formatter or an
// agent rewriting a package hundreds or thousands, which the watcher may
// deliver in several batches while they are being written.
const burstPaths = 64

// burstQuiet and burstHold are the trailing window a burst's refresh
// waits in: until no batch has come for burstQuiet, and never more than
// burstHold after the first, so that the batches of one burst are
// computed and published once rather than once each (every refresh has
// costs of its own: the status of the tree's state, the list reconciled,
// the status actions to every subscriber). A save never waits.
const (
	burstQuiet = 50 * time.Millisecond
	burstHold  = 300 * time.Millisecond
)

// holdBurst reports whether the pending refresh is a burst's that waits
// for more of it, and arranges the refresh for when the window ends.
func (cs *csChannel) holdBurst(s *Session) bool {
	n := 0
	for _, p := range cs.pendingPaths {
		n += len(p)
	}
	if cs.pendingAll || !cs.loaded || n < burstPaths {
		cs.burst.first = time.Time{}
		return false
	}
	now := time.Now()
	if cs.burst.first.IsZero() {
		cs.burst.first = now
	}
	due := cs.burst.last.Add(burstQuiet)
	if end := cs.burst.first.Add(burstHold); end.Before(due) {
		due = end
	}
	if !now.Before(due) {
		cs.burst.first = time.Time{}
		return false
	}
	if cs.burst.timer == nil {
		cs.burst.timer = time.AfterFunc(due.Sub(now), func() {
			s.do(func() {
				cs.burst.timer = nil
				if cs.active && !s.disposed {
					cs.refresh(s)
				}
			})
		})
	}
	return true
}

// commit reduces a on the changeset state and publishes it.
func (cs *csChannel) commit(s *Session, a protocol.Action, origin *protocol.ActionOrigin) {
	a, changed := cs.v.Apply(a)
	if changed {
		cs.encoded = nil
	}
	s.m.publish(cs.ch, a, origin)
}

// query returns what to ask workspace i for.
func (cs *csChannel) query(s *Session, i int) Query {
	switch cs.ref.Kind {
	case protocol.KindBranch:
		return Query{View: protocol.KindBranch, Base: s.queryBase()}
	case protocol.KindSession:
		return Query{View: ViewTrees, From: s.baselineOf(i)}
	case protocol.KindTurn:
		t := s.turnByID(cs.ref.Vars["turnId"])
		return Query{View: ViewTrees, From: t.start[i], To: t.endOf(i)}
	case protocol.KindCompareTurns:
		from, _ := s.endpoint(cs.ref.Vars["originalTurnId"], i)
		to, _ := s.endpoint(cs.ref.Vars["modifiedTurnId"], i)
		return Query{View: ViewTrees, From: from, To: to}
	}
	return Query{View: protocol.KindUncommitted}
}

// live reports whether the changeset's new side is the working tree, so it
// must be watched; snapshot-to-snapshot changesets never change.
func (cs *csChannel) live(s *Session) bool {
	switch cs.ref.Kind {
	case protocol.KindTurn:
		t := s.turnByID(cs.ref.Vars["turnId"])
		return t == nil || t.running()
	case protocol.KindCompareTurns:
		to, _ := s.endpoint(cs.ref.Vars["modifiedTurnId"], 0)
		return to == ""
	}
	return true
}

type wsResult struct {
	ws          int
	all         bool
	paths       []string
	list        *ChangeList
	err         error
	undoCurrent map[*undoRecord]bool // which reverts' files are as they left them
	drifted     []string             // files changed since the turn (rewind.go)
}

// refresh starts a computation unless one is running; pending hints are
// picked up when it finishes.
func (cs *csChannel) refresh(s *Session) {
	if cs.computing || (!cs.pendingAll && len(cs.pendingPaths) == 0) {
		return
	}
	if cs.holdBurst(s) {
		return
	}
	cs.computing = true
	all, byWS := cs.pendingAll || !cs.loaded, cs.pendingPaths
	cs.pendingAll, cs.pendingPaths = false, nil
	if !all {
		var ok bool
		if byWS, ok = cs.withRenamePartners(byWS); !ok {
			all = true
		}
	}
	if cs.loaded && cs.v.State.Status != protocol.StatusRecomputing {
		cs.commit(s, protocol.ChangesetStatusChanged{Status: protocol.StatusRecomputing}, nil)
	}
	type job struct {
		ws    int
		ws2   Workspace
		q     Query
		paths []string
	}
	var jobs []job
	for i, e := range s.workspaces {
		if e.ws == nil {
			continue
		}
		q := cs.query(s, i)
		if all {
			jobs = append(jobs, job{ws: i, ws2: e.ws, q: q})
			continue
		}
		if p := byWS[i]; len(p) > 0 {
			q.Paths = compactPaths(p)
			jobs = append(jobs, job{ws: i, ws2: e.ws, q: q, paths: q.Paths})
		}
	}
	gen, opGen := cs.gen, cs.opGen
	ctx := s.ctx
	checkUndos := cs.undoChecker(s)
	checkDrift := cs.driftChecker(s)
	uri := cs.uri
	s.m.spawn("refresh", func() {
		results := make([]wsResult, 0, len(jobs))
		for _, j := range jobs {
			start := time.Now()
			list, err := j.ws2.Changes(ctx, j.q)
			if list != nil {
				s.log.Debug("changes computed", "changeset", uri, "paths", len(j.q.Paths), "files", len(list.Files), "took", time.Since(start))
			}
			r := wsResult{ws: j.ws, all: all, paths: j.paths, list: list, err: err}
			r.undoCurrent = checkUndos(j.ws)
			r.drifted = checkDrift(ctx, j.ws, list)
			results = append(results, r)
		}
		delivered := s.do(func() {
			later := false // the lists are shown once the state is encoded
			defer func() {
				if !later {
					shownAll(results)
				}
			}()
			if gen != cs.gen || s.disposed {
				return
			}
			cs.computing = false
			if opGen != cs.opGen {
				cs.pendingAll = true
				cs.refresh(s)
				return
			}
			start := time.Now()
			cs.apply(s, all, results)
			s.log.Debug("changes published", "changeset", uri, "took", time.Since(start))
			cs.refresh(s)
			if all {
				// Encode the new state for the next subscriber once what
				// is queued on the actor is done, instead of when it
				// subscribes: a full result is megabytes, and rare.
				later = s.do(func() {
					defer shownAll(results)
					if !s.disposed && s.changesets[uri] == cs && !cs.computing {
						cs.encode()
					}
				})
			}
		})
		if !delivered {
			shownAll(results)
		}
	})
}

// shownAll tells the workspaces whose lists were computed that they have
// been published, or dropped (ChangeList.Shown).
func shownAll(results []wsResult) {
	for _, r := range results {
		if r.list != nil && r.list.Shown != nil {
			r.list.Shown()
		}
	}
}

// maxRenamePartners bounds the additions and deletions re-checked with a
// path-scoped refresh; beyond it a full refresh is cheaper than pairing.
const maxRenamePartners = 1000

// withRenamePartners adds, to each workspace's changed paths, the paths of
// the changeset's additions, deletions and renames there: a rename is
// only found when both of its sides are diffed together, so a refresh of
// just new.txt must see the deleted old.txt too. It reports false when
// there are too many to be worth it.
func (cs *csChannel) withRenamePartners(byWS map[int][]string) (map[int][]string, bool) {
	n := 0
	out := make(map[int][]string, len(byWS))
	for ws, paths := range byWS {
		out[ws] = slices.Clone(paths)
	}
	for _, o := range cs.origin {
		if _, changed := byWS[o.ws]; !changed {
			continue
		}
		if o.from != nil && o.to != nil && o.old() == "" {
			continue // modified in place: no rename partner
		}
		out[o.ws] = append(out[o.ws], o.path())
		if o.old() != "" {
			out[o.ws] = append(out[o.ws], o.old())
		}
		if n++; n > maxRenamePartners {
			return nil, false
		}
	}
	return out, true
}

// compactPaths sorts, dedupes and drops paths under another listed path.
func compactPaths(paths []string) []string {
	p := slices.Clone(paths)
	slices.Sort(p)
	p = slices.Compact(p)
	out := p[:0]
	for _, x := range p {
		if len(out) > 0 && (out[len(out)-1] == "" || strings.HasPrefix(x, out[len(out)-1]+"/")) {
			continue
		}
		out = append(out, x)
	}
	return out
}

// apply turns computed changes into actions.
func (cs *csChannel) apply(s *Session, all bool, results []wsResult) {
	var failure *protocol.ErrorInfo
	for _, e := range s.workspaces {
		if e.ws == nil && failure == nil {
			failure = &protocol.ErrorInfo{ErrorType: "WorkspaceUnavailable", Message: fmt.Sprintf("%s: %v", e.dir, e.err)}
		}
	}
	for _, r := range results {
		cs.undoChecked(r.undoCurrent)
		cs.driftChecked(r)
		if r.err != nil {
			failure = &protocol.ErrorInfo{ErrorType: "ComputeFailed", Message: fmt.Sprintf("%s: %v", s.workspaces[r.ws].dir, r.err)}
			continue
		}
		if r.list.View != "" {
			if cs.v.Views == nil {
				cs.v.Views = map[int]string{}
			}
			cs.v.Views[r.ws] = r.list.View
		}
		if r.all {
			warnings := r.list.Warnings
			s.setWorkspaceInfo(r.ws, func(wi *workingDirInfo) { wi.Warnings = warnings })
		}
	}
	if all && cs.loaded {
		cs.applyDelta(s, results)
	} else if all {
		var files []protocol.ChangesetFile
		origin := map[string]fileOrigin{}
		for _, r := range results {
			if r.err != nil {
				continue
			}
			for _, fc := range r.list.Files {
				f, o := s.fileOf(r.ws, fc, cs)
				files = append(files, f)
				origin[f.ID] = o
			}
		}
		cs.origin = origin
		if files == nil {
			files = []protocol.ChangesetFile{}
		}
		cs.commit(s, protocol.ChangesetContentChanged{Files: files, Operations: cs.operations(s)}, nil)
		cs.loaded = true
	} else {
		for _, r := range results {
			if r.err != nil {
				continue
			}
			computed := make([]protocol.ChangesetFile, 0, len(r.list.Files))
			for _, fc := range r.list.Files {
				f, o := s.fileOf(r.ws, fc, cs)
				cs.setOrigin(s, f.ID, o)
				computed = append(computed, f)
			}
			under := newPathSet(r.paths)
			changes := cs.v.Reconcile(computed, func(id string) bool {
				o, ok := cs.origin[id]
				return ok && o.ws == r.ws && under.under(o)
			})
			cs.forget(changes)
			cs.commitFiles(s, changes)
		}
	}
	cs.syncOperations(s)
	if failure != nil {
		cs.commit(s, protocol.ChangesetStatusChanged{Status: protocol.StatusError, Error: failure}, nil)
	} else {
		cs.commit(s, protocol.ChangesetStatusChanged{Status: protocol.StatusReady, Meta: view.StampMeta(cs.v.ViewStamp(len(s.workspaces)))}, nil)
	}
	if cs.ref.Kind == protocol.KindUncommitted {
		s.m.notifyRoot(protocol.NotifySessionSummaryChanged, protocol.SessionSummaryChangedParams{
			Channel: protocol.RootURI, Session: s.uri, Changes: protocol.Object{"changes": s.changes()},
		})
	}
	s.filesChanged(results)
	s.driftMayHaveChanged(cs)
}

func underAny(o fileOrigin, paths []string) bool {
	for _, p := range paths {
		for _, x := range []string{o.path(), o.old()} {
			if x != "" && (x == p || strings.HasPrefix(x, p+"/")) {
				return true
			}
		}
	}
	return false
}

// pathSet answers underAny for many files against the same paths in time
// that grows with a path's depth, not with the number of paths: a
// refresh of a burst's ten thousand paths checks every published file.
type pathSet map[string]bool

func newPathSet(paths []string) pathSet {
	ps := make(pathSet, len(paths))
	for _, p := range paths {
		ps[p] = true
	}
	return ps
}

// under is underAny(o, the set's paths).
func (ps pathSet) under(o fileOrigin) bool {
	for _, x := range []string{o.path(), o.old()} {
		for x != "" {
			if ps[x] {
				return true
			}
			i := strings.LastIndexByte(x, '/')
			if i < 0 {
				break
			}
			x = x[:i]
		}
	}
	return false
}

// fileOf builds the wire form of a file change. A reviewed flag carries
// over only while the content pair is unchanged.
func (s *Session) fileOf(ws int, fc FileChange, cs *csChannel) (protocol.ChangesetFile, fileOrigin) {
	root := s.workspaces[ws].root()
	// A file's sides usually have one path: one string for its URIs.
	var lastPath, lastURI string
	side := func(sd *FileVersion) *protocol.FileEditSide {
		uri := lastURI
		if lastURI == "" || sd.Path != lastPath {
			uri = fileURIUnder(root, sd.Path)
			lastPath, lastURI = sd.Path, uri
		}
		content := protocol.ContentRef{URI: uri, SizeHint: protocol.Ptr(sd.Size), Nonce: sd.OID}
		if !sd.Live {
			content.URI = BlobURI(s.id, sd.OID)
		}
		if sd.Mode == 0o120000 {
			content.ContentType = "inode/symlink"
		}
		return &protocol.FileEditSide{URI: uri, Content: content}
	}
	f := protocol.ChangesetFile{Edit: protocol.FileEdit{}, Meta: withEdits(fc.Meta, s.editsMeta(cs, ws, fc.Path()))}
	o := fileOrigin{ws: ws, from: fc.Old, to: fc.New, patch: fc.Patch, acp: shareACP(fc.Patch, fc.ACP)}
	if fc.Old != nil {
		f.Edit.Before = side(fc.Old)
		f.ID = f.Edit.Before.URI
	}
	if fc.New != nil {
		f.Edit.After = side(fc.New)
		f.ID = f.Edit.After.URI
	}
	f.Meta = s.withAuthors(cs, ws, fc, f.Meta)
	o.patchV = patchVersion(fc, f.ID)
	// Into withAuthors' copy, rather than one more copy of the file's
	// meta: a burst builds ten thousand.
	setPatchURIs(f.Meta["changesetd"].(protocol.Object), cs.uri, o.patchV, fc)
	if !fc.Binary && fc.Precise {
		f.Edit.Diff = &protocol.FileEditDiffStats{Added: protocol.Ptr(fc.Added), Removed: protocol.Ptr(fc.Removed)}
	}
	cs.v.Decorate(&f)
	return f, o
}

// BlobURI is the content URI of a stored object of a session.
func BlobURI(sessionID, oid string) string {
	if plainSegment(sessionID) && plainSegment(oid) {
		// What path.Join returns for these, without its cleaning.
		return protocol.SessionScheme + "/" + sessionID + "/blob/" + oid
	}
	return protocol.SessionScheme + "/" + path.Join(sessionID, "blob", oid)
}

// fileURIUnder is FileURI(filepath.Join(root, filepath.FromSlash(rel)))
// for a file at the slash-separated path rel below root. A changeset
// builds two for each of its files, thousands on every full computation:
// a clean root and path of characters a URL path keeps as they are
// (nearly all) are joined and prefixed, without filepath's cleaning and
// net/url's escaping, which would return the same.
func fileURIUnder(root, rel string) string {
	if filepath.Separator == '/' && len(root) > 1 && root[0] == '/' && urlSafe(root) && urlSafe(rel) && cleanSlashPath(root[1:]) && cleanSlashPath(rel) {
		return "file://" + root + "/" + rel
	}
	return FileURI(filepath.Join(root, filepath.FromSlash(rel)))
}

// urlSafe reports whether s has only letters, digits and -._~/, which a
// URL's path keeps unescaped.
func urlSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
			return false
		}
	}
	return true
}

// cleanSlashPath reports whether p is a non-empty relative path of
// non-empty segments, none of them . or ..: path.Clean leaves it as it
// is.
func cleanSlashPath(p string) bool {
	for {
		seg, rest, more := strings.Cut(p, "/")
		if !plainSegment(seg) {
			return false
		}
		if !more {
			return true
		}
		p = rest
	}
}

// plainSegment reports whether s is a path segment that cleaning keeps
// as it is: not empty, ., .. or holding a slash.
func plainSegment(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.Contains(s, "/")
}

// changes sums the uncommitted changeset for the session summary, or nil
// when it has not been computed.
func (s *Session) changes() *protocol.ChangesSummary {
	for _, cs := range s.changesets {
		if cs.ref.Kind != protocol.KindUncommitted || !cs.loaded {
			continue
		}
		var add, del int
		for _, f := range cs.v.State.Files {
			if d := f.Edit.Diff; d != nil {
				if d.Added != nil {
					add += *d.Added
				}
				if d.Removed != nil {
					del += *d.Removed
				}
			}
		}
		return &protocol.ChangesSummary{Additions: protocol.Ptr(add), Deletions: protocol.Ptr(del), Files: protocol.Ptr(len(cs.v.State.Files))}
	}
	return nil
}

func (s *Session) dispatchChangeset(sub Subscriber, uri string, a protocol.Action, origin *protocol.ActionOrigin) {
	cs := s.changesets[uri]
	if cs == nil || s.disposed {
		return // no such channel: dropped, as the protocol requires
	}
	rv, ok := a.(protocol.ChangesetFilesReviewChanged)
	if !ok {
		s.m.reject(sub, uri, a, origin, fmt.Sprintf("%s is not client-dispatchable; only changeset/filesReviewChanged is", a.ActionType()))
		return
	}
	if !s.hasReview(cs.ref.Kind) {
		s.m.reject(sub, uri, a, origin, fmt.Sprintf("the %s changeset does not offer review", cs.ref.Kind))
		return
	}
	if len(rv.Files) == 0 {
		s.m.reject(sub, uri, a, origin, "files is empty: name at least one file id")
		return
	}
	for _, id := range rv.Files {
		if id == "" {
			s.m.reject(sub, uri, a, origin, "files contains an empty file id")
			return
		}
	}
	if reason := cs.staleReview(rv.Meta, rv.Reviewed, rv.Files); reason != "" {
		s.m.reject(sub, uri, a, origin, reason)
		return
	}
	next := cs.v.Reviewed(rv.Files, rv.Reviewed)
	// One durable write for the whole batch, before the echo: a client
	// that saw the echo never loses the flag to a crash.
	if err := s.m.saveReviews(uri, next); err != nil {
		s.log.Error("cannot save review state", "changeset", uri, "err", err)
		s.m.reject(sub, uri, a, origin, "the review state could not be saved: "+err.Error())
		return
	}
	cs.v.Reviews = next
	cs.commit(s, a, origin)
	s.hunksFollowFiles(cs, rv)
	s.keepReviewed(cs, rv.Files, rv.Reviewed)
}

func (s *Session) hasReview(kind string) bool {
	for _, c := range s.state.Changesets {
		if c.ChangeKind == kind {
			return c.HasReview()
		}
	}
	return false
}

// ReadBlob returns a stored object of one of the session's workspaces.
func (s *Session) ReadBlob(ctx context.Context, oid string) ([]byte, error) {
	return s.readBlob(ctx, oid, -1)
}

// readBlob is ReadBlob refusing, before it is read, an object larger than
// limit bytes (no limit when negative) whose size a workspace can tell.
func (s *Session) readBlob(ctx context.Context, oid string, limit int64) ([]byte, error) {
	var drafted []byte
	wss, err := query(ctx, s, func() ([]Workspace, error) {
		if b, ok := s.draftContent(oid); ok {
			drafted = b
			return nil, nil
		}
		var out []Workspace
		for _, e := range s.workspaces {
			if e.ws != nil {
				out = append(out, e.ws)
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	if drafted != nil {
		return drafted, nil
	}
	for _, ws := range wss {
		if bs, ok := ws.(BlobSizer); ok && limit >= 0 {
			if n, ok := bs.BlobSize(oid); ok && n > limit {
				return nil, protocol.Errorf(protocol.CodeInvalidParams, "resourceRead: object %s is %d bytes, larger than %d bytes, the most one read returns", oid, n, limit).WithReason(protocol.ReasonTooLarge)
			}
		}
		if b, err := ws.ReadBlob(oid); err == nil {
			return b, nil
		}
	}
	return nil, protocol.Errorf(protocol.CodeNotFound, "resourceRead: object %s not found in session %s", oid, s.uri)
}

// applyDelta publishes a full refresh of a changeset that was already
// loaded as the fileSet and fileRemoved actions that change the old list
// into the new one. Files of a workspace that failed are kept.
func (cs *csChannel) applyDelta(s *Session, results []wsResult) {
	failed := map[int]bool{}
	var computed []protocol.ChangesetFile
	for _, r := range results {
		if r.err != nil {
			failed[r.ws] = true
			continue
		}
		for _, fc := range r.list.Files {
			f, o := s.fileOf(r.ws, fc, cs)
			cs.setOrigin(s, f.ID, o)
			computed = append(computed, f)
		}
	}
	changes := cs.v.Reconcile(computed, func(id string) bool {
		o, ok := cs.origin[id]
		return !ok || !failed[o.ws]
	})
	cs.forget(changes)
	cs.commitFiles(s, changes)
}

// forget drops the origins of the files changes remove.
func (cs *csChannel) forget(changes []protocol.Action) {
	for _, a := range changes {
		if rm, ok := a.(protocol.ChangesetFileRemoved); ok {
			delete(cs.origin, rm.FileID)
		}
	}
}

// commitFiles publishes a refresh's fileSet and fileRemoved actions as
// the model batches them (view.Model.Publish).
func (cs *csChannel) commitFiles(s *Session, changes []protocol.Action) {
	batches := cs.v.Publish(changes)
	if len(batches) > 0 {
		cs.encoded = nil
	}
	for _, b := range batches {
		s.m.publishAll(cs.ch, b)
	}
}
