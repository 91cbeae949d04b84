package server

import (
	"net/http"
	"testing"
)

// TestTokenSubprotocol: a page's WebSocket carries the token as a
// subprotocol, not in its URL. The right token is admitted and the answer
// names only the page's protocol, never the token; a wrong one is
// refused with 401 like a wrong ?token=.
func TestTokenSubprotocol(t *testing.T) {
	ctx := testCtx(t)
	s := startServer(t)
	defer s.stop(t)
	for _, tc := range []struct {
		name      string
		protocols string
		want      int
		echo      string
	}{
		{"the token", PageSubprotocol + ", " + TokenSubprotocolPrefix + "t", http.StatusSwitchingProtocols, PageSubprotocol},
		{"the token first", TokenSubprotocolPrefix + "t, " + PageSubprotocol, http.StatusSwitchingProtocols, PageSubprotocol},
		{"a wrong token", PageSubprotocol + ", " + TokenSubprotocolPrefix + "wrong", http.StatusUnauthorized, ""},
		{"an empty token", PageSubprotocol + ", " + TokenSubprotocolPrefix, http.StatusUnauthorized, ""},
		{"no token", PageSubprotocol, http.StatusUnauthorized, ""},
	} {
		c, resp, err := dial(ctx, s.ws, http.Header{"Sec-Websocket-Protocol": {tc.protocols}})
		if resp == nil {
			t.Errorf("%s: no response: %v", tc.name, err)
			continue
		}
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d (err %v)", tc.name, resp.StatusCode, tc.want, err)
		}
		if got := resp.Header.Get("Sec-Websocket-Protocol"); got != tc.echo {
			t.Errorf("%s: the answer names the subprotocol %q, want %q", tc.name, got, tc.echo)
		}
		if c != nil {
			if err := c.closeNormally(ctx); err != nil {
				t.Errorf("%s: close: %v", tc.name, err)
			}
		}
	}
	// A client without subprotocols (the command line, VS Code, the
	// TypeScript transport) is answered with none, as before.
	c, resp, err := dial(ctx, s.ws+"?token=t", nil)
	if err != nil {
		t.Fatalf("?token=: %v", err)
	}
	if got := resp.Header.Get("Sec-Websocket-Protocol"); got != "" {
		t.Errorf("?token= without subprotocols: the answer names %q", got)
	}
	if err := c.closeNormally(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
}
