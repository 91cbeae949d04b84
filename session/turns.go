package session

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/changesetd/changesetd/hub"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/changesetd/changesetd/store"
)

// BaselineTurnID names the session's starting point in compare-turns
// templates: compare/baseline/<turn> is everything up to the end of <turn>.
const BaselineTurnID = "baseline"

// turn is one agent turn: snapshots of every workspace at its start and,
// once it ended, at its end. The slices are indexed like
// Session.workspaces.
type turn struct {
	seq       uint64
	id        string
	chat      string // the key of the chat it belongs to; "" = the default chat
	message   string
	startedAt time.Time
	endedAt   time.Time
	start     []string
	end       []string
}

func (t *turn) running() bool { return t.end == nil }

// endOf is the tree of workspace i at the turn's end, or "" (the live
// working tree) while it runs.
func (t *turn) endOf(i int) string {
	if t.end == nil || i >= len(t.end) {
		return ""
	}
	return t.end[i]
}

func (t *turn) record() store.Turn {
	return store.Turn{Seq: t.seq, ID: t.id, Chat: t.chat, Message: t.message, StartedAt: t.startedAt, EndedAt: t.endedAt, Start: t.start, End: t.end}
}

func (s *Session) turnByID(id string) *turn {
	for _, t := range s.turns {
		if t.id == id {
			return t
		}
	}
	return nil
}

// activeTurn is the latest running turn of any chat, or nil.
func (s *Session) activeTurn() *turn {
	for i := len(s.turns) - 1; i >= 0; i-- {
		if s.turns[i].running() {
			return s.turns[i]
		}
	}
	return nil
}

// activeTurnIn is the running turn of the chat with key, or nil.
func (s *Session) activeTurnIn(key string) *turn {
	for i := len(s.turns) - 1; i >= 0; i-- {
		if t := s.turns[i]; t.chat == key && t.running() {
			return t
		}
	}
	return nil
}

func (s *Session) baselineOf(i int) string {
	if i < len(s.baseline) {
		return s.baseline[i]
	}
	return ""
}

// endpoint resolves a compare-turns id to the tree of workspace i: the
// baseline, a turn's end, or "" for a running turn (the live tree).
func (s *Session) endpoint(id string, i int) (string, error) {
	if id == BaselineTurnID {
		return s.baselineOf(i), nil
	}
	t := s.turnByID(id)
	if t == nil {
		return "", fmt.Errorf("turn %q does not exist in session %s%s", id, s.uri, s.knownTurns())
	}
	return t.endOf(i), nil
}

// knownTurns lists the turn ids for error messages.
func (s *Session) knownTurns() string {
	if len(s.turns) == 0 {
		return " (it has no turns yet)"
	}
	ids := make([]string, 0, len(s.turns))
	for _, t := range s.turns {
		ids = append(ids, strconv.Quote(t.id))
	}
	if len(ids) > 10 {
		ids = append(ids[:10], "…")
	}
	return " (known: " + strings.Join(ids, ", ") + ", and " + strconv.Quote(BaselineTurnID) + " in compare-turns)"
}

// chat is one agent's conversation as far as this server knows it: the
// turns it marked. Every session has a default chat,
// ahp-chat://default/<base64url(session URI)>, for turns marked without
// naming an agent; each agent session that names itself (a Claude Code
// session_id, say) gets its own chat, ahp-chat://<key>/<base64url(session
// URI)>, so that several agents working in one directory each see their
// own turns, and one agent's turn end does not end another's turn. The
// earlier shapes, ahp-chat:/<session id> and ahp-chat:/<session id>/<key>,
// are still accepted on input. Turn ids stay unique across the session's
// chats, so the turn and compare-turns changesets name turns alone.
type chat struct {
	key   string
	state protocol.ChatState
	ch    *hub.Channel
}

func newChat(h *hub.Hub, sessionID, key string, now time.Time) *chat {
	uri := chatURIOf(sessionID, key)
	title := "Agent turns"
	if key != "" {
		title = "Agent " + key
		if len(key) > 8 {
			title = "Agent " + key[:8]
		}
	}
	return &chat{
		key: key,
		// Read-only: turns are recorded here as agents mark them; no
		// client sends messages to this server's chats.
		state: protocol.ChatState{Resource: uri, Title: title, Status: protocol.SessionIdle, ModifiedAt: formatTime(now), Interactivity: protocol.ChatReadOnly, Turns: []protocol.Turn{}},
		ch:    h.NewChannel(uri),
	}
}

// chatURIOf is the URI of the chat with key ("" for the default chat).
func chatURIOf(sessionID, key string) string {
	return protocol.ChatURI(protocol.SessionScheme+"/"+sessionID, chatIDOf(key))
}

// chatIDOf is the chat id in the URI of the chat with key, and keyOfChat
// its inverse: the default chat has key "" and id "default".
func chatIDOf(key string) string {
	if key == "" {
		return protocol.DefaultChatID
	}
	return key
}

func keyOfChat(id string) string {
	if id == protocol.DefaultChatID {
		return ""
	}
	return id
}

// splitChatURI returns the session URI and chat key of a chat URI in
// either shape; ok is false when it is neither.
func splitChatURI(uri string) (sessionURI, key string, ok bool) {
	sessionURI, id, ok := protocol.ParseChatURI(uri)
	return sessionURI, keyOfChat(id), ok
}

// chatURI is the session's default chat.
func (s *Session) chatURI() string { return chatURIOf(s.id, "") }

// chatByKey returns the chat with key, or nil.
func (s *Session) chatByKey(key string) *chat {
	for _, c := range s.chats {
		if c.key == key {
			return c
		}
	}
	return nil
}

// chatFor returns the chat with key, adding it when it is new. On the actor
// (or before the session starts).
func (s *Session) chatFor(key string, publish bool) *chat {
	key = keyOfChat(key) // a chat recorded as "default" is the default chat
	if c := s.chatByKey(key); c != nil {
		return c
	}
	c := newChat(s.m.hub, s.id, key, s.m.opts.Now())
	s.chats = append(s.chats, c)
	if publish {
		s.commitSession(protocol.SessionChatAdded{Summary: c.summary()}, nil)
	} else {
		s.state.Chats = append(s.state.Chats, c.summary())
	}
	return c
}

// turnTarget resolves the channel of a turn command: a session, or one of
// its chats (its default chat, or an agent's, ahp-chat:/<session id>/<key>).
func (m *Manager) turnTarget(method, channel string) (*Session, string, error) {
	sessionURI, key := channel, ""
	if strings.HasPrefix(channel, protocol.ChatScheme) {
		var ok bool
		if sessionURI, key, ok = splitChatURI(channel); !ok {
			return nil, "", protocol.Errorf(protocol.CodeInvalidParams, "%s: %s is not a chat URI; a session lists its chats in SessionState.chats", method, channel)
		}
		if key != "" && !turnIDPattern.MatchString(key) {
			return nil, "", protocol.Errorf(protocol.CodeInvalidParams, "%s: chat %s: the agent key after the session id must be 1-128 letters, digits or ._~-", method, channel)
		}
	}
	s, ok := m.Session(sessionURI)
	if !ok {
		return nil, "", protocol.Errorf(protocol.CodeSessionNotFound, "%s: session %s does not exist", method, sessionURI)
	}
	return s, key, nil
}

// TurnInfo is what a turn boundary reports back.
type TurnInfo struct {
	ID       string `json:"turnId"`
	Duration int64  `json:"duration,omitempty"` // ms, at the end
}

var turnIDPattern = sessionIDPattern

// TurnStart snapshots every working directory and starts a turn in the
// chat that channel names (a session URI names its default chat). A turn
// of that chat still running is ended first, at the same moment; turns of
// other chats go on. The turn is durable before TurnStart returns.
func (m *Manager) TurnStart(ctx context.Context, channel, turnID, message string) (TurnInfo, error) {
	s, key, err := m.turnTarget("turnStart", channel)
	if err != nil {
		return TurnInfo{}, err
	}
	sessionURI := s.uri
	if turnID != "" && (!turnIDPattern.MatchString(turnID) || turnID == BaselineTurnID) {
		return TurnInfo{}, protocol.Errorf(protocol.CodeInvalidParams, "turnStart: turn id %q must be 1-128 letters, digits or ._~- and not %q", turnID, BaselineTurnID)
	}
	if err := m.enter("turnStart"); err != nil {
		return TurnInfo{}, err
	}
	defer m.inflight.Done()
	if err := s.awaitStarted(ctx, "turnStart"); err != nil {
		return TurnInfo{}, err
	}
	s.boundaryMu.Lock()
	defer s.boundaryMu.Unlock()
	type prep struct {
		wss    []Workspace
		seq    uint64
		active *turn
	}
	p, err := query(ctx, s, func() (prep, error) {
		if turnID != "" && s.turnByID(turnID) != nil {
			return prep{}, protocol.Errorf(protocol.CodeInvalidParams, "turnStart: turn %q already exists in session %s", turnID, sessionURI)
		}
		var seq uint64 = 1
		if n := len(s.turns); n > 0 {
			seq = s.turns[n-1].seq + 1
		}
		return prep{wss: s.workspaceList(), seq: seq, active: s.activeTurnIn(key)}, nil
	})
	if err != nil {
		return TurnInfo{}, err
	}
	if !slices.ContainsFunc(p.wss, func(w Workspace) bool { return w != nil }) {
		return TurnInfo{}, protocol.Errorf(protocol.CodeInvalidRequest, "turnStart: no working directory of session %s can be snapshotted (missing or unreadable); turns need one", sessionURI)
	}
	start := time.Now()
	trees, err := snapshotAll(ctx, p.wss)
	if err != nil {
		return TurnInfo{}, fmt.Errorf("turnStart: snapshot: %w", err)
	}
	now := m.opts.Now()
	if p.active != nil {
		if _, err := s.finishTurn(ctx, p.active, trees, now); err != nil {
			return TurnInfo{}, err
		}
	}
	if turnID == "" {
		turnID = "turn-" + strconv.FormatUint(p.seq, 10)
		for s.hasTurnID(ctx, turnID) {
			turnID += "x"
		}
	}
	t := &turn{seq: p.seq, id: turnID, chat: key, message: message, startedAt: now, start: trees}
	if err := m.saveTurn(s.id, t); err != nil {
		return TurnInfo{}, fmt.Errorf("turnStart: %w", err)
	}
	m.opts.Metrics.TurnBoundary("start", time.Since(start))
	if _, err := command(ctx, s, func() (struct{}, error) { s.applyTurnStart(t); return struct{}{}, nil }); err != nil {
		return TurnInfo{}, err
	}
	return TurnInfo{ID: t.id}, nil
}

func (s *Session) hasTurnID(ctx context.Context, id string) bool {
	ok, _ := query(ctx, s, func() (bool, error) { return s.turnByID(id) != nil, nil })
	return ok
}

// TurnEnd snapshots every working directory and ends the running turn of
// the chat that channel names (which must be turnID when it is given). The
// end is durable before TurnEnd returns.
func (m *Manager) TurnEnd(ctx context.Context, channel, turnID string) (TurnInfo, error) {
	s, key, err := m.turnTarget("turnEnd", channel)
	if err != nil {
		return TurnInfo{}, err
	}
	if err := m.enter("turnEnd"); err != nil {
		return TurnInfo{}, err
	}
	defer m.inflight.Done()
	s.boundaryMu.Lock()
	defer s.boundaryMu.Unlock()
	type prep struct {
		wss    []Workspace
		active *turn
	}
	p, err := query(ctx, s, func() (prep, error) {
		a := s.activeTurnIn(key)
		switch {
		case a == nil && turnID != "" && s.turnByID(turnID) != nil:
			return prep{}, protocol.Errorf(protocol.CodeInvalidParams, "turnEnd: turn %q has already ended", turnID)
		case a == nil:
			return prep{}, protocol.Errorf(protocol.CodeNotFound, "turnEnd: no turn is running in %s", channel)
		case turnID != "" && a.id != turnID:
			return prep{}, protocol.Errorf(protocol.CodeNotFound, "turnEnd: turn %q is not running in %s (running: %q)", turnID, channel, a.id)
		}
		return prep{wss: s.workspaceList(), active: a}, nil
	})
	if err != nil {
		return TurnInfo{}, err
	}
	start := time.Now()
	trees, err := snapshotAll(ctx, p.wss)
	if err != nil {
		return TurnInfo{}, fmt.Errorf("turnEnd: snapshot: %w", err)
	}
	info, err := s.finishTurn(ctx, p.active, trees, m.opts.Now())
	m.opts.Metrics.TurnBoundary("end", time.Since(start))
	return info, err
}

// finishTurn records the end of t and applies it. s.boundaryMu must be held.
func (s *Session) finishTurn(ctx context.Context, t *turn, trees []string, now time.Time) (TurnInfo, error) {
	ended := *t
	ended.end, ended.endedAt = trees, now
	if err := s.m.saveTurn(s.id, &ended); err != nil {
		return TurnInfo{}, fmt.Errorf("turnEnd: %w", err)
	}
	dur := max(now.Sub(t.startedAt).Milliseconds(), 0)
	_, err := command(ctx, s, func() (struct{}, error) {
		s.applyTurnEnd(t.id, trees, now, dur)
		return struct{}{}, nil
	})
	return TurnInfo{ID: t.id, Duration: dur}, err
}

func (m *Manager) saveTurn(sessionID string, t *turn) error {
	if m.opts.Store == nil {
		return nil
	}
	return m.opts.Store.PutTurn(sessionID, t.record())
}

// snapshotAll snapshots each workspace; nil entries (not git) get "".
func snapshotAll(ctx context.Context, wss []Workspace) ([]string, error) {
	trees := make([]string, len(wss))
	for i, ws := range wss {
		if ws == nil {
			continue
		}
		t, err := ws.Snapshot(ctx, true)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ws.Root(), err)
		}
		trees[i] = t
	}
	return trees, nil
}

func (s *Session) workspaceList() []Workspace {
	out := make([]Workspace, len(s.workspaces))
	for i, e := range s.workspaces {
		out[i] = e.ws
	}
	return out
}

// applyTurnStart publishes a new running turn. On the actor.
func (s *Session) applyTurnStart(t *turn) {
	s.turns = append(s.turns, t)
	s.evidence.gen++ // unreported time is now this agent's too
	c := s.chatFor(t.chat, true)
	s.commitChat(c, protocol.ChatTurnStarted{
		TurnID:    t.id,
		StartedAt: formatTime(t.startedAt),
		Message:   protocol.Message{Text: t.message, Origin: protocol.MessageOrigin{Kind: protocol.MessageUser}},
	})
	s.chatSummaryChanged(c)
	for _, cs := range s.changesets {
		cs.syncOperations(s) // writing operations are disabled while it runs
	}
}

// applyTurnEnd publishes the end of the running turn and moves every
// changeset that showed it live onto its end snapshot. On the actor.
func (s *Session) applyTurnEnd(id string, trees []string, now time.Time, dur int64) {
	t := s.turnByID(id)
	if t == nil || !t.running() {
		return
	}
	t.end, t.endedAt = trees, now
	s.evidence.gen++
	c := s.chatFor(t.chat, true)
	s.commitChat(c, protocol.ChatTurnComplete{TurnID: id, Duration: dur})
	s.chatSummaryChanged(c)
	for _, cs := range s.changesets {
		cs.syncOperations(s)
		if cs.ref.Kind != protocol.KindTurn && cs.ref.Kind != protocol.KindCompareTurns {
			continue
		}
		if !cs.live(s) {
			cs.stopWatching()
		}
		if cs.active {
			cs.pendingAll = true
			cs.refresh(s)
		}
	}
	s.annotationsMayHaveMoved() // those of this turn now map from its end
}

// commitChat reduces a on the chat's state and publishes it.
func (s *Session) commitChat(c *chat, a protocol.Action) {
	next, out := reducerApplyChat(c.state, a)
	if out {
		c.state = next
		s.modifiedAt = s.m.opts.Now()
	}
	s.m.publish(c.ch, a, nil)
}

// summary is the session's entry for the chat.
func (c *chat) summary() protocol.ChatSummary {
	return protocol.ChatSummary{Resource: c.state.Resource, Title: c.state.Title, Status: c.state.Status, ModifiedAt: c.state.ModifiedAt, Interactivity: c.state.Interactivity}
}

func (s *Session) chatSummaryChanged(c *chat) {
	s.commitSession(protocol.SessionChatUpdated{Chat: c.state.Resource, Changes: protocol.Object{"status": c.state.Status, "modifiedAt": c.state.ModifiedAt}}, nil)
}

// attachChat subscribes sub to the chat with key. An agent's chat that has
// no turn yet does not exist.
func (s *Session) attachChat(sub Subscriber, uri, key string, lastSeen int64, done func(Attachment, error)) {
	if !s.do(func() {
		if s.disposed {
			done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: session was disposed", uri))
			return
		}
		c := s.chatByKey(key)
		if c == nil {
			done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: no such chat; session %s lists its chats in SessionState.chats", uri, s.uri))
			return
		}
		if uri == c.ch.URI() {
			s.m.attachOwned(c.ch, sub, lastSeen, cloneChat(c.state), done)
			return
		}
		// Subscribed under the earlier shape of its URI: the client
		// hears the chat under the name it asked for.
		st := cloneChat(c.state)
		st.Resource = uri
		s.m.attachOwned(c.ch, aliasSub{sub, uri}, lastSeen, st, func(at Attachment, err error) {
			at.Snapshot.Resource = uri
			for i := range at.Replay {
				at.Replay[i].Channel = uri
			}
			done(at, err)
		})
	}) {
		done(Attachment{}, protocol.Errorf(protocol.CodeNotFound, "subscribe %s: session was disposed", uri))
	}
}

// detachChat unsubscribes sub from the chat with key, subscribed as uri.
// On the actor.
func (s *Session) detachChat(sub Subscriber, uri, key string) {
	if c := s.chatByKey(key); c != nil {
		if uri == c.ch.URI() {
			s.m.detachChannel(c.ch, sub)
		} else {
			s.m.detachChannel(c.ch, aliasSub{sub, uri})
		}
	}
}

// aliasSub is a subscriber of a chat under another name of its URI: what
// it receives is renamed to the channel it subscribed to. It is
// comparable, so detaching with the same name finds it.
type aliasSub struct {
	Subscriber
	name string
}

func (a aliasSub) Send(env *Envelope) {
	e := env.ActionEnvelope
	e.Channel = a.name
	a.Subscriber.Send(NewEnvelope(e))
}

func cloneChat(c protocol.ChatState) protocol.ChatState {
	out := c
	out.Turns = slices.Clone(c.Turns)
	if c.ActiveTurn != nil {
		a := *c.ActiveTurn
		out.ActiveTurn = &a
	}
	return out
}

// restoreTurns rebuilds turns and the chat from stored records.
func (s *Session) restoreTurns(recs []store.Turn) {
	for _, r := range recs {
		t := &turn{seq: r.Seq, id: r.ID, chat: r.Chat, message: r.Message, startedAt: r.StartedAt, endedAt: r.EndedAt, start: r.Start, end: r.End}
		if len(t.end) == 0 {
			t.end = nil
		}
		s.turns = append(s.turns, t)
		c := s.chatFor(t.chat, false)
		c.state, _ = reducerApplyChat(c.state, protocol.ChatTurnStarted{
			TurnID: t.id, StartedAt: formatTime(t.startedAt),
			Message: protocol.Message{Text: t.message, Origin: protocol.MessageOrigin{Kind: protocol.MessageUser}},
		})
		if !t.running() {
			c.state, _ = reducerApplyChat(c.state, protocol.ChatTurnComplete{TurnID: t.id, Duration: max(t.endedAt.Sub(t.startedAt).Milliseconds(), 0)})
		}
	}
}

// reducerApplyChat applies a chat action with 1.0 semantics.
func reducerApplyChat(c protocol.ChatState, a protocol.Action) (protocol.ChatState, bool) {
	next, out := reducer.ApplyChat(c, a, reducer.Env{})
	return next, out == reducer.Applied
}
