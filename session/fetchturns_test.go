package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/changesetd/changesetd/store"
)

// chatView subscribes c to a chat and returns a function that reduces
// what c received since into the snapshot, as a client does.
func chatView(t *testing.T, m *Manager, c *client, uri string) func() protocol.ChatState {
	t.Helper()
	n := c.count()
	done := make(chan protocol.ChatState, 1)
	m.Attach(c, uri, -1, func(at Attachment, err error) {
		if err != nil {
			t.Errorf("subscribe %s: %v", uri, err)
			done <- protocol.ChatState{}
			return
		}
		var st protocol.ChatState
		b, _ := json.Marshal(at.Snapshot.State)
		if err := json.Unmarshal(b, &st); err != nil {
			t.Errorf("chat snapshot: %v", err)
		}
		done <- st
	})
	base := <-done
	return func() protocol.ChatState {
		c.mu.Lock()
		defer c.mu.Unlock()
		st := base
		for _, e := range c.envs[n:] {
			if e.Channel == uri {
				st, _ = reducer.ApplyChat(st, e.Action.Action, reducer.Env{})
			}
		}
		return st
	}
}

// restoredWith restores session s1 with the turns on a Manager whose
// chats hold window turns; it returns the Manager and the default chat.
func restoredWith(t *testing.T, window int, recs []store.Turn) (*Manager, string) {
	t.Helper()
	ws := newFakeWorkspace(t.TempDir(), map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "one\n"})
	m := NewManager(Options{TurnWindow: window, OpenWorkspace: func(string) (Workspace, error) { return ws, nil }})
	t.Cleanup(m.Close)
	rec := store.Session{ID: "s1", URI: protocol.SessionScheme + "/s1", CreatedAt: recs[0].StartedAt, Workspaces: []store.WorkspaceRecord{{Dir: ws.root}}}
	if _, err := m.Restore(rec, recs); err != nil {
		t.Fatal(err)
	}
	return m, protocol.ChatScheme + "/s1"
}

func turnIDs(st protocol.ChatState) []string {
	var out []string
	for _, t := range st.Turns {
		out = append(out, t.ID)
	}
	return out
}

// A restored chat holds its latest turns with a cursor; fetchTurns pages
// the older ones in, oldest first, before it answers; an old cursor stays
// valid and loads nothing twice; a bad cursor is refused with
// InvalidParams and changes nothing.
func TestFetchTurnsPages(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var recs []store.Turn
	for i := 1; i <= 5; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		recs = append(recs, store.Turn{Seq: uint64(i), ID: "t" + strconv.Itoa(i), Message: "m" + strconv.Itoa(i), StartedAt: at, EndedAt: at.Add(time.Second), Start: []string{"x"}, End: []string{"y"}})
	}
	recs = append(recs, store.Turn{Seq: 6, ID: "other", Chat: "agent", StartedAt: t0, EndedAt: t0.Add(time.Second), Start: []string{"x"}, End: []string{"y"}})
	m, chatURI := restoredWith(t, 2, recs)
	c := newClient("c")
	view := chatView(t, m, c, chatURI)
	st := view()
	if got := turnIDs(st); !slices.Equal(got, []string{"t4", "t5"}) || st.TurnsNextCursor == "" {
		t.Fatalf("restored window %v cursor %q, want [t4 t5] and a cursor", got, st.TurnsNextCursor)
	}
	first := st.TurnsNextCursor
	ctx := context.Background()
	fetch := func(cursor *string) error { return m.FetchTurns(ctx, chatURI, cursor) }

	// Pages arrive before the answer.
	if err := fetch(&first); err != nil {
		t.Fatal(err)
	}
	st = view()
	if got := turnIDs(st); !slices.Equal(got, []string{"t2", "t3", "t4", "t5"}) || st.TurnsNextCursor == "" || st.TurnsNextCursor == first {
		t.Fatalf("after one page %v cursor %q", got, st.TurnsNextCursor)
	}
	if st.Turns[0].Message.Text != "m2" || st.Turns[0].StartedAt == "" || st.Turns[0].Duration == nil || *st.Turns[0].Duration != 1000 {
		t.Errorf("a loaded turn lost its fields: %+v", st.Turns[0])
	}
	// The first cursor again: its page is loaded, nothing is sent.
	n := c.count()
	if err := fetch(&first); err != nil {
		t.Fatal(err)
	}
	if c.count() != n {
		t.Errorf("a cursor whose page is loaded sent %v", c.sent(chatURI, n))
	}
	// No cursor: the next older page.
	if err := fetch(nil); err != nil {
		t.Fatal(err)
	}
	st = view()
	if got := turnIDs(st); !slices.Equal(got, []string{"t1", "t2", "t3", "t4", "t5"}) || st.TurnsNextCursor != "" {
		t.Fatalf("after the last page %v cursor %q, want all and none", got, st.TurnsNextCursor)
	}
	if err := fetch(nil); err != nil {
		t.Errorf("fetchTurns with everything loaded: %v", err)
	}

	// Bad cursors.
	n = c.count()
	forged := base64.RawURLEncoding.EncodeToString([]byte("before:nosuch"))
	otherChat := base64.RawURLEncoding.EncodeToString([]byte("before:other"))
	for _, bad := range []string{"", "not a cursor!", "bm9wZQ", forged, otherChat} {
		err := fetch(&bad)
		if protocol.CodeOf(err) != protocol.CodeInvalidParams {
			t.Errorf("cursor %q: %v, want InvalidParams", bad, err)
		}
	}
	if err := m.FetchTurns(ctx, protocol.SessionScheme+"/s1", nil); protocol.CodeOf(err) != protocol.CodeInvalidParams {
		t.Errorf("fetchTurns on a session channel: %v, want InvalidParams", err)
	}
	if err := m.FetchTurns(ctx, protocol.ChatScheme+"/nosuch", nil); protocol.CodeOf(err) != protocol.CodeSessionNotFound {
		t.Errorf("fetchTurns on an unknown session's chat: %v", err)
	}
	if c.count() != n {
		t.Errorf("refused fetches sent %v", c.sent(chatURI, n))
	}

	// The agent's chat has its own history, all of it loaded.
	agent := chatView(t, m, c, chatURI+"/agent")()
	if got := turnIDs(agent); !slices.Equal(got, []string{"other"}) || agent.TurnsNextCursor != "" {
		t.Errorf("agent chat %v cursor %q", got, agent.TurnsNextCursor)
	}
}

// A cursor from before a restart names a turn older than the restored
// window: fetchTurns loads from its page up to the window, so the state
// stays contiguous.
func TestFetchTurnsCursorAcrossRestart(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var recs []store.Turn
	for i := 1; i <= 7; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		recs = append(recs, store.Turn{Seq: uint64(i), ID: "t" + strconv.Itoa(i), StartedAt: at, EndedAt: at, Start: []string{"x"}, End: []string{"y"}})
	}
	m, chatURI := restoredWith(t, 2, recs)
	view := chatView(t, m, newClient("c"), chatURI)
	old := turnsCursor("t4") // what an earlier run's window [t4 ...] offered
	if err := m.FetchTurns(context.Background(), chatURI, &old); err != nil {
		t.Fatal(err)
	}
	st := view()
	if got := turnIDs(st); !slices.Equal(got, []string{"t2", "t3", "t4", "t5", "t6", "t7"}) || st.TurnsNextCursor != turnsCursor("t2") {
		t.Errorf("after an earlier run's cursor: %v cursor %q", got, st.TurnsNextCursor)
	}
}
