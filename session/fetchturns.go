package session

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// DefaultTurnWindow is how many of a chat's latest completed turns its
// state holds when a session is restored, and how many more each
// fetchTurns loads.
const DefaultTurnWindow = 200

// A chat's state holds a tail window of its completed turns. A restored
// session starts with the latest turnWindow of each chat and, when older
// ones exist, a turnsNextCursor naming the oldest turn held; fetchTurns
// with that cursor loads the page before it as chat/turnsLoaded. Loaded
// turns stay for the life of the process: nothing drops them again, so
// every subscriber of a chat shares one contiguous window.
//
// A cursor names a turn ("the turns before this one"), so it stays valid
// for as long as the turn exists, across restarts too: a cursor whose page
// is already loaded loads nothing, and one that lies before the window
// loads everything from its page up to the window, keeping it contiguous.

const cursorPrefix = "before:"

func turnsCursor(turnID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + turnID))
}

// cursorTurn is the turn id a cursor names, or false for a string this
// server did not issue.
func cursorTurn(cursor string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", false
	}
	id, ok := strings.CutPrefix(string(b), cursorPrefix)
	return id, ok && id != ""
}

func (m *Manager) turnWindow() int {
	if m.opts.TurnWindow > 0 {
		return m.opts.TurnWindow
	}
	return DefaultTurnWindow
}

// history is every completed turn of the chat, oldest first, as the
// chat's state shows it.
func (s *Session) history(c *chat) []protocol.Turn {
	var out []protocol.Turn
	for _, t := range s.turns {
		if t.chat != c.key || t.running() {
			continue
		}
		st := protocol.ChatState{}
		st, _ = reducerApplyChat(st, protocol.ChatTurnStarted{
			TurnID: t.id, StartedAt: formatTime(t.startedAt),
			Message: protocol.Message{Text: t.message, Origin: protocol.MessageOrigin{Kind: protocol.MessageUser}},
		})
		st, _ = reducerApplyChat(st, protocol.ChatTurnComplete{TurnID: t.id, Duration: max(t.endedAt.Sub(t.startedAt).Milliseconds(), 0)})
		out = append(out, st.Turns...)
	}
	return out
}

// windowTurns trims each chat's restored turns to the latest turnWindow,
// with a cursor to the rest. Before the session starts.
func (s *Session) windowTurns() {
	w := s.m.turnWindow()
	for _, c := range s.chats {
		if n := len(c.state.Turns); n > w {
			c.state.Turns = c.state.Turns[n-w:]
			c.state.TurnsNextCursor = turnsCursor(c.state.Turns[0].ID)
		}
	}
}

// FetchTurns loads the chat's turns before the cursor's (nil: before the
// window held now) into its state with chat/turnsLoaded, published before
// it returns. A cursor this server did not issue, or that names a turn
// the chat does not have, is refused with InvalidParams and changes
// nothing.
func (m *Manager) FetchTurns(ctx context.Context, channel string, cursor *string) error {
	if !strings.HasPrefix(channel, protocol.ChatScheme) {
		return protocol.Errorf(protocol.CodeInvalidParams, "fetchTurns: channel %q is not a chat; pass an ahp-chat: URI from SessionState.chats", channel)
	}
	s, key, err := m.turnTarget("fetchTurns", channel)
	if err != nil {
		return err
	}
	_, err = command(ctx, s, func() (struct{}, error) {
		c := s.chatByKey(key)
		if c == nil || s.disposed {
			return struct{}{}, protocol.Errorf(protocol.CodeNotFound, "fetchTurns: no chat %s; session %s lists its chats in SessionState.chats", channel, s.uri)
		}
		cur := c.state.TurnsNextCursor
		if cursor != nil {
			cur = *cursor
		}
		if cur == "" {
			if cursor != nil {
				return struct{}{}, protocol.Errorf(protocol.CodeInvalidParams, "fetchTurns: cursor is empty; pass ChatState.turnsNextCursor, or omit cursor")
			}
			return struct{}{}, nil // every turn is loaded
		}
		id, ok := cursorTurn(cur)
		if !ok {
			return struct{}{}, protocol.Errorf(protocol.CodeInvalidParams, "fetchTurns: cursor %q was not issued by this server; pass ChatState.turnsNextCursor of %s", cur, channel)
		}
		all := s.history(c)
		at := -1
		for i, t := range all {
			if t.ID == id {
				at = i
				break
			}
		}
		if at < 0 {
			return struct{}{}, protocol.Errorf(protocol.CodeInvalidParams, "fetchTurns: cursor %q names turn %q, which chat %s does not have", cur, id, channel)
		}
		// The window's first turn in the history; len(all) if it is empty.
		first := len(all)
		if len(c.state.Turns) > 0 {
			for i, t := range all {
				if t.ID == c.state.Turns[0].ID {
					first = i
					break
				}
			}
		}
		if at > first {
			return struct{}{}, nil // that page is loaded already
		}
		from := max(at-m.turnWindow(), 0)
		a := protocol.ChatTurnsLoaded{Turns: all[from:first]}
		if from > 0 {
			a.TurnsNextCursor = turnsCursor(all[from].ID)
		}
		if len(a.Turns) == 0 && a.TurnsNextCursor == c.state.TurnsNextCursor {
			return struct{}{}, nil
		}
		// Not commitChat: loading history is no modification of the chat.
		c.state, _ = reducerApplyChat(c.state, a)
		s.m.publish(c.ch, a, nil)
		return struct{}{}, nil
	})
	return err
}
