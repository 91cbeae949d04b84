package reducer

import (
	"slices"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// chat/turnsLoaded puts the older turns in front, skips any the state
// already holds, and takes the action's cursor (absent: none).
func TestChatTurnsLoaded(t *testing.T) {
	s := protocol.ChatState{Turns: []protocol.Turn{{ID: "t3"}, {ID: "t4"}}, TurnsNextCursor: "c3"}
	a := decodeAction(t, `{"type":"chat/turnsLoaded","turns":[{"id":"t1","message":{"text":"","origin":{"kind":"user"}},"responseParts":[],"state":"complete"},{"id":"t2","message":{"text":"","origin":{"kind":"user"}},"responseParts":[],"state":"complete"},{"id":"t3","message":{"text":"","origin":{"kind":"user"}},"responseParts":[],"state":"complete"}]}`)
	next, out := ApplyChat(s, a, Env{})
	var ids []string
	for _, tr := range next.Turns {
		ids = append(ids, tr.ID)
	}
	if out != Applied || !slices.Equal(ids, []string{"t1", "t2", "t3", "t4"}) || next.TurnsNextCursor != "" {
		t.Errorf("turns %v cursor %q (%v)", ids, next.TurnsNextCursor, out)
	}
	if len(s.Turns) != 2 || s.TurnsNextCursor != "c3" {
		t.Error("the reducer changed its input")
	}
}

func decodeAction(t *testing.T, raw string) protocol.Action {
	t.Helper()
	a, err := protocol.DecodeAction([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return a
}
