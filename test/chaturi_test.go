package test

import (
	"encoding/json"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestChatURIsInBothShapes: a session's chats are published as
// ahp-chat://<chat id>/<base64url(session URI)> (defaultChat and
// chats[].resource, the shape VS Code's parseChatUri reads), and a client
// still using the earlier ahp-chat:/<session id> subscribes, starts turns
// and hears the chat's actions under the name it used.
func TestChatURIsInBothShapes(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	c := d.client(t, "chats")
	sum := onlySession(t, c)
	raw, _ := subscribe(t, c, sum.Resource)
	var st protocol.SessionState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	want := protocol.ChatURI(sum.Resource, protocol.DefaultChatID)
	if st.DefaultChat != want || len(st.Chats) == 0 || st.Chats[0].Resource != want {
		t.Fatalf("defaultChat %q, chats %+v; want both %q", st.DefaultChat, st.Chats, want)
	}
	if s, id, ok := protocol.ParseChatURI(st.DefaultChat); !ok || s != sum.Resource || id != protocol.DefaultChatID {
		t.Errorf("the default chat %s names session %q, chat %q", st.DefaultChat, s, id)
	}

	legacy := protocol.LegacyChatURI(sum.Resource, protocol.DefaultChatID)
	subscribe(t, c, legacy) // fails unless the snapshot is named as subscribed
	subscribe(t, c, want)
	id := turnStart(t, c, legacy, "through the old name")
	for _, uri := range []string{legacy, want} {
		if err := c.Wait(ctx(t), "the turn on "+uri, func() bool {
			for _, e := range c.Envelopes(uri) {
				if e.Channel != uri {
					return false
				}
				if ts, ok := e.Action.Action.(protocol.ChatTurnStarted); ok && ts.TurnID == id {
					return true
				}
			}
			return false
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Call(ctx(t), protocol.MethodUnsubscribe, map[string]any{"channel": legacy}, nil); err != nil {
		t.Fatal(err)
	}
	turnEnd(t, c, want)
	done, _ := chatTurns(t, c, sum.Resource)
	if len(done) != 1 || done[0] != id {
		t.Errorf("completed turns %v, want [%s]", done, id)
	}
}
