package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestTokenAsTknAndVSCodeOrigin: the token is accepted as ?tkn= (the only
// form VS Code's renderer WebSocket can send), VS Code's own Origin is
// admitted with a valid token and refused without one, and the upgrade
// is served at / as well as /ahp.
func TestTokenAsTknAndVSCodeOrigin(t *testing.T) {
	ctx := testCtx(t)
	s := startServer(t)
	defer s.stop(t)
	root := strings.TrimSuffix(s.ws, "/ahp")
	vscode := http.Header{"Origin": {"vscode-file://vscode-app"}}
	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		want   int
	}{
		{"tkn", s.ws + "?tkn=t", nil, http.StatusSwitchingProtocols},
		{"wrong tkn", s.ws + "?tkn=x", nil, http.StatusUnauthorized},
		{"vscode origin with tkn", s.ws + "?tkn=t", vscode, http.StatusSwitchingProtocols},
		{"vscode origin with a wrong tkn", s.ws + "?tkn=x", vscode, http.StatusForbidden},
		{"vscode origin without a token", s.ws, vscode, http.StatusForbidden},
		{"a look-alike of the vscode origin", s.ws + "?tkn=t", http.Header{"Origin": {"vscode-file://vscode-app.evil.example"}}, http.StatusForbidden},
		{"upgrade at /", root + "/?tkn=t", vscode, http.StatusSwitchingProtocols},
	} {
		c, resp, err := dial(ctx, tc.url, tc.header)
		if resp == nil {
			t.Errorf("%s: no response: %v", tc.name, err)
			continue
		}
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d (err %v)", tc.name, resp.StatusCode, tc.want, err)
		}
		if c != nil {
			if err := c.call(ctx, protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
				t.Errorf("%s: ping: %v", tc.name, err)
			}
			c.closeNormally(ctx)
		}
	}
}

// TestUnsupportedVersionLeavesSocketOpen: an offer of only unknown
// versions is refused with -32005 and its supportedVersions, and the
// socket stays open for the client to close (VS Code shows the host as
// incompatible only then); the same socket may then initialize with
// VS Code's offers, of which 0.9.0 is chosen over 0.10.0.
func TestUnsupportedVersionLeavesSocketOpen(t *testing.T) {
	ctx := testCtx(t)
	s := startServer(t)
	defer s.stop(t)
	c, _, err := dial(ctx, s.ws+"?tkn=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.closeNormally(ctx)
	err = c.call(ctx, protocol.MethodInitialize, map[string]any{"channel": protocol.RootURI, "protocolVersions": []string{"3.0.0", "0.8.0"}, "clientId": "old"}, nil)
	if err == nil || !strings.Contains(err.Error(), "-32005") {
		t.Fatalf("initialize with 3.0.0 and 0.8.0: %v, want -32005", err)
	}
	c.mu.Lock()
	var data json.RawMessage
	for _, m := range c.msgs {
		if m.Error != nil {
			data, _ = json.Marshal(m.Error.Data)
		}
	}
	c.mu.Unlock()
	if !strings.Contains(string(data), "supportedVersions") {
		t.Errorf("the -32005 error's data %s lacks supportedVersions", data)
	}
	if err := c.call(ctx, protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
		t.Fatalf("ping after the refusal: %v (the socket must stay open)", err)
	}
	var res protocol.InitializeResult
	if err := c.call(ctx, protocol.MethodInitialize, map[string]any{"channel": protocol.RootURI, "protocolVersions": []string{"0.10.0", "0.9.0", "0.7.0"}, "clientId": "vscode"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != "0.9.0" {
		t.Errorf("VS Code's offer negotiated %q, want 0.9.0", res.ProtocolVersion)
	}
}

// TestReconnectFromUnknownClient: a reconnect naming a client this server
// never initialized is NotFound (-32008), which VS Code answers with a
// fresh initialize, rather than served in a guessed version; the same
// socket can then initialize.
func TestReconnectFromUnknownClient(t *testing.T) {
	ctx := testCtx(t)
	s := startServer(t)
	defer s.stop(t)
	c, _, err := dial(ctx, s.ws+"?tkn=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.closeNormally(ctx)
	err = c.call(ctx, protocol.MethodReconnect, map[string]any{"channel": protocol.RootURI, "clientId": "stranger", "lastSeenServerSeq": 3, "subscriptions": []string{protocol.RootURI}}, nil)
	if err == nil || !strings.Contains(err.Error(), "-32008") {
		t.Fatalf("reconnect from an unknown client: %v, want -32008", err)
	}
	if err := initialize(ctx, c, "stranger"); err != nil {
		t.Fatalf("initialize after the refused reconnect: %v", err)
	}
}

// TestRootConfigChangedAccepted: root/configChanged, which VS Code
// dispatches after every connect, is accepted without a rejection, while
// another action on the root still is rejected.
func TestRootConfigChangedAccepted(t *testing.T) {
	ctx := testCtx(t)
	s := startServer(t)
	defer s.stop(t)
	c, _, err := dial(ctx, s.ws+"?tkn=t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.closeNormally(ctx)
	if err := initialize(ctx, c, "configurer"); err != nil {
		t.Fatal(err)
	}
	if err := subscribeRoot(ctx, c); err != nil {
		t.Fatal(err)
	}
	dispatch := func(action string) {
		if err := c.send(map[string]any{"jsonrpc": "2.0", "method": protocol.MethodDispatchAction, "params": map[string]any{"channel": protocol.RootURI, "clientSeq": 0, "action": json.RawMessage(action)}}); err != nil {
			t.Fatal(err)
		}
	}
	dispatch(`{"type":"root/configChanged","config":{"telemetryLevel":"off"}}`)
	dispatch(`{"type":"root/somethingElse"}`)
	var rejected []string
	if err := c.waitFor(ctx, "the rejection of root/somethingElse", func() bool {
		rejected = rejected[:0]
		for _, m := range c.msgs {
			var env struct {
				Action struct {
					Type string `json:"type"`
				} `json:"action"`
				RejectionReason string `json:"rejectionReason"`
			}
			if m.Method == "action" && json.Unmarshal(m.Params, &env) == nil && env.RejectionReason != "" {
				rejected = append(rejected, env.Action.Type)
			}
		}
		return len(rejected) > 0 && rejected[len(rejected)-1] == "root/somethingElse"
	}); err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 1 {
		t.Errorf("rejected %v, want root/somethingElse alone", rejected)
	}
}
