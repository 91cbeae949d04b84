package agent

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// Each agent's post-tool hook, in its own spelling, gives the file and
// what the tool wrote.
func TestToolHookWrite(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name   string
		in     string
		want   Write
		ok     bool
		failed bool
		agent  string
	}{
		{"claude write", `{"session_id":"c1","cwd":"/w","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{"file_path":"/w/a.go","content":"package a\n"},"tool_response":{"filePath":"/w/a.go","success":true}}`,
			Write{Path: "/w/a.go", Content: s("package a\n")}, true, false, "c1"},
		{"claude edit", `{"session_id":"c1","cwd":"/w","tool_name":"Edit","tool_input":{"file_path":"/w/a.go","old_string":"x","new_string":"y","replace_all":true}}`,
			Write{Path: "/w/a.go", Replacements: []Replacement{{Old: "x", New: "y", All: true}}}, true, false, "c1"},
		{"claude multiedit", `{"session_id":"c1","tool_name":"MultiEdit","tool_input":{"file_path":"/w/a.go","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}}`,
			Write{Path: "/w/a.go", Replacements: []Replacement{{Old: "a", New: "b"}, {Old: "c", New: "d"}}}, true, false, "c1"},
		{"claude notebook", `{"session_id":"c1","tool_name":"NotebookEdit","tool_input":{"notebook_path":"/w/n.ipynb","new_source":"x"}}`,
			Write{Path: "/w/n.ipynb"}, true, false, "c1"},
		{"claude bash", `{"session_id":"c1","tool_name":"Bash","tool_input":{"command":"make"}}`, Write{}, false, false, "c1"},
		{"gemini replace", `{"session_id":"g1","cwd":"/w","hook_event_name":"AfterTool","tool_name":"replace","tool_input":{"file_path":"b.txt","old_string":"1","new_string":"2"},"tool_response":{"llmContent":"ok","returnDisplay":"ok"}}`,
			Write{Path: "/w/b.txt", Replacements: []Replacement{{Old: "1", New: "2"}}}, true, false, "g1"},
		{"gemini failed", `{"session_id":"g1","tool_name":"write_file","tool_input":{"file_path":"/w/b","content":"x"},"tool_response":{"error":{"message":"denied"}}}`,
			Write{Path: "/w/b", Content: s("x")}, true, true, "g1"},
		{"copilot edit", `{"sessionId":"p1","cwd":"/w","toolName":"edit","toolArgs":"{\"path\":\"src/c.js\",\"old_str\":\"a\",\"new_str\":\"b\"}","toolResult":{"resultType":"success"}}`,
			Write{Path: "/w/src/c.js", Replacements: []Replacement{{Old: "a", New: "b"}}}, true, false, "p1"},
		{"copilot create failed", `{"sessionId":"p1","cwd":"/w","toolName":"create","toolArgs":"{\"path\":\"/w/n.txt\",\"file_text\":\"hi\"}","toolResult":{"resultType":"failure"}}`,
			Write{Path: "/w/n.txt", Content: s("hi")}, true, true, "p1"},
		{"copilot shell", `{"sessionId":"p1","toolName":"bash","toolArgs":"{\"command\":\"ls\"}"}`, Write{}, false, false, "p1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ReadToolHook(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			w, ok, err := h.Write()
			if err != nil || ok != tc.ok || !reflect.DeepEqual(w, tc.want) {
				t.Errorf("Write() = %+v, %v, %v; want %+v, %v", w, ok, err, tc.want, tc.ok)
			}
			if h.Failed() != tc.failed || h.Agent() != tc.agent {
				t.Errorf("Failed() = %v, Agent() = %q; want %v, %q", h.Failed(), h.Agent(), tc.failed, tc.agent)
			}
		})
	}
	if _, err := ReadToolHook(strings.NewReader("not json")); err == nil {
		t.Error("ReadToolHook took text")
	}
}

// A comment goes to the agent that wrote its lines, whatever turn it is
// on; on the user's own lines to none; otherwise by its turn.
func TestSelectForGoesToTheLinesAuthor(t *testing.T) {
	const claude, gemini = "ahp-chat:/s/claude", "ahp-chat:/s/gemini"
	open := func(id, turn string) protocol.Annotation {
		return protocol.Annotation{ID: id, TurnID: turn, Resource: "file:///w/a", Entries: []protocol.AnnotationEntry{{ID: id + "-e", Text: protocol.StringOrMarkdown{Text: "fix"}}}}
	}
	anns := []protocol.Annotation{open("on-gemini", "t1"), open("on-you", "t1"), open("on-claude", "t2"), open("unknown", "t1"), open("mixed", "t2")}
	by := map[string][]string{"on-gemini": {gemini}, "on-you": {"you"}, "on-claude": {claude}, "unknown": {"unknown"}, "mixed": {claude, "you"}}
	// t1 is claude's turn, t2 gemini's.
	ids := func(p []Pending) []string { return IDs(p) }
	if got := ids(SelectFor(anns, map[string]bool{"t2": true}, by, claude)); !slices.Equal(got, []string{"on-claude", "unknown", "mixed"}) {
		t.Errorf("claude gets %q", got)
	}
	if got := ids(SelectFor(anns, map[string]bool{"t1": true}, by, gemini)); !slices.Equal(got, []string{"on-gemini"}) {
		t.Errorf("gemini gets %q", got)
	}
	p := SelectFor(anns, map[string]bool{"t2": true}, by, claude)
	text := Feedback(p, map[string]protocol.Annotation{"mixed": anns[4]}, []string{"/w"})
	if !strings.Contains(text, "Lines written by you (this agent) and the user.") {
		t.Errorf("the feedback does not say whose lines:\n%s", text)
	}
}
