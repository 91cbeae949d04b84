package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// Two agents (Claude Code and Gemini CLI, through their hooks) and the
// user edit regions of one file and files of their own. Staging Claude's
// changes on the uncommitted changeset stages exactly its hunks; reverting
// them on its turn takes back exactly its hunks, leaves the others', and
// one undo brings them back.
func TestStageAndRevertOneAgentsChanges(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{
		"shared.txt": linesOf("line", 60, nil),
		"Makefile":   linesOf("m", 30, nil),
	})
	d := startDaemon(t, repo)
	c := d.client(t, "panel")
	sum := onlySession(t, c)
	sess := sum.Resource
	payload := func(fields map[string]any) string {
		b, _ := json.Marshal(fields)
		return string(b)
	}
	hook := func(fields map[string]any, args ...string) {
		t.Helper()
		fields["cwd"] = repo
		d.cliOK(t, payload(fields), args...)
	}
	abs := func(name string) string { return filepath.Join(repo, name) }
	cat := catalogue(t, c, sum.Resource)

	hook(map[string]any{"session_id": "claude-1", "hook_event_name": "UserPromptSubmit", "prompt": "Fix line 5"}, "turn", "start", "--hook")
	writeFile(t, repo, "shared.txt", linesOf("line", 60, map[int]string{5: "claude 5"}))
	hook(map[string]any{"session_id": "claude-1", "hook_event_name": "PostToolUse", "tool_name": "Edit",
		"tool_input": map[string]any{"file_path": abs("shared.txt"), "old_string": "line 5\n", "new_string": "claude 5\n"}}, "turn", "edit", "--hook")
	writeFile(t, repo, "claude.txt", "hello from claude\n")
	hook(map[string]any{"session_id": "claude-1", "hook_event_name": "PostToolUse", "tool_name": "Write",
		"tool_input": map[string]any{"file_path": abs("claude.txt"), "content": "hello from claude\n"}}, "turn", "edit", "--hook")

	// The user, in the same file while Claude works.
	writeFile(t, repo, "shared.txt", linesOf("line", 60, map[int]string{5: "claude 5", 30: "user 30"}))

	gem := func(event string, extra map[string]any) map[string]any {
		m := map[string]any{"session_id": "gemini-1", "hook_event_name": event, "timestamp": "2026-01-01T10:00:00Z", "transcript_path": "/tmp/t.json"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	hook(gem("BeforeAgent", map[string]any{"prompt": "Touch the end"}), "turn", "start", "--hook")
	writeFile(t, repo, "shared.txt", linesOf("line", 60, map[int]string{5: "claude 5", 30: "user 30", 55: "gemini 55"}))
	hook(gem("AfterTool", map[string]any{"tool_name": "replace", "tool_input": map[string]any{"file_path": abs("shared.txt"), "old_string": "line 55\n", "new_string": "gemini 55\n"}}), "turn", "edit", "--hook")
	makefile := linesOf("m", 30, map[int]string{3: "gemini m 3"})
	writeFile(t, repo, "Makefile", makefile)
	hook(gem("AfterTool", map[string]any{"tool_name": "write_file", "tool_input": map[string]any{"file_path": "Makefile", "content": makefile}}), "turn", "edit", "--hook")

	hook(map[string]any{"session_id": "claude-1", "hook_event_name": "Stop"}, "turn", "end", "--hook")
	hook(gem("AfterAgent", map[string]any{"prompt_response": "done"}), "turn", "end", "--hook")

	var claudeTurn string
	for chat, list := range chatsOf(t, c, sum.Resource) {
		if chatName(sess, chat) == "claude-1" && len(list) > 0 {
			claudeTurn = strings.Split(list[0], ":")[0]
		}
	}
	if claudeTurn == "" {
		t.Fatal("Claude's turn is not listed")
	}

	// Stage Claude's changes on the uncommitted changeset.
	want := map[string][]string{
		"shared.txt": {"claude-1", "you", "gemini-1"},
		"claude.txt": {"claude-1"},
		"Makefile":   {"gemini-1"},
	}
	uncommitted := expand(t, cat["uncommitted"].URITemplate, nil)
	um := mirrorChangeset(t, c, uncommitted)
	st := um.Wait("every author, and the operations by author", func(st protocol.ChangesetState) bool {
		return ready(st) && sameAuthors(authorsByFile(st, repo, sess), want) && opIn(st, "stageAuthor") != nil
	})
	var confirm string
	json.Unmarshal(opIn(st, "stageAuthor").Confirmation, &confirm)
	for _, s := range []string{"claude-1: claude.txt (the whole file, 1 hunk) and shared.txt (1 hunk); gemini-1: Makefile (the whole file, 1 hunk) and shared.txt (1 hunk); you: shared.txt (1 hunk)."} {
		if !strings.Contains(confirm, s) {
			t.Errorf("stageAuthor's confirmation %q does not say %q", confirm, s)
		}
	}
	for _, meta := range []map[string]any{nil, {"author": protocol.ChatURI(sess, "nobody")}, {"author": "unknown"}} {
		if _, err := invokeOn(t, c, uncommitted, "stageAuthor", nil, meta); rpcCode(err) != protocol.CodeInvalidParams {
			t.Errorf("stageAuthor with _meta %v: %v, want -32602", meta, err)
		}
	}
	if got := git(t, repo, "diff", "--cached", "--name-only"); got != "" {
		t.Errorf("refused invocations staged %q", got)
	}
	res, err := invokeOn(t, c, uncommitted, "stageAuthor", nil, map[string]any{"author": protocol.ChatURI(sess, "claude-1")})
	if err != nil {
		t.Fatalf("stageAuthor: %v", err)
	}
	if msg := string(res.Message); !strings.Contains(msg, "shared.txt (1 hunk)") || !strings.Contains(msg, "claude.txt (the whole file, 1 hunk)") {
		t.Errorf("stageAuthor said %s", msg)
	}
	cached := git(t, repo, "diff", "--cached", "--unified=0")
	unstaged := git(t, repo, "diff", "--unified=0")
	for _, s := range []string{"+claude 5", "+hello from claude"} {
		if !strings.Contains(cached, s) {
			t.Errorf("staged diff lacks %q:\n%s", s, cached)
		}
	}
	for _, s := range []string{"user 30", "gemini"} {
		if strings.Contains(cached, s) {
			t.Errorf("staged diff holds %q:\n%s", s, cached)
		}
		if !strings.Contains(unstaged, s) {
			t.Errorf("unstaged diff lacks %q:\n%s", s, unstaged)
		}
	}
	if strings.Contains(unstaged, "claude") {
		t.Errorf("unstaged diff holds Claude's lines:\n%s", unstaged)
	}

	// Revert Claude's changes on its turn: its hunks go, the others' stay.
	turn := expand(t, cat["turn"].URITemplate, map[string]string{"turnId": claudeTurn})
	tm := mirrorChangeset(t, c, turn)
	tm.Wait("Claude's turn with every author", func(st protocol.ChangesetState) bool {
		return ready(st) && sameAuthors(authorsByFile(st, repo, sess), want) && opIn(st, "revertAuthor") != nil
	})
	if _, err := invokeOn(t, c, turn, "revertAuthor", nil, map[string]any{"author": protocol.ChatURI(sess, "claude-1")}); err != nil {
		t.Fatalf("revertAuthor: %v", err)
	}
	if got := string(readFileT(t, repo, "shared.txt")); got != linesOf("line", 60, map[int]string{30: "user 30", 55: "gemini 55"}) {
		t.Errorf("after the revert shared.txt is\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "claude.txt")); err == nil {
		t.Error("claude.txt, Claude's new file, is still there after the revert")
	}
	if got := string(readFileT(t, repo, "Makefile")); got != makefile {
		t.Errorf("after the revert Makefile is\n%s", got)
	}

	// One undo brings Claude's hunks back.
	tm.Wait("undo offered", func(st protocol.ChangesetState) bool {
		o := opIn(st, "undo")
		return o != nil && o.Status == protocol.OpIdle
	})
	if _, err := invokeOn(t, c, turn, "undo", nil, nil); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if got := string(readFileT(t, repo, "shared.txt")); got != linesOf("line", 60, map[int]string{5: "claude 5", 30: "user 30", 55: "gemini 55"}) {
		t.Errorf("after the undo shared.txt is\n%s", got)
	}
	if got := string(readFileT(t, repo, "claude.txt")); got != "hello from claude\n" {
		t.Errorf("after the undo claude.txt is %q", got)
	}

	// A file changed since the turn is no longer the content its hunks
	// were published on: the revert is refused and writes nothing.
	changed := linesOf("line", 60, map[int]string{5: "claude 5", 30: "user 30", 40: "user 40", 55: "gemini 55"})
	writeFile(t, repo, "shared.txt", changed)
	tm.Wait("revertAuthor offered again", func(st protocol.ChangesetState) bool {
		o := opIn(st, "revertAuthor")
		return ready(st) && o != nil && o.Status == protocol.OpIdle
	})
	_, err = invokeOn(t, c, turn, "revertAuthor", nil, map[string]any{"author": protocol.ChatURI(sess, "claude-1")})
	if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonFileChanged {
		t.Errorf("revertAuthor with shared.txt changed since the turn: %v, want -32011 fileChanged", err)
	}
	if got := string(readFileT(t, repo, "shared.txt")); got != changed {
		t.Errorf("a refused revert left shared.txt\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "claude.txt")); err != nil {
		t.Errorf("a refused revert removed claude.txt: %v", err)
	}
}
