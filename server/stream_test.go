package server

import (
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

func TestParseFrame(t *testing.T) {
	cases := []struct {
		frame string
		code  int64  // 0: passes validation
		id    string // expected echoed id; "" = not answered
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, ""},
		{`{"jsonrpc":"2.0","id":"x","method":"ping","params":{}}`, 0, ""},
		{`{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"c"}}`, 0, ""},
		{`{"jsonrpc":"2.0","id":3,"result":null}`, 0, ""},
		{`{`, protocol.CodeParseError, "null"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, protocol.CodeInvalidRequest, "null"},
		{`7`, protocol.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":4}`, protocol.CodeInvalidRequest, "4"},
		{`{"jsonrpc":"1.0","id":5,"method":"ping"}`, protocol.CodeInvalidRequest, "5"},
		{`{"jsonrpc":"2.0","id":-1,"method":"ping"}`, protocol.CodeInvalidRequest, "-1"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, protocol.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, protocol.CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":6,"method":"x","params":1}`, protocol.CodeInvalidParams, "6"},
		{`{"jsonrpc":"2.0","method":"x","params":1}`, 0, ""},                           // a bad notification is dropped
		{`{"jsonrpc":"2.0","id":7,"METHOD":"ping"}`, protocol.CodeInvalidRequest, "7"}, // names are case-sensitive
		{"\v{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", protocol.CodeParseError, "null"},
	}
	for _, tc := range cases {
		_, e, id := parseFrame([]byte(tc.frame))
		switch {
		case tc.code == 0 && tc.id == "":
			if e != nil && e.Code != 0 {
				t.Errorf("%s: rejected with %d %s", tc.frame, e.Code, e.Message)
			}
			if id != nil {
				t.Errorf("%s: would answer with id %s", tc.frame, id)
			}
		case e == nil:
			t.Errorf("%s: accepted, want %d", tc.frame, tc.code)
		case e.Code != tc.code || string(id) != tc.id:
			t.Errorf("%s: got %d with id %s, want %d with id %s", tc.frame, e.Code, id, tc.code, tc.id)
		}
	}
}

func TestOriginAndHostChecks(t *testing.T) {
	s := &Server{cfg: Config{AllowOrigins: []string{"https://ide.example"}}}
	s.log = discard()
	for origin, want := range map[string]bool{
		"":                      true,
		"http://localhost:5173": true,
		"http://127.0.0.1":      true,
		"http://[::1]:8080":     true,
		"https://ide.example":   true,
		"https://evil.example":  false,
		"null":                  false,
	} {
		r := newRequest("127.0.0.1:7878", origin)
		if got := s.checkOrigin(r); got != want {
			t.Errorf("origin %q: %v, want %v", origin, got, want)
		}
	}
	for host, want := range map[string]bool{
		"127.0.0.1:7878":      true,
		"localhost:7878":      true,
		"192.168.1.4:7878":    true,
		"ide.example":         true,
		"attacker.example:80": false,
	} {
		if got := s.checkHost(newRequest(host, "")); got != want {
			t.Errorf("host %q: %v, want %v", host, got, want)
		}
	}
}
