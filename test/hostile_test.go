package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
)

// hostileCase is one frame and what the server must answer: an error
// code, 0 for a success result, or -1 for no answer at all.
type hostileCase struct {
	name  string
	frame string
	want  int64
}

func hostileCases(sessionURI, changesetURI, repo string) []hostileCase {
	req := func(method, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, method, params)
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	return []hostileCase{
		{"truncated object", `{`, protocol.CodeParseError},
		{"not json", `not json`, protocol.CodeParseError},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"ping"}}}`, protocol.CodeParseError},
		{"deep nesting", `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + deep + `}`, protocol.CodeParseError},
		{"empty batch", `[]`, protocol.CodeInvalidRequest},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, protocol.CodeInvalidRequest},
		{"string", `"hello"`, protocol.CodeInvalidRequest},
		{"number", `42`, protocol.CodeInvalidRequest},
		{"null", `null`, protocol.CodeInvalidRequest},
		{"empty object", `{}`, protocol.CodeInvalidRequest},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, protocol.CodeInvalidRequest},
		{"jsonrpc missing", `{"id":1,"method":"ping"}`, protocol.CodeInvalidRequest},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":1,"method":"ping"}`, protocol.CodeInvalidRequest},
		{"method missing", `{"jsonrpc":"2.0","id":1}`, protocol.CodeInvalidRequest},
		{"method number", `{"jsonrpc":"2.0","id":1,"method":5}`, protocol.CodeInvalidRequest},
		{"method empty", `{"jsonrpc":"2.0","id":1,"method":""}`, protocol.CodeInvalidRequest},
		{"method object", `{"jsonrpc":"2.0","id":1,"method":{"a":1}}`, protocol.CodeInvalidRequest},
		{"unknown method", req("nope", `{}`), protocol.CodeMethodNotFound},
		{"unknown method string id", `{"jsonrpc":"2.0","id":"abc","method":"nope"}`, protocol.CodeMethodNotFound},
		{"huge method name", req(strings.Repeat("m", 100000), `{}`), protocol.CodeMethodNotFound},
		{"negative id", `{"jsonrpc":"2.0","id":-1,"method":"ping"}`, protocol.CodeInvalidRequest},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, protocol.CodeInvalidRequest},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, protocol.CodeInvalidRequest},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, protocol.CodeInvalidRequest},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, protocol.CodeInvalidRequest},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, protocol.CodeInvalidRequest},
		{"huge id", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, protocol.CodeInvalidRequest},
		{"int64 overflow id", `{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}`, protocol.CodeInvalidRequest},
		{"max int64 id", `{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping","params":{"channel":"ahp-root://"}}`, 0},
		{"empty string id", `{"jsonrpc":"2.0","id":"","method":"ping"}`, 0},
		{"ping with unknown keys", req("ping", `{"channel":"ahp-root://","future":{"x":[1,2]}}`), 0},
		{"params number", req("subscribe", `5`), protocol.CodeInvalidParams},
		{"params string", req("subscribe", `"x"`), protocol.CodeInvalidParams},
		{"params bool", req("listSessions", `true`), protocol.CodeInvalidParams},
		{"subscribe without channel", req("subscribe", `{}`), protocol.CodeInvalidParams},
		{"subscribe channel number", req("subscribe", `{"channel":5}`), protocol.CodeInvalidParams},
		{"subscribe channel empty", req("subscribe", `{"channel":""}`), protocol.CodeInvalidParams},
		{"subscribe params array", req("subscribe", `["ahp-root://"]`), protocol.CodeInvalidParams},
		{"subscribe bad changeset uri", req("subscribe", `{"channel":"ahp-changeset:/x"}`), protocol.CodeNotFound},
		{"subscribe changeset trailing path", req("subscribe", fmt.Sprintf(`{"channel":%q}`, changesetURI+"/extra")), protocol.CodeNotFound},
		{"subscribe unknown scheme", req("subscribe", `{"channel":"bogus:thing"}`), protocol.CodeNotFound},
		{"subscribe unknown session", req("subscribe", `{"channel":"ahp-session:/does-not-exist"}`), protocol.CodeSessionNotFound},
		{"subscribe chat", req("subscribe", `{"channel":"ahp-chat:/c1"}`), protocol.CodeNotFound},
		{"listSessions limit string", req("listSessions", `{"channel":"ahp-root://","limit":"ten"}`), protocol.CodeInvalidParams},
		{"listSessions limit negative", req("listSessions", `{"channel":"ahp-root://","limit":-1}`), protocol.CodeInvalidParams},
		{"listSessions limit huge", req("listSessions", `{"channel":"ahp-root://","limit":1e30}`), protocol.CodeInvalidParams},
		{"listSessions bad cursor", req("listSessions", `{"channel":"ahp-root://","cursor":"garbage"}`), protocol.CodeInvalidParams},
		{"resourceRead uri number", req("resourceRead", `{"channel":"ahp-root://","uri":5}`), protocol.CodeInvalidParams},
		{"resourceRead outside", req("resourceRead", `{"channel":"ahp-root://","uri":"file:///etc/passwd"}`), protocol.CodePermissionDenied},
		{"resourceRead dotdot", req("resourceRead", fmt.Sprintf(`{"channel":"ahp-root://","uri":"file://%s/../../../etc/passwd"}`, repo)), protocol.CodePermissionDenied},
		{"resourceRead git dir", req("resourceRead", fmt.Sprintf(`{"channel":"ahp-root://","uri":"file://%s/.git/config"}`, repo)), protocol.CodePermissionDenied},
		{"resourceRead bad blob", req("resourceRead", `{"channel":"ahp-root://","uri":"ahp-session:/x/blob/zz"}`), protocol.CodeNotFound},
		{"resourceRead unknown blob", req("resourceRead", fmt.Sprintf(`{"channel":"ahp-root://","uri":"%s/blob/%s"}`, sessionURI, strings.Repeat("ab", 20))), protocol.CodeNotFound},
		{"resourceRead bad encoding", req("resourceRead", fmt.Sprintf(`{"channel":"ahp-root://","uri":"file://%s/a.txt","encoding":"utf-16"}`, repo)), protocol.CodeInvalidParams},
		{"initialize again", req("initialize", `{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"x"}`), protocol.CodeInvalidRequest},
		{"createSession bad uri", req("createSession", `{"channel":"bogus"}`), protocol.CodeInvalidParams},
		{"createSession missing dir", req("createSession", `{"channel":"ahp-session:/new-1","workingDirectories":["file:///does/not/exist"]}`), protocol.CodeInvalidParams},
		{"createSession dir not a URI", req("createSession", `{"channel":"ahp-session:/new-2","workingDirectories":["/tmp"]}`), protocol.CodeInvalidParams},
		{"createSession unknown provider", req("createSession", `{"channel":"ahp-session:/new-3","provider":"other"}`), protocol.CodeProviderNotFound},
		{"createSession existing", req("createSession", fmt.Sprintf(`{"channel":%q}`, sessionURI)), protocol.CodeSessionAlreadyExists},
		{"disposeSession unknown", req("disposeSession", `{"channel":"ahp-session:/nope"}`), protocol.CodeSessionNotFound},
		{"invoke on bad uri", req("invokeChangesetOperation", `{"channel":"ahp-changeset:/x","operationId":"revert"}`), protocol.CodeNotFound},
		{"invoke unknown operation", req("invokeChangesetOperation", fmt.Sprintf(`{"channel":%q,"operationId":"nope"}`, changesetURI)), protocol.CodeInvalidParams},
		{"invoke target wrong type", req("invokeChangesetOperation", fmt.Sprintf(`{"channel":%q,"operationId":"nope","target":7}`, changesetURI)), protocol.CodeInvalidParams},
		{"dispatch request clientSeq huge", req("dispatchAction", fmt.Sprintf(`{"channel":%q,"clientSeq":1e30,"action":{"type":"changeset/filesReviewChanged","files":[],"reviewed":true}}`, changesetURI)), protocol.CodeInvalidParams},
		{"dispatch request action without type", req("dispatchAction", fmt.Sprintf(`{"channel":%q,"clientSeq":1,"action":{"files":[]}}`, changesetURI)), protocol.CodeInvalidParams},
		{"dispatch request reviewed string", req("dispatchAction", fmt.Sprintf(`{"channel":%q,"clientSeq":1,"action":{"type":"changeset/filesReviewChanged","files":["a"],"reviewed":"yes"}}`, changesetURI)), protocol.CodeInvalidParams},
		{"dispatch notification without type", fmt.Sprintf(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":1,"action":{}}}`, changesetURI), -1},
		{"dispatch notification params number", `{"jsonrpc":"2.0","method":"dispatchAction","params":5}`, -1},
		{"dispatch unknown action type", `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-changeset:/nobody/changeset/uncommitted","clientSeq":1,"action":{"type":"future/thing"}}}`, -1},
		{"unknown notification", `{"jsonrpc":"2.0","method":"x-unknown/notify","params":{}}`, -1},
		{"unsubscribe unknown channel", `{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"ahp-changeset:/never"}}`, -1},
		{"reconnect seq string", req("reconnect", `{"channel":"ahp-root://","clientId":"x","lastSeenServerSeq":"x","subscriptions":[]}`), protocol.CodeInvalidParams},
		{"reconnect other client", req("reconnect", `{"channel":"ahp-root://","clientId":"someone-else","lastSeenServerSeq":0,"subscriptions":[]}`), protocol.CodeInvalidParams},
		{"a response frame", `{"jsonrpc":"2.0","id":99,"result":null}`, -1},
	}
}

func TestHostileFrames(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "b\n")
	d := startDaemon(t, repo)

	// A well-behaved client subscribes first and must be unaffected.
	good := d.client(t, "good")
	sum := onlySession(t, good)
	uri := expand(t, catalogue(t, good, sum.Resource)["uncommitted"].URITemplate, nil)
	gm := mirrorChangeset(t, good, uri)
	gm.Wait("ready", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 1 })

	bad := d.client(t, "bad")
	subscribe(t, bad, uri)
	cases := hostileCases(sum.Resource, uri, repo)
	if len(cases) < 50 {
		t.Fatalf("only %d hostile cases", len(cases))
	}
	for _, tc := range cases {
		before := len(bad.Stray())
		if err := bad.SendRaw([]byte(tc.frame)); err != nil {
			t.Fatalf("%s: send: %v", tc.name, err)
		}
		// Some methods answer from another goroutine: wait for the answer,
		// then make sure no second one follows. For frames that get no
		// answer, the ping (handled in order) is the barrier.
		if tc.want != -1 {
			if err := bad.Wait(ctx(t), tc.name, func() bool { return len(bad.Stray()) > before }); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		if err := bad.Call(ctx(t), protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
			t.Fatalf("%s: connection unusable afterwards: %v", tc.name, err)
		}
		got := bad.Stray()[before:]
		switch {
		case tc.want == -1:
			if len(got) != 0 {
				t.Errorf("%s: want no answer, got %+v", tc.name, got[0])
			}
		case len(got) != 1:
			t.Errorf("%s: want one answer, got %d", tc.name, len(got))
		case tc.want == 0:
			if got[0].Error != nil {
				t.Errorf("%s: want success, got %v", tc.name, got[0].Error)
			}
		case got[0].Error == nil:
			t.Errorf("%s: want error %d, got result %s", tc.name, tc.want, got[0].Result)
		case got[0].Error.Code != tc.want:
			t.Errorf("%s: error %d (%s), want %d", tc.name, got[0].Error.Code, got[0].Error.Message, tc.want)
		case got[0].Error.Message == "":
			t.Errorf("%s: error without a message", tc.name)
		}
	}

	// Before initialize only ping works.
	fresh := d.dial(t)
	if err := fresh.Call(ctx(t), protocol.MethodSubscribe, map[string]any{"channel": uri}, nil); rpcCode(err) != protocol.CodeInvalidRequest {
		t.Errorf("subscribe before initialize: %v", err)
	}
	if err := fresh.SendFrame(websocket.BinaryMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Wait(ctx(t), "binary frame refused", func() bool { return len(fresh.Stray()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if e := fresh.Stray()[0].Error; e == nil || e.Code != protocol.CodeInvalidRequest {
		t.Errorf("binary frame: %+v", fresh.Stray()[0])
	}

	// An oversized frame gets an error and a 1009 close.
	huge := d.client(t, "huge")
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":%q}}`, strings.Repeat("x", 5<<20))
	if err := huge.SendRaw([]byte(big)); err != nil {
		t.Fatal(err)
	}
	huge.Wait(ctx(t), "close", func() bool { closed, _, _ := huge.Closed(); return closed })
	if _, code, reason := huge.Closed(); code != websocket.CloseMessageTooBig || reason == "" {
		t.Errorf("oversized frame: close %d %q, want 1009 with a reason", code, reason)
	}
	if s := huge.Stray(); len(s) != 1 || s[0].Error == nil || s[0].Error.Code != protocol.CodeInvalidRequest {
		t.Errorf("oversized frame: answers %+v, want one -32600", s)
	}

	// After all of it the good client's subscription is still live and
	// correct.
	writeFile(t, repo, "later.txt", "z\n")
	st := gm.Wait("later.txt", func(st protocol.ChangesetState) bool { return ready(st) && fileByPath(st, repo, "later.txt") != nil })
	if len(st.Files) != 2 {
		t.Errorf("good client sees %d files, want 2", len(st.Files))
	}
	var res struct {
		Snapshot struct{ State json.RawMessage } `json:"snapshot"`
	}
	other := d.client(t, "checker")
	if err := other.Call(ctx(t), protocol.MethodSubscribe, map[string]any{"channel": uri}, &res); err != nil {
		t.Fatal(err)
	}
	var fresh2 protocol.ChangesetState
	json.Unmarshal(res.Snapshot.State, &fresh2)
	if len(fresh2.Files) != len(gm.State().Files) {
		t.Errorf("a fresh snapshot has %d files, the mirrored state %d", len(fresh2.Files), len(gm.State().Files))
	}
}
