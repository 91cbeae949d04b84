package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/changesetd/changesetd/hub"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/changesetd/changesetd/store"
	"github.com/changesetd/changesetd/uritemplate"
)

// ErrClosed is returned for work posted to a disposed session.
var ErrClosed = errors.New("session: closed")

// ErrPatchTooLarge is a workspace's answer to a query with MaxPatchBytes
// whose files' patches passed that limit together: it stopped computing
// them there.
var ErrPatchTooLarge = errors.New("session: the patch is larger than its limit")

// Session is the actor of one ahp-session: channel and its changesets.
// Every field below mb is owned by the actor goroutine.
type Session struct {
	m   *Manager
	id  string
	uri string
	log *slog.Logger
	mb  *mailbox

	dirs       []string
	title      string // as created: what the session's record keeps
	createdAt  time.Time
	modifiedAt time.Time
	state      protocol.SessionState
	ch         *hub.Channel
	workspaces []*workingDir
	changesets map[string]*csChannel // by changeset URI
	templates  map[string]*uritemplate.Template
	disposed   bool
	info       []workingDirInfo // published on the session _meta

	// Turns. baseline holds the snapshot tree of each workspace when the
	// session started; turns are in start order, the last one possibly
	// running.
	baseline []string
	started  bool            // baseline is taken
	starting []chan struct{} // closed once started (awaitStarted)
	turns    []*turn
	chats    []*chat        // the default chat first, then agents' in order of their first turn
	restored *store.Session // the record this session was restored from
	// branchBase is the base chosen for the branch changeset, "" for the
	// default (branchbase.go).
	branchBase string
	drafts     map[editKey]*draft // provisional files (drafts.go)

	// boundaryMu serialises turn boundaries; it is held while snapshotting,
	// outside the actor, so the actor keeps serving.
	boundaryMu sync.Mutex

	flights map[string]*flight // operations in progress, by invocation

	edits    map[editKey]*fileEdits // what edit tools reported, by file (edits.go)
	evidence evidenceLog            // who wrote what (evidence.go, authors.go)

	notes notes // the annotations channel (annotations.go)

	// ctx is cancelled when the session is disposed (or the Manager
	// closes): work done for the session off the actor stops with it.
	ctx    context.Context
	cancel context.CancelFunc

	// recMu orders writing the session record (at baseline) with deleting
	// it (at dispose); gone is set once it is deleted.
	recMu sync.Mutex
	gone  bool
	// record is the session's record as stored (nil until it is); a
	// dispose keeps it, marked disposed. Guarded by recMu, or set before
	// the actor starts.
	record *store.Session

	// listed is the session's catalogue entry as of the actor's last
	// batch of work, so that listing sessions never waits for a busy
	// actor (a session placing its annotations would stall the root
	// channel's listSessions).
	listed atomic.Pointer[protocol.SessionSummary]
}

// workingDir is one working directory of the session and what opening
// it gave: its Workspace, or why there is none.
type workingDir struct {
	dir string
	ws  Workspace // nil when it could not be opened
	err error
}

// root is the directory a file change's path is relative to: the top of
// the repository, which is above dir when the session is on a
// subdirectory of it.
func (e *workingDir) root() string {
	if e.ws != nil {
		return e.ws.Root()
	}
	return e.dir
}

func newSession(m *Manager, id, uri string, dirs []string, title string, createdAt time.Time) *Session {
	now := createdAt
	if title == "" {
		title = "Changes"
		if len(dirs) > 0 {
			title = filepath.Base(dirs[0])
		}
	}
	wd := make([]string, len(dirs))
	for i, d := range dirs {
		wd[i] = FileURI(d)
	}
	s := &Session{
		m:          m,
		id:         id,
		uri:        uri,
		log:        m.log.With("session", uri),
		mb:         newMailbox(),
		dirs:       dirs,
		createdAt:  now,
		title:      title,
		modifiedAt: now,
		ch:         m.newChannel(uri),
		changesets: map[string]*csChannel{},
		templates:  uritemplate.SessionChangesetTemplates(id),
	}
	s.ctx, s.cancel = context.WithCancel(m.ctx)
	s.notes.ch = m.newChannel(protocol.AnnotationsURI(uri))
	s.chats = []*chat{newChat(m.hub, id, "", now)}
	s.state = protocol.SessionState{
		Provider:           Provider,
		Title:              title,
		Status:             protocol.SessionIdle,
		Lifecycle:          protocol.LifecycleCreating,
		ActiveClients:      []protocol.Object{},
		WorkingDirectories: wd,
		Chats:              []protocol.ChatSummary{s.chats[0].summary()},
		DefaultChat:        s.chatURI(),
		Project:            projectOf(dirs),
	}
	s.state.Annotations = s.annotationsSummary()
	return s
}

// ID returns the session id (the path of its URI).
func (s *Session) ID() string { return s.id }

// URI returns the session URI.
func (s *Session) URI() string { return s.uri }

// Dirs returns the session's working directories.
func (s *Session) Dirs() []string { return slices.Clone(s.dirs) }

// do posts f to the actor.
func (s *Session) do(f func()) bool { return s.mb.post(f) }

// The actor is asked two kinds of things, and they differ in what
// happens when the caller stops waiting (its client disconnected, its
// deadline passed):
//
//   - a query only reads. It is abandonable: the caller returns when its
//     ctx ends, and if the actor reaches the query after that it skips it,
//     since nobody would read the answer.
//   - a command changes state. The actor runs it to completion and
//     publishes what it did whether or not the caller still waits; the
//     caller only waits for the outcome, and one that leaves early leaves
//     nothing half-done behind. Work a command starts off the actor is
//     owned by the actor's side too (see Invoke's flights), never by the
//     caller that asked for it.

// query runs the read-only f on the actor and waits for its result or
// ctx; f is skipped when ctx ended before the actor got to it.
func query[T any](ctx context.Context, s *Session, f func() (T, error)) (T, error) {
	return command(ctx, s, func() (T, error) {
		if err := ctx.Err(); err != nil {
			var zero T
			return zero, err // abandoned: nobody reads the answer
		}
		return f()
	})
}

// command runs f on the actor to completion, whether or not the caller
// still waits, and waits for its result or ctx. It returns ErrClosed,
// without running f, when the session's actor has stopped.
func command[T any](ctx context.Context, s *Session, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	if !s.do(func() {
		v, err := f()
		ch <- result{v, err}
	}) {
		var zero T
		return zero, ErrClosed
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func (s *Session) start() {
	s.mb.after = s.updateListed
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		s.mb.run()
	}()
	// Opening repositories reads the index and HEAD: do it off the actor.
	s.m.spawn("open workspaces", func() {
		start := time.Now()
		entries := make([]*workingDir, len(s.dirs))
		for i, d := range s.dirs {
			e := &workingDir{dir: d}
			if s.m.opts.OpenWorkspace != nil {
				e.ws, e.err = s.m.opts.OpenWorkspace(d)
			} else {
				e.err = errors.New("no changeset engine configured")
			}
			if e.err != nil {
				s.log.Warn("working directory has no changeset data", "dir", d, "err", e.err)
			}
			entries[i] = e
		}
		s.log.Debug("working directories opened", "took", time.Since(start))
		s.clearEarlierRecords()
		// The uncommitted and branch changesets need only the open
		// workspaces: they start now, alongside the baseline snapshot,
		// which reads the changed files the tracker already knows of
		// instead of walking the tree again.
		if !s.do(func() { s.opened(entries) }) {
			closeWorkspaces(entries) // disposed meanwhile
			return
		}
		start = time.Now()
		baseline, failed := s.takeBaseline(entries)
		s.log.Debug("baseline taken", "took", time.Since(start))
		// Not delivered only when the session was disposed, which closed
		// the workspaces it held.
		s.do(func() { s.ready(baseline, failed) })
	})
}

// clearEarlierRecords deletes, before anything of a new session is
// served, the records stored under its id: one that was not restored
// belongs to something else (another project once at this path), and
// this session starts clean, without its turns or review flags. Done
// later, it would also delete what clients stored meanwhile (a review
// flag set while the baseline is taken).
func (s *Session) clearEarlierRecords() {
	db := s.m.opts.Store
	if db == nil || s.restored != nil {
		return
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	if s.gone || s.ctx.Err() != nil {
		return
	}
	if err := db.DeleteSession(s.id, protocol.ChangesetScheme+"/"+s.id+"/"); err != nil {
		s.log.Error("cannot clear an earlier session's records", "err", err)
	}
}

// closeWorkspaces releases what the workspaces hold (their watchers).
func closeWorkspaces(entries []*workingDir) {
	for _, e := range entries {
		if e.ws != nil {
			e.ws.Close()
		}
	}
}

// takeBaseline returns the stored baseline of a restored session, or
// snapshots every git workspace now and records the session. It runs off
// the actor, which owns entries by now: it only reads them, and returns in
// failed the error of each workspace to drop (a plain directory that
// cannot be snapshotted has nothing else to serve).
func (s *Session) takeBaseline(entries []*workingDir) (baseline []string, failed []error) {
	baseline = make([]string, len(entries))
	failed = make([]error, len(entries))
	if r := s.restored; r != nil {
		for i := range entries {
			if i < len(r.Workspaces) {
				baseline[i] = r.Workspaces[i].Baseline
			}
		}
		return baseline, failed
	}
	for i, e := range entries {
		if e.ws == nil {
			continue
		}
		t, err := e.ws.Snapshot(s.ctx, false)
		if err != nil && isPlain(e.ws) {
			// A directory without a repository is only its snapshots.
			s.log.Warn("working directory cannot be snapshotted", "dir", e.dir, "err", err)
			failed[i] = err
			continue
		}
		if err != nil {
			s.log.Error("cannot snapshot the session baseline", "dir", e.dir, "err", err)
			continue
		}
		baseline[i] = t
	}
	served := false
	for i, e := range entries {
		served = served || (e.ws != nil && failed[i] == nil)
	}
	if !served {
		// Nothing here can be served (missing or unreadable directories):
		// the session lives until the daemon stops, not beyond.
		s.log.Warn("session not recorded: none of its directories can be served")
		return baseline, failed
	}
	rec := store.Session{ID: s.id, URI: s.uri, Title: s.title, CreatedAt: s.createdAt}
	for i, e := range entries {
		w := store.WorkspaceRecord{Dir: e.dir, Baseline: baseline[i]}
		if id, ok := e.ws.(Identifier); ok && failed[i] == nil {
			w.Repo, w.Head = id.Identity()
		}
		rec.Workspaces = append(rec.Workspaces, w)
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	if db := s.m.opts.Store; db != nil && !s.gone && s.ctx.Err() == nil {
		if err := db.PutSession(rec); err != nil {
			s.log.Error("cannot record the session; it will not survive a restart", "err", err)
		} else {
			s.record = &rec
		}
	}
	return baseline, failed
}

// opened hands the session its workspaces: the catalogue is published and
// the changesets that need no baseline (uncommitted, branch) start. The
// session is ready only once its baseline is taken (ready): an edit made
// after session/ready is then never part of the baseline, and shows in
// the session changeset.
func (s *Session) opened(entries []*workingDir) {
	if s.disposed {
		closeWorkspaces(entries)
		return
	}
	s.workspaces = entries
	s.activateWaiting()
	s.commitSession(protocol.SessionChangesetsChanged{Changesets: s.catalogue()}, nil)
	if len(entries) > 0 {
		s.setWorkspaceInfo(0, func(*workingDirInfo) {})
	}
	s.refreshGitMeta()
	// Served to clients already: what needs the baseline waits for it
	// (awaitStarted, canActivate).
	sum := s.summary()
	s.m.notifyRoot(protocol.NotifySessionAdded, protocol.SessionAddedParams{Channel: protocol.RootURI, Summary: sum})
}

// awaitStarted waits until the session has its baseline. A caller whose
// ctx ends first gets an error with reason sessionStarting: retry.
func (s *Session) awaitStarted(ctx context.Context, what string) error {
	ch, err := query(ctx, s, func() (chan struct{}, error) {
		if s.disposed {
			return nil, protocol.Errorf(protocol.CodeSessionNotFound, "%s: session %s was disposed", what, s.uri)
		}
		if s.started {
			return nil, nil
		}
		c := make(chan struct{})
		s.starting = append(s.starting, c)
		return c, nil
	})
	if err != nil || ch == nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return s.stillStarting(what)
		}
		return err
	}
	select {
	case <-ch:
		return nil
	case <-s.ctx.Done():
		return protocol.Errorf(protocol.CodeSessionNotFound, "%s: session %s was disposed", what, s.uri)
	case <-ctx.Done():
		return s.stillStarting(what)
	}
}

func (s *Session) stillStarting(what string) error {
	return protocol.Errorf(protocol.CodeInvalidRequest, "%s: session %s is still starting", what, s.uri).WithReason(protocol.ReasonSessionStarting)
}

// activateWaiting starts the changesets subscribed while the session was
// starting that can start now.
func (s *Session) activateWaiting() {
	for _, cs := range s.changesets {
		n := cs.ch.Subscribers()
		if n > 0 && !cs.active && s.canActivate(cs) {
			cs.activate(s)
		}
	}
}

// canActivate reports whether cs can be computed yet: every changeset
// needs the workspaces, and all but the uncommitted and branch ones need
// the baseline too.
func (s *Session) canActivate(cs *csChannel) bool {
	if s.workspaces == nil {
		return false
	}
	switch cs.ref.Kind {
	case protocol.KindUncommitted, protocol.KindBranch:
		return true
	}
	return s.started
}

// ready takes the baseline: the session is started, and what waited for
// it goes on.
func (s *Session) ready(baseline []string, failed []error) {
	if s.disposed {
		return
	}
	dropped := false
	for i, err := range failed {
		if err != nil {
			e := s.workspaces[i]
			e.ws.Close()
			e.ws, e.err = nil, err
			dropped = true
		}
	}
	s.baseline = baseline
	s.started = true
	for _, c := range s.starting {
		close(c)
	}
	s.starting = nil
	s.activateWaiting()
	if dropped {
		s.commitSession(protocol.SessionChangesetsChanged{Changesets: s.catalogue()}, nil)
	}
	s.commitSession(protocol.SessionReady{}, nil)
	s.annotationsMayHaveMoved()
}

// catalogue lists the changesets this session publishes.
func (s *Session) catalogue() []protocol.Changeset {
	review := &protocol.ChangesetCapabilities{Review: &struct{}{}}
	entry := func(kind, label, desc string) protocol.Changeset {
		return protocol.Changeset{Label: label, URITemplate: s.templates[kind].String(), Description: desc, ChangeKind: kind, Capabilities: review}
	}
	var out []protocol.Changeset
	if s.hasGit() {
		out = append(out,
			entry(protocol.KindUncommitted, "Uncommitted Changes", "Working tree and index against HEAD"),
			entry(protocol.KindBranch, "Branch Changes", s.branchDescription()),
		)
	}
	if !s.hasSnapshots() {
		return out // nothing can be snapshotted: no changeset can work
	}
	return append(out,
		entry(protocol.KindSession, "Session Changes", "Everything changed since the session started"),
		entry(protocol.KindTurn, "Turn Changes", "What one turn changed"),
		entry(protocol.KindCompareTurns, "Compare Turns", "Differences between the ends of two turns"),
	)
}

// hasGit reports whether any working directory is a git repository; the
// git-only changesets are offered only then.
func (s *Session) hasGit() bool {
	for _, e := range s.workspaces {
		if e.ws != nil && !isPlain(e.ws) {
			return true
		}
	}
	return false
}

// hasSnapshots reports whether any working directory could be opened, git
// or plain: the snapshot changesets (session, turn, compare-turns) need one.
func (s *Session) hasSnapshots() bool {
	for _, e := range s.workspaces {
		if e.ws != nil {
			return true
		}
	}
	return false
}

// commitSession reduces a on the session state and publishes it.
func (s *Session) commitSession(a protocol.Action, origin *protocol.ActionOrigin) {
	next, out := reducer.ApplySession(s.state, a, reducer.Env{})
	if out == reducer.Applied {
		s.state = next
		s.modifiedAt = s.m.opts.Now()
	}
	s.m.publish(s.ch, a, origin)
}

func cloneSessionState(st protocol.SessionState) protocol.SessionState {
	c := st
	c.ActiveClients = slices.Clone(st.ActiveClients)
	c.Chats = slices.Clone(st.Chats)
	c.WorkingDirectories = slices.Clone(st.WorkingDirectories)
	c.Changesets = slices.Clone(st.Changesets)
	c.Customizations = slices.Clone(st.Customizations)
	c.InputNeeded = slices.Clone(st.InputNeeded)
	c.ServerTools = slices.Clone(st.ServerTools)
	return c
}

func (s *Session) attachSession(sub Subscriber, lastSeen int64, done func(Attachment, error)) {
	if !s.do(func() {
		s.refreshGitMeta()
		s.m.attachOwned(s.ch, sub, lastSeen, cloneSessionState(s.state), done)
	}) {
		done(Attachment{}, protocol.Errorf(protocol.CodeSessionNotFound, "subscribe %s: session was disposed", s.uri))
	}
}

// clientSessionActions are the session actions a client may dispatch and
// this host applies.
var clientSessionActions = map[string]bool{
	"session/titleChanged":            true,
	"session/isReadChanged":           true,
	"session/isArchivedChanged":       true,
	"session/configChanged":           true,
	"session/customizationToggled":    true,
	"session/activeClientSet":         true,
	"session/activeClientRemoved":     true,
	"session/mcpServerStartRequested": true,
	"session/mcpServerStopRequested":  true,
}

func (s *Session) dispatchSession(sub Subscriber, a protocol.Action, origin *protocol.ActionOrigin) {
	if s.disposed {
		return
	}
	switch t := a.ActionType(); {
	case t == "session/workingDirectorySet" || t == "session/workingDirectoryRemoved" || t == "session/workingDirectoryReplaced":
		s.m.reject(sub, s.uri, a, origin, "working directories are fixed when a session is created on this server")
		return
	case !clientSessionActions[t]:
		s.m.reject(sub, s.uri, a, origin, fmt.Sprintf("%s is not a client-dispatchable session action", t))
		return
	}
	s.commitSession(a, origin)
	if a.ActionType() == "session/titleChanged" {
		s.m.notifyRoot(protocol.NotifySessionSummaryChanged, protocol.SessionSummaryChangedParams{
			Channel: protocol.RootURI, Session: s.uri, Changes: protocol.Object{"title": s.state.Title, "modifiedAt": formatTime(s.modifiedAt)},
		})
	}
}

// Summary returns the session's catalogue entry.
func (s *Session) Summary(ctx context.Context) (protocol.SessionSummary, error) {
	return query(ctx, s, func() (protocol.SessionSummary, error) { return s.summary(), nil })
}

// updateListed refreshes the entry Listed returns. On the actor.
func (s *Session) updateListed() {
	if s.disposed {
		return
	}
	sum := s.summary()
	s.listed.Store(&sum)
}

// Listed returns the session's catalogue entry as of the end of the
// actor's last batch of work, without waiting for the actor.
func (s *Session) Listed() protocol.SessionSummary {
	sum := *s.listed.Load()
	sum.WorkingDirectories = slices.Clone(sum.WorkingDirectories)
	return sum
}

func (s *Session) summary() protocol.SessionSummary {
	sum := protocol.SessionSummary{
		Resource:           s.uri,
		Provider:           s.state.Provider,
		Title:              s.state.Title,
		Status:             s.state.Status,
		WorkingDirectories: slices.Clone(s.state.WorkingDirectories),
		Project:            s.state.Project,
		CreatedAt:          formatTime(s.createdAt),
		ModifiedAt:         formatTime(s.modifiedAt),
	}
	if c := s.changes(); c != nil {
		sum.Changes = c
	}
	sum.Annotations = s.annotationsSummary()
	return sum
}

func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// dispose clears every changeset for its subscribers, drops all
// subscriptions and stops the actor. It waits for the actor to finish.
func (s *Session) dispose() {
	s.cancel()
	done := make(chan struct{})
	var entries []*workingDir
	if !s.do(func() {
		defer close(done)
		if s.disposed {
			return
		}
		s.disposed = true
		s.stopDrafts()
		entries = s.workspaces
		for _, cs := range s.changesets {
			cs.close(s)
		}
		s.m.opts.Metrics.ChangesetChannels(-len(s.changesets))
		chs := []*hub.Channel{s.ch, s.notes.ch}
		for _, c := range s.chats {
			chs = append(chs, c.ch)
		}
		s.m.hub.DropSubscribers(chs...)
		s.failWaiting()
	}) {
		return
	}
	<-done
	s.mb.close()
	closeWorkspaces(entries)
}

// workingDirInfo is what the session's _meta says about one working
// directory: whether it is a git repository, how it is watched and what
// the engine could not apply.
type workingDirInfo struct {
	Dir           string   `json:"dir"`
	Git           bool     `json:"git"`
	Error         string   `json:"error,omitempty"`
	Watcher       string   `json:"watcher,omitempty"`
	WatcherReason string   `json:"watcherReason,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

// setWorkspaceInfo updates one workspace's entry and republishes the
// session _meta when it changed.
func (s *Session) setWorkspaceInfo(i int, f func(*workingDirInfo)) {
	if s.info == nil {
		s.info = make([]workingDirInfo, len(s.workspaces))
		for j, e := range s.workspaces {
			s.info[j] = workingDirInfo{Dir: FileURI(e.dir), Git: e.ws != nil && !isPlain(e.ws)}
			if e.err != nil {
				s.info[j].Error = e.err.Error()
			}
		}
	}
	before := fmt.Sprint(s.info[i])
	f(&s.info[i])
	if fmt.Sprint(s.info[i]) == before && s.state.Meta != nil {
		return
	}
	s.publishMeta()
}

func (s *Session) publishMeta() {
	raw, _ := json.Marshal(s.info)
	var list []any
	_ = json.Unmarshal(raw, &list)
	meta := protocol.Object{}
	for k, v := range s.state.Meta {
		meta[k] = v
	}
	meta["changesetd"] = protocol.Object{"workspaces": list}
	s.commitSession(protocol.SessionMetaChanged{Meta: meta}, nil)
}

// projectOf is a session's project, {uri, displayName}: its first working
// directory, named by its base name. Clients group their session lists
// by it. nil without directories.
func projectOf(dirs []string) protocol.Object {
	if len(dirs) == 0 {
		return nil
	}
	return protocol.Object{"uri": FileURI(dirs[0]), "displayName": filepath.Base(dirs[0])}
}
