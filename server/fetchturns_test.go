package server

import (
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// fetchTurns is served: {} for a chat that holds all its turns, a clear
// InvalidParams for a cursor the server did not issue.
func TestFetchTurnsServed(t *testing.T) {
	ctx := testCtx(t)
	s := startServer(t)
	c, _, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.ws.Close()
	if err := initialize(ctx, c, "fetcher"); err != nil {
		t.Fatal(err)
	}
	const uri = "ahp-session:/fetch-turns"
	if err := c.call(ctx, protocol.MethodCreateSession, map[string]any{
		"channel": uri, "workingDirectories": []string{session.FileURI(t.TempDir())},
	}, nil); err != nil {
		t.Fatal(err)
	}
	chat := protocol.ChatScheme + "/fetch-turns"
	var res map[string]any
	if err := c.call(ctx, protocol.MethodFetchTurns, map[string]any{"channel": chat}, &res); err != nil || res == nil || len(res) != 0 {
		t.Errorf("fetchTurns of a chat with every turn loaded: %v %v, want {}", res, err)
	}
	err = c.call(ctx, protocol.MethodFetchTurns, map[string]any{"channel": chat, "cursor": "forged"}, nil)
	if err == nil || !strings.Contains(err.Error(), "rpc error -32602") || !strings.Contains(err.Error(), "turnsNextCursor") {
		t.Errorf("fetchTurns with a forged cursor: %v, want InvalidParams", err)
	}
}
