package session

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/hub"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/store"
	"github.com/changesetd/changesetd/uritemplate"
)

// Provider is the agent provider name this host publishes.
const Provider = "changesetd"

// Options configure a Manager. The zero value is usable.
type Options struct {
	Logger        *slog.Logger
	ReplayBuffer  int                                 // envelopes per channel; 0 = DefaultReplayBuffer
	ReplayBytes   int64                               // encoded bytes per channel; 0 = hub.DefaultReplayBytes
	OpenWorkspace func(dir string) (Workspace, error) // nil: sessions have no changeset data
	Now           func() time.Time                    // nil = time.Now
	Version       string                              // server version for serverInfo
	Store         Store                               // nil: nothing persists
	Metrics       Metrics                             // nil: nothing is counted
	// AllowRoots confines createSession's working directories: each must
	// lie inside one of them once symbolic links are resolved. Empty: no
	// confinement.
	AllowRoots []string
	// ReadFile reads the file at path (the file:// URI uri, for errors)
	// for resourceRead and for mapping annotations onto the working tree:
	// a regular file with one link inside the session directory dirOf
	// names for it (PermissionDenied otherwise), read through os.Root; a
	// symbolic link reads as its target. The daemon passes
	// source.ReadFile; nil reads no file.
	ReadFile func(uri, path string, limit int64, dirOf func(path string) (dir, rel string, ok bool)) ([]byte, error)
	// ResolveFile stats, and ListDir lists, the file or directory at path
	// for resourceResolve and resourceList, under ReadFile's confinement;
	// dirOf also names a session directory itself (rel "."). The daemon
	// passes source.ResolveFile and source.ListDir; nil serves neither.
	ResolveFile func(uri, path string, follow bool, dirOf func(path string) (dir, rel string, ok bool)) (protocol.ResourceResolveResult, error)
	ListDir     func(uri, path string, dirOf func(path string) (dir, rel string, ok bool)) ([]protocol.DirectoryEntry, error)
	// AfterDispose, if set, runs on its own goroutine after a session was
	// disposed and its record deleted (the daemon collects its snapshots).
	AfterDispose func()
	// SeqBase is the serverSeq this run starts after. serverSeq must never
	// be reused, also across restarts, or a client's reconnect cursor from
	// an earlier run would be taken for one of this run; the daemon passes
	// a clock reading. Cursors below it are answered with snapshots.
	SeqBase int64
	// TurnWindow is how many completed turns a restored chat holds, and
	// fetchTurns loads at a time; 0 = DefaultTurnWindow.
	TurnWindow int
	// DefaultBase is the base of every branch changeset whose session
	// chose none (the daemon's --base); "" lets git say (branchbase.go).
	DefaultBase string
	// IdleLinger is how long a changeset that lost its last subscriber
	// stays watched and current before it stops: a client that comes
	// back within it (a page reloaded, an editor window reopened) gets
	// the current state at once instead of a recomputing one. 0: it
	// stops at once.
	IdleLinger time.Duration
	// DraftTimeout is how long a draft stands in for its file when no
	// other draft of it comes and the file is not written; 0 =
	// DefaultDraftTimeout.
	DraftTimeout time.Duration
}

// Manager owns the root channel and every session.
type Manager struct {
	opts Options
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc

	// hub sequences every commit, snapshot registration and root
	// notification (package hub).
	hub       *hub.Hub
	root      *hub.Channel
	rootMu    sync.Mutex // guards rootState
	rootState protocol.RootState

	mu       sync.Mutex
	sessions map[string]*Session // by session URI
	// disposing holds a tombstone per session being disposed, closed once
	// its record is deleted and root subscribers were told: a session
	// created with the same id waits for it, so the old dispose cannot
	// delete the new session's record or announce its removal after the
	// new one was announced.
	disposing map[string]chan struct{}
	// repoLocks serialise the operations that write a working tree or
	// an index, one FIFO lock per repository (repolock.go).
	repoLocks repoLocks

	// inflight counts operations and turn boundaries in progress, which a
	// graceful shutdown lets finish. Add happens under mu and only while
	// draining is false, so it never races Drain's Wait.
	inflight sync.WaitGroup
	draining bool // guarded by mu
	// wg counts every goroutine the Manager owns (see spawn); Close waits
	// for all of them.
	wg sync.WaitGroup

	// wholePatch is held while a whole-changeset patch is computed: each
	// holds up to its limit in patches and the diff budget in sides, so
	// they take turns rather than multiply that by their number.
	wholePatch chan struct{}
}

// enter registers an operation or turn boundary with Drain; it is refused
// once a shutdown drains. A nil error must be paired with m.inflight.Done.
func (m *Manager) enter(what string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.draining || m.ctx.Err() != nil {
		return protocol.Errorf(protocol.CodeInternalError, "%s: the server is shutting down", what)
	}
	m.inflight.Add(1)
	return nil
}

// spawn runs f on a goroutine the Manager owns: Close waits for it, and a
// panic in it is logged with its stack instead of ending the process.
func (m *Manager) spawn(what string, f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				m.log.Error("goroutine panicked", "what", what, "panic", p, "stack", string(debug.Stack()))
			}
		}()
		f()
	}()
}

// NewManager returns a Manager with no sessions.
func NewManager(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ReplayBuffer <= 0 {
		opts.ReplayBuffer = DefaultReplayBuffer
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = noMetrics{}
	}
	ctx, stop := context.WithCancel(context.Background())
	h := hub.New(opts.SeqBase, opts.ReplayBuffer, opts.ReplayBytes)
	m := &Manager{
		opts:     opts,
		log:      opts.Logger.With("component", "session"),
		ctx:      ctx,
		stop:     stop,
		hub:      h,
		root:     h.NewChannel(protocol.RootURI),
		sessions: map[string]*Session{},

		wholePatch: make(chan struct{}, 1),
	}
	m.rootState = protocol.RootState{
		Agents: []protocol.AgentInfo{{
			Provider: Provider,
			// The name a client lists the agent under (VS Code also offers
			// it in its new-session picker): it says what this host is,
			// one that reviews agents' changes and runs no prompts.
			DisplayName: "changesetd: review changes (read-only)",
			Description: "Live changesets of the session's working directories, for review; it records AI coding agents' turns and runs no prompts",
			Models:      []protocol.Object{},
		}},
		ActiveSessions: protocol.Ptr(0),
	}
	return m
}

// Seq returns the current global serverSeq.
func (m *Manager) Seq() int64 { return m.hub.Seq() }

// newChannel returns a channel sequenced by the Manager's hub.
func (m *Manager) newChannel(uri string) *hub.Channel { return m.hub.NewChannel(uri) }

// publish counts an action and publishes it on c (hub.Channel.Publish).
func (m *Manager) publish(c *hub.Channel, a protocol.Action, origin *protocol.ActionOrigin) protocol.ActionEnvelope {
	m.opts.Metrics.Action(a.ActionType())
	return c.Publish(a, origin)
}

// publishAll counts actions and publishes them on c in one hold of the
// sequencing lock (hub.Channel.PublishAll).
func (m *Manager) publishAll(c *hub.Channel, actions []protocol.Action) {
	for _, a := range actions {
		m.opts.Metrics.Action(a.ActionType())
	}
	c.PublishAll(actions)
}

// reject counts a rejection and sends it to the dispatching subscriber
// only (hub.Hub.Reject).
func (m *Manager) reject(sub Subscriber, channelURI string, a protocol.Action, origin *protocol.ActionOrigin, reason string) {
	m.opts.Metrics.Rejected()
	m.hub.Reject(sub, channelURI, a, origin, reason)
}

// attach registers sub on c (hub.Channel.Attach).
func (m *Manager) attach(c *hub.Channel, sub Subscriber, lastSeen int64, state func() any, done func(Attachment, error)) {
	c.Attach(sub, lastSeen, state, done)
}

// attachOwned registers sub on a channel whose state only its owner (a
// session's actor, running this) changes, with snap, the state taken by
// the owner just before: nothing can be published on the channel between
// the two, so the copy need not be made under the sequencing lock, where
// every publish would wait for it.
func (m *Manager) attachOwned(c *hub.Channel, sub Subscriber, lastSeen int64, snap any, done func(Attachment, error)) {
	c.Attach(sub, lastSeen, func() any { return snap }, done)
}

func (m *Manager) detachChannel(c *hub.Channel, sub Subscriber) { c.Detach(sub) }

// notifyRoot sends a protocol notification to root subscribers.
func (m *Manager) notifyRoot(method string, params any) { m.root.Notify(method, params) }

// Attach subscribes sub to the channel uri, or re-attaches it with replay
// after lastSeen when lastSeen >= 0. done is called exactly once, on the
// channel owner's goroutine, with the registration already in effect; it
// must not block. Unknown channels fail with a protocol error.
func (m *Manager) Attach(sub Subscriber, uri string, lastSeen int64, done func(Attachment, error)) {
	switch protocol.ChannelOf(uri) {
	case protocol.ChannelRoot:
		m.attach(m.root, sub, lastSeen, func() any { return m.RootState() }, done)
	case protocol.ChannelSession:
		s, ok := m.Session(uri)
		if !ok {
			done(Attachment{}, fmt.Errorf("subscribe %s: %w", uri, protocol.Errorf(protocol.CodeSessionNotFound, "session %s does not exist", uri)))
			return
		}
		s.attachSession(sub, lastSeen, done)
	case protocol.ChannelAnnotations:
		s, ok := m.Session(protocol.SessionOfAnnotations(uri))
		if !ok {
			done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: session %s does not exist", uri, protocol.SessionOfAnnotations(uri)))
			return
		}
		s.attachAnnotations(sub, lastSeen, done)
	case protocol.ChannelChat:
		sessionURI, key, ok := splitChatURI(uri)
		var s *Session
		if ok {
			s, ok = m.Session(sessionURI)
		}
		if !ok {
			done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: no such chat; a session lists its chats in SessionState.chats (ahp-chat://<chat id>/<base64url(session URI)>)", uri))
			return
		}
		s.attachChat(sub, uri, key, lastSeen, done)
	case protocol.ChannelChangeset:
		ref, err := uritemplate.ParseChangesetURI(uri)
		if err != nil {
			done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: %v", uri, err))
			return
		}
		s, ok := m.Session(protocol.SessionScheme + "/" + ref.SessionID)
		if !ok {
			done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: session %s does not exist", uri, ref.SessionID))
			return
		}
		s.attachChangeset(sub, uri, ref, lastSeen, done)
	default:
		done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: unknown channel (this server serves ahp-root://, ahp-session: and ahp-changeset: channels)", uri))
	}
}

// Detach removes sub from the channel uri; unknown channels are ignored.
func (m *Manager) Detach(sub Subscriber, uri string) {
	switch protocol.ChannelOf(uri) {
	case protocol.ChannelRoot:
		m.detachChannel(m.root, sub)
	case protocol.ChannelSession:
		if s, ok := m.Session(uri); ok {
			s.do(func() { m.detachChannel(s.ch, sub) })
		}
	case protocol.ChannelAnnotations:
		if s, ok := m.Session(protocol.SessionOfAnnotations(uri)); ok {
			s.do(func() { s.detachAnnotations(sub) })
		}
	case protocol.ChannelChat:
		if sessionURI, key, ok := splitChatURI(uri); ok {
			if s, ok := m.Session(sessionURI); ok {
				s.do(func() { s.detachChat(sub, uri, key) })
			}
		}
	case protocol.ChannelChangeset:
		if ref, err := uritemplate.ParseChangesetURI(uri); err == nil {
			if s, ok := m.Session(protocol.SessionScheme + "/" + ref.SessionID); ok {
				s.do(func() { s.detachChangeset(sub, uri) })
			}
		}
	}
}

// Dispatch applies a client-dispatched action. Actions on channels that do
// not exist are dropped silently, as the protocol requires; invalid ones
// are rejected to the sender.
func (m *Manager) Dispatch(sub Subscriber, channelURI string, clientSeq int64, a protocol.Action) {
	origin := &protocol.ActionOrigin{ClientID: sub.ClientID(), ClientSeq: clientSeq}
	a = localizeAction(a)
	switch protocol.ChannelOf(channelURI) {
	case protocol.ChannelSession:
		if s, ok := m.Session(channelURI); ok {
			s.do(func() { s.dispatchSession(sub, a, origin) })
		}
	case protocol.ChannelAnnotations:
		if s, ok := m.Session(protocol.SessionOfAnnotations(channelURI)); ok {
			s.do(func() { s.dispatchAnnotations(sub, a, origin) })
		}
	case protocol.ChannelChangeset:
		ref, err := uritemplate.ParseChangesetURI(channelURI)
		if err != nil {
			return
		}
		if s, ok := m.Session(protocol.SessionScheme + "/" + ref.SessionID); ok {
			s.do(func() { s.dispatchChangeset(sub, channelURI, a, origin) })
		}
	case protocol.ChannelRoot:
		if a.ActionType() == protocol.ActionRootConfigChanged {
			// A client's settings (VS Code forwards its own after every
			// connect); this server has none to change, so there is
			// nothing to apply and nothing to refuse.
			return
		}
		m.reject(sub, channelURI, a, origin, fmt.Sprintf("%s cannot be dispatched on the root channel of this server", a.ActionType()))
	}
}

// RootState returns a copy of the root state.
func (m *Manager) RootState() protocol.RootState {
	m.rootMu.Lock()
	defer m.rootMu.Unlock()
	st := m.rootState
	st.Agents = slices.Clone(st.Agents)
	return st
}

// Session returns the session with the given URI.
func (m *Manager) Session(uri string) (*Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[uri]
	return s, ok
}

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9._~-]{1,128}$`)

// CreateParams describe a new session.
type CreateParams struct {
	URI                string   // ahp-session:/<id>
	Provider           string   // empty or Provider
	WorkingDirectories []string // file:// URIs of existing directories
	Title              string
}

// Create starts a session actor. The session starts in lifecycle
// "creating", opens its workspaces asynchronously and then becomes ready.
func (m *Manager) Create(p CreateParams) (*Session, error) {
	id, ok := strings.CutPrefix(p.URI, protocol.SessionScheme+"/")
	if !ok || !sessionIDPattern.MatchString(id) {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "createSession: channel %q must be ahp-session:/<id> with an id of letters, digits and ._~-", p.URI)
	}
	if p.Provider != "" && p.Provider != Provider {
		return nil, protocol.Errorf(protocol.CodeProviderNotFound, "createSession: provider %q is not offered; this server offers %q", p.Provider, Provider)
	}
	dirs := make([]string, 0, len(p.WorkingDirectories))
	for _, d := range p.WorkingDirectories {
		path, err := DirFromURI(d)
		if err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "createSession: %v", err)
		}
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		if !m.allowedRoot(path) {
			return nil, protocol.Errorf(protocol.CodePermissionDenied, "createSession: %s is outside the directories this daemon may serve (see --allow-root)", path)
		}
		dirs = append(dirs, path)
	}
	// A dispose of this id still under way ends first: it marks the
	// record that recovery looks for.
	m.awaitTomb(p.URI)
	var s *Session
	if rec, turns := m.recoverDisposed(id, dirs); rec != nil {
		// Disposed a little while ago on the same directories: its turns,
		// annotations and review flags come back.
		s = m.restored(*rec, turns, dirs)
		m.log.Info("session recovered from its dispose", "session", p.URI)
	} else {
		s = newSession(m, id, p.URI, dirs, p.Title, m.opts.Now())
	}
	if err := m.add(s); err != nil {
		return nil, fmt.Errorf("createSession: %w", err)
	}
	return s, nil
}

// awaitTomb waits until no dispose of the session uri is under way.
func (m *Manager) awaitTomb(uri string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.awaitTombLocked(uri)
}

// awaitTombLocked is awaitTomb; m.mu must be held (it is released while
// waiting).
func (m *Manager) awaitTombLocked(uri string) {
	for m.disposing[uri] != nil && m.ctx.Err() == nil {
		tomb := m.disposing[uri]
		m.mu.Unlock()
		<-tomb
		m.mu.Lock()
	}
}

// add registers a new session and starts its actor.
func (m *Manager) add(s *Session) error {
	s.updateListed() // listable from the moment it is registered; no actor runs yet
	m.mu.Lock()
	m.awaitTombLocked(s.uri)
	if m.ctx.Err() != nil {
		m.mu.Unlock()
		return protocol.Errorf(protocol.CodeInternalError, "the server is shutting down")
	}
	if _, exists := m.sessions[s.uri]; exists {
		m.mu.Unlock()
		return protocol.Errorf(protocol.CodeSessionAlreadyExists, "session %s already exists", s.uri)
	}
	m.sessions[s.uri] = s
	n := len(m.sessions)
	m.mu.Unlock()
	m.rootMu.Lock()
	m.rootState.ActiveSessions = protocol.Ptr(n)
	m.rootMu.Unlock()
	s.start()
	return nil
}

// Dispose tears a session down: every changeset subscriber gets
// changeset/cleared, subscriptions are dropped and root subscribers get
// root/sessionRemoved.
func (m *Manager) Dispose(uri string) error {
	m.mu.Lock()
	s, ok := m.sessions[uri]
	tomb := make(chan struct{})
	if ok {
		delete(m.sessions, uri)
		if m.disposing == nil {
			m.disposing = map[string]chan struct{}{}
		}
		m.disposing[uri] = tomb
	}
	n := len(m.sessions)
	m.mu.Unlock()
	if !ok {
		return protocol.Errorf(protocol.CodeSessionNotFound, "disposeSession: session %s does not exist", uri)
	}
	defer func() {
		m.mu.Lock()
		delete(m.disposing, uri)
		m.mu.Unlock()
		close(tomb)
	}()
	s.dispose()
	// Under recMu, so that a baseline still being taken cannot write the
	// record back after it is deleted.
	s.recMu.Lock()
	s.gone = true
	if db := m.opts.Store; db != nil {
		if rec := s.record; rec != nil {
			// Kept for DisposedRetention: creating the session again
			// brings back its turns, annotations and review flags.
			kept := *rec
			kept.DisposedAt = m.opts.Now().UTC()
			if err := db.PutSession(kept); err != nil {
				m.log.Error("cannot mark the session record disposed", "session", uri, "err", err)
			}
		} else if err := db.DeleteSession(s.id, protocol.ChangesetScheme+"/"+s.id+"/"); err != nil {
			m.log.Error("cannot delete the session record", "session", uri, "err", err)
		}
	}
	s.recMu.Unlock()
	m.PurgeDisposed()
	m.rootMu.Lock()
	m.rootState.ActiveSessions = protocol.Ptr(n)
	m.rootMu.Unlock()
	m.notifyRoot(protocol.NotifySessionRemoved, protocol.SessionRemovedParams{Channel: protocol.RootURI, Session: uri})
	if f := m.opts.AfterDispose; f != nil {
		m.spawn("after dispose", f)
	}
	return nil
}

// List returns the summaries of all sessions, newest-modified first. It
// waits for no session's actor: each entry is as of the end of that
// actor's last batch of work.
func (m *Manager) List(ctx context.Context) ([]protocol.SessionSummary, error) {
	m.mu.Lock()
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	out := make([]protocol.SessionSummary, 0, len(all))
	for _, s := range all {
		out = append(out, s.Listed())
	}
	slices.SortFunc(out, func(a, b protocol.SessionSummary) int {
		if c := strings.Compare(b.ModifiedAt, a.ModifiedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Resource, b.Resource)
	})
	return out, nil
}

// Close disposes every session and waits for their actors to stop.
func (m *Manager) Close() {
	m.mu.Lock()
	m.stop()
	all := m.sessions
	m.sessions = map[string]*Session{}
	m.mu.Unlock()
	for _, s := range all {
		s.dispose()
	}
	m.wg.Wait()
}

// DirFromURI turns a file:// URI into a clean absolute directory path that
// exists (confine.DirFromURI).
func DirFromURI(uri string) (string, error) { return confine.DirFromURI(uri) }

// FileURI returns the file:// URI of an absolute path.
func FileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

func (m *Manager) loadReviews(uri string) map[string]string {
	if m.opts.Store == nil {
		return map[string]string{}
	}
	r, err := m.opts.Store.Reviews(uri)
	if err != nil {
		m.log.Error("cannot load review state", "changeset", uri, "err", err)
		return map[string]string{}
	}
	return r
}

func (m *Manager) saveReviews(uri string, r map[string]string) error {
	if m.opts.Store == nil {
		return nil
	}
	return m.opts.Store.PutReviews(uri, r)
}

// Restore recreates a session from its stored record and turns, keeping
// its id, working directories, baseline and turns.
func (m *Manager) Restore(rec store.Session, turns []store.Turn) (*Session, error) {
	dirs := make([]string, len(rec.Workspaces))
	for i, w := range rec.Workspaces {
		dirs[i] = w.Dir
	}
	s := m.restored(rec, turns, dirs)
	if err := m.add(s); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return s, nil
}

// restored builds a session from its stored record and turns.
func (m *Manager) restored(rec store.Session, turns []store.Turn, dirs []string) *Session {
	s := newSession(m, rec.ID, rec.URI, dirs, rec.Title, rec.CreatedAt)
	s.restored, s.record = &rec, &rec
	s.restoreTurns(turns)
	s.windowTurns()
	s.loadAnnotations()
	s.loadEdits()
	s.loadEvidence()
	s.loadBranchBase()
	s.state.Chats = s.state.Chats[:0]
	for _, c := range s.chats {
		s.state.Chats = append(s.state.Chats, c.summary())
	}
	return s
}

// DisposedRetention is how long a disposed session's turns, annotations
// and review flags are kept: creating the session again (same id, same
// working directories) within it brings them back. A week covers a
// dispose by mistake noticed after a weekend.
const DisposedRetention = 7 * 24 * time.Hour

// recoverDisposed returns the record and turns of session id when it was
// disposed less than DisposedRetention ago on the same working
// directories, marked live again in the store.
func (m *Manager) recoverDisposed(id string, dirs []string) (*store.Session, []store.Turn) {
	db := m.opts.Store
	if db == nil {
		return nil, nil
	}
	recs, err := db.Sessions()
	if err != nil {
		m.log.Error("cannot look for a disposed session to recover", "session", id, "err", err)
		return nil, nil
	}
	for _, rec := range recs {
		if rec.ID != id || rec.DisposedAt.IsZero() || m.opts.Now().Sub(rec.DisposedAt) > DisposedRetention || len(rec.Workspaces) != len(dirs) {
			continue
		}
		same := true
		for i, w := range rec.Workspaces {
			same = same && w.Dir == dirs[i]
		}
		if !same {
			continue
		}
		turns, err := db.Turns(id)
		if err != nil {
			m.log.Error("cannot read a disposed session's turns; it starts anew", "session", id, "err", err)
			return nil, nil
		}
		rec.DisposedAt = time.Time{}
		if err := db.PutSession(rec); err != nil {
			m.log.Error("cannot record the recovered session", "session", id, "err", err)
		}
		return &rec, turns
	}
	return nil, nil
}

// PurgeDisposed deletes what is kept of sessions disposed more than
// DisposedRetention ago.
func (m *Manager) PurgeDisposed() {
	db := m.opts.Store
	if db == nil {
		return
	}
	recs, err := db.Sessions()
	if err != nil {
		m.log.Error("cannot purge disposed sessions", "err", err)
		return
	}
	for _, rec := range recs {
		if rec.DisposedAt.IsZero() || m.opts.Now().Sub(rec.DisposedAt) <= DisposedRetention {
			continue
		}
		m.log.Info("purging a session disposed long ago", "session", rec.URI, "disposedAt", rec.DisposedAt)
		if err := db.DeleteSession(rec.ID, protocol.ChangesetScheme+"/"+rec.ID+"/"); err != nil {
			m.log.Error("cannot purge a disposed session", "session", rec.URI, "err", err)
		}
	}
}

func (m *Manager) allowedRoot(path string) bool {
	if len(m.opts.AllowRoots) == 0 {
		return true
	}
	for _, r := range m.opts.AllowRoots {
		if confine.Contains(r, path) {
			return true
		}
	}
	return false
}

// Drain refuses new operations and turn boundaries and waits for those in
// progress to finish, or for ctx to end.
func (m *Manager) Drain(ctx context.Context) error {
	m.mu.Lock()
	m.draining = true
	m.mu.Unlock()
	m.log.Info("draining: operations and turn boundaries in progress finish, new ones are refused")
	done := make(chan struct{})
	go func() { m.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
