package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// hostileFrames are the frames of the hostile-input table in
// test/hostile_test.go, with its placeholders filled in.
func hostileFrames() []string {
	const (
		sessionURI   = "ahp-session:/s1"
		changesetURI = "ahp-changeset:/s1/changeset/uncommitted"
		repo         = "/tmp/repo"
	)
	req := func(method, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, method, params)
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	return []string{
		`{`,
		`not json`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + deep + `}`,
		`[]`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`"hello"`,
		`42`,
		`null`,
		`{}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"id":1,"method":"ping"}`,
		`{"jsonrpc":2.0,"id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":"2.0","id":1,"method":""}`,
		`{"jsonrpc":"2.0","id":1,"method":{"a":1}}`,
		req("nope", `{}`),
		`{"jsonrpc":"2.0","id":"abc","method":"nope"}`,
		req(strings.Repeat("m", 100000), `{}`),
		`{"jsonrpc":"2.0","id":-1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":[1],"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping","params":{"channel":"ahp-root://"}}`,
		`{"jsonrpc":"2.0","id":"","method":"ping"}`,
		req("ping", `{"channel":"ahp-root://","future":{"x":[1,2]}}`),
		req("subscribe", `5`),
		req("subscribe", `"x"`),
		req("listSessions", `true`),
		req("subscribe", `{}`),
		req("subscribe", `{"channel":5}`),
		req("subscribe", `{"channel":""}`),
		req("subscribe", `["ahp-root://"]`),
		req("subscribe", `{"channel":"ahp-changeset:/x"}`),
		req("subscribe", fmt.Sprintf(`{"channel":%q}`, changesetURI+"/extra")),
		req("subscribe", `{"channel":"bogus:thing"}`),
		req("subscribe", `{"channel":"ahp-session:/does-not-exist"}`),
		req("subscribe", `{"channel":"ahp-chat:/c1"}`),
		req("listSessions", `{"channel":"ahp-root://","limit":"ten"}`),
		req("listSessions", `{"channel":"ahp-root://","limit":-1}`),
		req("listSessions", `{"channel":"ahp-root://","limit":1e30}`),
		req("listSessions", `{"channel":"ahp-root://","cursor":"garbage"}`),
		req("resourceRead", `{"channel":"ahp-root://","uri":5}`),
		req("resourceRead", `{"channel":"ahp-root://","uri":"file:///etc/passwd"}`),
		req("resourceRead", fmt.Sprintf(`{"channel":"ahp-root://","uri":"file://%s/../../../etc/passwd"}`, repo)),
		req("resourceRead", fmt.Sprintf(`{"channel":"ahp-root://","uri":"file://%s/.git/config"}`, repo)),
		req("resourceRead", `{"channel":"ahp-root://","uri":"ahp-session:/x/blob/zz"}`),
		req("resourceRead", fmt.Sprintf(`{"channel":"ahp-root://","uri":"%s/blob/%s"}`, sessionURI, strings.Repeat("ab", 20))),
		req("resourceRead", fmt.Sprintf(`{"channel":"ahp-root://","uri":"file://%s/a.txt","encoding":"utf-16"}`, repo)),
		req("initialize", `{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"x"}`),
		req("createSession", `{"channel":"bogus"}`),
		req("createSession", `{"channel":"ahp-session:/new-1","workingDirectories":["file:///does/not/exist"]}`),
		req("createSession", `{"channel":"ahp-session:/new-2","workingDirectories":["/tmp"]}`),
		req("createSession", `{"channel":"ahp-session:/new-3","provider":"other"}`),
		req("createSession", fmt.Sprintf(`{"channel":%q}`, sessionURI)),
		req("disposeSession", `{"channel":"ahp-session:/nope"}`),
		req("invokeChangesetOperation", `{"channel":"ahp-changeset:/x","operationId":"revert"}`),
		req("invokeChangesetOperation", fmt.Sprintf(`{"channel":%q,"operationId":"nope"}`, changesetURI)),
		req("invokeChangesetOperation", fmt.Sprintf(`{"channel":%q,"operationId":"nope","target":7}`, changesetURI)),
		req("dispatchAction", fmt.Sprintf(`{"channel":%q,"clientSeq":1e30,"action":{"type":"changeset/filesReviewChanged","files":[],"reviewed":true}}`, changesetURI)),
		req("dispatchAction", fmt.Sprintf(`{"channel":%q,"clientSeq":1,"action":{"files":[]}}`, changesetURI)),
		req("dispatchAction", fmt.Sprintf(`{"channel":%q,"clientSeq":1,"action":{"type":"changeset/filesReviewChanged","files":["a"],"reviewed":"yes"}}`, changesetURI)),
		fmt.Sprintf(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":1,"action":{}}}`, changesetURI),
		`{"jsonrpc":"2.0","method":"dispatchAction","params":5}`,
		`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-changeset:/nobody/changeset/uncommitted","clientSeq":1,"action":{"type":"future/thing"}}}`,
		`{"jsonrpc":"2.0","method":"x-unknown/notify","params":{}}`,
		`{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"ahp-changeset:/never"}}`,
		req("reconnect", `{"channel":"ahp-root://","clientId":"x","lastSeenServerSeq":"x","subscriptions":[]}`),
		req("reconnect", `{"channel":"ahp-root://","clientId":"someone-else","lastSeenServerSeq":0,"subscriptions":[]}`),
		`{"jsonrpc":"2.0","id":99,"result":null}`,
	}
}

// FuzzParseFrame: parseFrame never panics; a frame it answers is answered
// with a non-zero code, a message and a scalar id; a request it accepts has
// the method and id the frame names (member names matched exactly), and a
// reply to it echoes the id as the client sent it.
func FuzzParseFrame(f *testing.F) {
	for _, fr := range hostileFrames() {
		f.Add([]byte(fr))
	}
	for _, fr := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x","method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"c"}}`,
		`{"jsonrpc":"2.0","id":3,"result":null}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"x","params":null,"meta":{"a":1}}`,
		` {"jsonrpc":"2.0","id":0,"method":"ping","params":[]} `,
		`{"jsonrpc":"2.0","id":1,"METHOD":"ping"}`,
		`{"jsonrpc":"2.0","id":"\u00e9","method":"ping"}`,
	} {
		f.Add([]byte(fr))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, e, id := parseFrame(data)
		if e != nil {
			if req != nil {
				t.Fatalf("both a request and an error for %q", data)
			}
			if id == nil {
				return // dropped silently
			}
			if e.Code == 0 || e.Message == "" {
				t.Fatalf("answer without code or message: %+v", e)
			}
			if !json.Valid(id) || !isIDType(id) {
				t.Fatalf("answer id %q is not a string, number or null", id)
			}
			return
		}
		if id != nil {
			t.Fatalf("accepted with an id to answer: %q", id)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(bytes.Trim(data, " \t\r\n"), &m); err != nil {
			t.Fatalf("accepted a frame that is not a JSON object: %v", err)
		}
		rawMethod, hasMethod := m["method"]
		rawReqID, hasID := m["id"]
		if req == nil {
			if hasMethod {
				t.Fatalf("request %q taken for a response", data)
			}
			return
		}
		var name string
		if err := json.Unmarshal(rawMethod, &name); err != nil || name != req.Method {
			t.Fatalf("method %q decoded as %q", rawMethod, req.Method)
		}
		if req.Notif == hasID {
			t.Fatalf("frame %q: id present %v but Notif %v", data, hasID, req.Notif)
		}
		if hasID {
			var want, got any
			if json.Unmarshal(rawReqID, &want) != nil || json.Unmarshal(rawID(req.ID), &got) != nil || fmt.Sprint(want) != fmt.Sprint(got) {
				t.Fatalf("id %s echoed as %s", rawReqID, rawID(req.ID))
			}
		}
	})
}
