package test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// linesOf is n lines "<prefix> i", with some replaced (1-based).
func linesOf(prefix string, n int, over map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := over[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		fmt.Fprintf(&b, "%s %d\n", prefix, i)
	}
	return b.String()
}

// chatName is the chat id of uri when it names a chat of the session
// sess (the agent's name, as its hook gave it), else uri as it is.
func chatName(sess, uri string) string {
	if s, id, ok := protocol.ParseChatURI(uri); ok && s == sess {
		return id
	}
	return uri
}

// authorsByFile lists, for each file of a changeset (relative to root),
// its hunks' authors in line order, with the chat URIs of the session sess
// cut to the agent's name.
func authorsByFile(st protocol.ChangesetState, root, sess string) map[string][]string {
	out := map[string][]string{}
	for _, f := range st.Files {
		uri := f.ID
		own, _ := f.Meta["changesetd"].(map[string]any)
		raw, _ := json.Marshal(own["hunks"])
		var hunks []struct {
			NewStart int      `json:"newStart"`
			Author   string   `json:"author"`
			Authors  []string `json:"authors"`
		}
		json.Unmarshal(raw, &hunks)
		sort.Slice(hunks, func(i, j int) bool { return hunks[i].NewStart < hunks[j].NewStart })
		var list []string
		for _, h := range hunks {
			a := chatName(sess, h.Author)
			if len(h.Authors) > 0 {
				a += fmt.Sprint(h.Authors)
			}
			list = append(list, a)
		}
		if len(hunks) == 0 {
			a, _ := own["author"].(string)
			list = []string{"file:" + chatName(sess, a)}
		}
		out[strings.TrimPrefix(uri, "file://"+root+"/")] = list
	}
	return out
}

func sameAuthors(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// Three agents work in one repository through their hooks — Claude Code
// (UserPromptSubmit, PostToolUse, Stop), Gemini CLI (BeforeAgent,
// AfterTool, AfterAgent) and an edit tool's "changesetd edits" stream —
// while the user edits files between and during their turns. Every hunk of
// the turn, uncommitted and session views names the one who wrote it,
// also after a restart, and a comment on each author's lines reaches
// exactly that agent, or none for the user's own.
func TestEveryHunkHasItsAuthor(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{
		"shared.txt": linesOf("line", 60, nil),
		"Makefile":   linesOf("m", 30, nil),
		"README.md":  linesOf("r", 10, nil),
		"COMPAT.md":  linesOf("c", 10, nil),
	})
	state := t.TempDir()
	d := startDaemonIn(t, state, repo)
	c := d.client(t, "panel")
	sum := onlySession(t, c)
	sess := sum.Resource
	hook := func(stdin string, args ...string) string {
		t.Helper()
		return d.cliOK(t, stdin, args...)
	}
	payload := func(fields map[string]any) string {
		b, _ := json.Marshal(fields)
		return string(b)
	}
	abs := func(name string) string { return filepath.Join(repo, name) }

	cat := catalogue(t, c, sum.Resource) // the session's baseline is taken

	// Claude Code's prompt, and two writes through its tools.
	hook(payload(map[string]any{"session_id": "claude-1", "cwd": repo, "hook_event_name": "UserPromptSubmit", "prompt": "Fix line 5"}), "turn", "start", "--hook", "--feedback")
	writeFile(t, repo, "shared.txt", linesOf("line", 60, map[int]string{5: "claude 5"}))
	hook(payload(map[string]any{"session_id": "claude-1", "cwd": repo, "hook_event_name": "PostToolUse", "tool_name": "Edit",
		"tool_input":    map[string]any{"file_path": abs("shared.txt"), "old_string": "line 5\n", "new_string": "claude 5\n"},
		"tool_response": map[string]any{"filePath": abs("shared.txt"), "success": true}}), "turn", "edit", "--hook")
	writeFile(t, repo, "claude.txt", "hello from claude\n")
	hook(payload(map[string]any{"session_id": "claude-1", "cwd": repo, "hook_event_name": "PostToolUse", "tool_name": "Write",
		"tool_input": map[string]any{"file_path": abs("claude.txt"), "content": "hello from claude\n"}}), "turn", "edit", "--hook")

	// The user types into the same file while Claude works.
	writeFile(t, repo, "shared.txt", linesOf("line", 60, map[int]string{5: "claude 5", 30: "user 30"}))

	// Gemini CLI starts while Claude still runs, and writes two files.
	gem := func(event string, extra map[string]any) string {
		m := map[string]any{"session_id": "gemini-1", "cwd": repo, "hook_event_name": event, "timestamp": "2026-01-01T10:00:00Z", "transcript_path": "/tmp/t.json"}
		for k, v := range extra {
			m[k] = v
		}
		return payload(m)
	}
	hook(gem("BeforeAgent", map[string]any{"prompt": "Touch the end"}), "turn", "start", "--hook")
	writeFile(t, repo, "shared.txt", linesOf("line", 60, map[int]string{5: "claude 5", 30: "user 30", 55: "gemini 55"}))
	hook(gem("AfterTool", map[string]any{"tool_name": "replace", "tool_input": map[string]any{"file_path": abs("shared.txt"), "old_string": "line 55\n", "new_string": "gemini 55\n"},
		"tool_response": map[string]any{"llmContent": "ok", "returnDisplay": "ok"}}), "turn", "edit", "--hook")
	makefile := linesOf("m", 30, map[int]string{3: "gemini m 3"})
	writeFile(t, repo, "Makefile", makefile)
	hook(gem("AfterTool", map[string]any{"tool_name": "write_file", "tool_input": map[string]any{"file_path": "Makefile", "content": makefile},
		"tool_response": map[string]any{"llmContent": "ok", "returnDisplay": "ok"}}), "turn", "edit", "--hook")

	hook(payload(map[string]any{"session_id": "claude-1", "cwd": repo, "hook_event_name": "Stop"}), "turn", "end", "--hook")
	hook(gem("AfterAgent", map[string]any{"prompt": "Touch the end", "prompt_response": "done", "stop_hook_active": false}), "turn", "end", "--hook")

	// The user, between turns.
	writeFile(t, repo, "README.md", linesOf("r", 10, map[int]string{2: "r 2 by the user"}))

	// An edit tool's stream, in a turn of its own agent.
	tool := hook("", "turn", "start", "--dir", repo, "--agent", "tool-1", "--message", "compat")
	writeFile(t, repo, "COMPAT.md", linesOf("c", 10, map[int]string{7: "tool 7"}))
	hook(editLine(t, map[string]any{"path": abs("COMPAT.md"), "checksum_after": blake3Hex(linesOf("c", 10, map[int]string{7: "tool 7"}))})+"\n", "edits", "--dir", repo)
	hook("", "turn", "end", "--dir", repo, "--agent", "tool-1")

	// The user, after every turn, in another region of Gemini's file.
	writeFile(t, repo, "Makefile", linesOf("m", 30, map[int]string{3: "gemini m 3", 25: "user m 25"}))

	turns := map[string]string{}
	for chat, list := range chatsOf(t, c, sum.Resource) {
		if len(list) == 0 {
			continue
		}
		turns[chatName(sess, chat)] = strings.Split(list[0], ":")[0]
	}
	if turns["tool-1"] != strings.TrimSpace(tool) || turns["claude-1"] == "" || turns["gemini-1"] == "" {
		t.Fatalf("turns by chat: %v", turns)
	}
	both := map[string][]string{
		"README.md":  {"you"},
		"shared.txt": {"claude-1", "you", "gemini-1"},
		"claude.txt": {"claude-1"},
		"Makefile":   {"gemini-1", "you"},
		"COMPAT.md":  {"tool-1"},
	}
	views := map[string]struct {
		uri  string
		want map[string][]string
	}{
		"claude's turn": {expand(t, cat["turn"].URITemplate, map[string]string{"turnId": turns["claude-1"]}), map[string][]string{
			"shared.txt": {"claude-1", "you", "gemini-1"}, "claude.txt": {"claude-1"}, "Makefile": {"gemini-1"},
		}},
		"gemini's turn": {expand(t, cat["turn"].URITemplate, map[string]string{"turnId": turns["gemini-1"]}), map[string][]string{
			"shared.txt": {"gemini-1"}, "Makefile": {"gemini-1"},
		}},
		"the tool's turn": {expand(t, cat["turn"].URITemplate, map[string]string{"turnId": turns["tool-1"]}), map[string][]string{"COMPAT.md": {"tool-1"}}},
		"uncommitted":     {expand(t, cat["uncommitted"].URITemplate, nil), both},
		"session":         {expand(t, cat["session"].URITemplate, nil), both},
	}
	for name, v := range views {
		m := mirrorChangeset(t, c, v.uri)
		var got map[string][]string
		defer func() {
			if t.Failed() && !sameAuthors(got, v.want) {
				t.Logf("%s: authors %v, want %v", name, got, v.want)
			}
		}()
		m.Wait(name+" with every author", func(st protocol.ChangesetState) bool {
			got = authorsByFile(st, repo, sess)
			return ready(st) && sameAuthors(got, v.want)
		})
	}

	// A restart keeps the evidence.
	d.kill(t)
	c.Close()
	d = startDaemonIn(t, state, repo)
	c = d.client(t, "panel")
	catalogue(t, c, sum.Resource)
	for _, name := range []string{"uncommitted", "claude's turn"} {
		v := views[name]
		mirrorChangeset(t, c, v.uri).Wait(name+" after a restart", func(st protocol.ChangesetState) bool {
			return ready(st) && sameAuthors(authorsByFile(st, repo, sess), v.want)
		})
	}

	// Comments on each author's lines, all on Claude's turn but the tool's.
	m := mirrorAnnotations(t, c, requireAnnotationsChannel(t, c, sum))
	shared := "file://" + repo + "/shared.txt"
	annotate(t, m, 1, newAnnotation("on-claude", turns["claude-1"], shared, lineRange(4, 4, 8), "e1", "Name it better."))
	annotate(t, m, 2, newAnnotation("on-gemini", turns["claude-1"], shared, lineRange(54, 54, 9), "e2", "Why 55?"))
	annotate(t, m, 3, newAnnotation("on-you", turns["claude-1"], shared, lineRange(29, 29, 7), "e3", "Note to self."))
	annotate(t, m, 4, newAnnotation("on-tool", turns["tool-1"], "file://"+repo+"/COMPAT.md", lineRange(6, 6, 6), "e4", "Document it."))

	gets := func(out string, want string) {
		t.Helper()
		for _, id := range []string{"on-claude", "on-gemini", "on-you", "on-tool"} {
			if strings.Contains(out, "`"+id+"`") != (id == want) {
				t.Errorf("%s got %s: %v; its feedback:\n%s", want, id, id == want, out)
			}
		}
	}
	out := hook(payload(map[string]any{"session_id": "claude-1", "cwd": repo, "hook_event_name": "UserPromptSubmit", "prompt": "next"}), "turn", "start", "--hook", "--feedback")
	gets(out, "on-claude")
	if !strings.Contains(out, "Lines written by you (this agent).") {
		t.Errorf("Claude's feedback does not say the lines are its own:\n%s", out)
	}
	// Gemini CLI takes its feedback as JSON, added to the prompt.
	var gemOut struct {
		Specific struct {
			Event   string `json:"hookEventName"`
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	raw := hook(gem("BeforeAgent", map[string]any{"prompt": "next"}), "turn", "start", "--hook", "--feedback-json")
	if err := json.Unmarshal([]byte(raw), &gemOut); err != nil || gemOut.Specific.Event != "BeforeAgent" {
		t.Fatalf("Gemini's BeforeAgent hook printed %q: %v", raw, err)
	}
	gets(gemOut.Specific.Context, "on-gemini")
	gets(hook("", "turn", "start", "--dir", repo, "--agent", "tool-1", "--feedback"), "on-tool")
	if a := waitFor(m, "on-you undelivered", "on-you", func(a *protocol.Annotation) bool { return a != nil }); a.Meta[protocol.MetaDelivered] != nil {
		t.Errorf("the comment on the user's own lines was delivered: %v", a.Meta[protocol.MetaDelivered])
	}
}

// With no post-write hook at all, nobody can be told apart: every hunk is
// unknown.
func TestWithoutEvidenceEveryHunkIsUnknown(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": linesOf("a", 20, nil)})
	d := startDaemon(t, repo)
	c := d.client(t, "panel")
	sum := onlySession(t, c)
	turn := d.turnCLI(t, "start", "--dir", repo, "--agent", "claude-1")
	writeFile(t, repo, "a.txt", linesOf("a", 20, map[int]string{2: "agent?", 18: "user?"}))
	d.turnCLI(t, "end", "--dir", repo, "--agent", "claude-1")
	cat := catalogue(t, c, sum.Resource)
	for _, uri := range []string{expand(t, cat["turn"].URITemplate, map[string]string{"turnId": turn}), expand(t, cat["uncommitted"].URITemplate, nil)} {
		mirrorChangeset(t, c, uri).Wait("every hunk unknown", func(st protocol.ChangesetState) bool {
			return ready(st) && sameAuthors(authorsByFile(st, repo, ""), map[string][]string{"a.txt": {"unknown", "unknown"}})
		})
	}
}
