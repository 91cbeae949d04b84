package test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// Stage Turn, on a turn's view, stages exactly what the turn's agent
// wrote (reported through its hooks) and leaves the person's own edits,
// made in the same file during the turn, unstaged; it can be undone.
func TestStageTurnLeavesYourEditsUnstaged(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"shared.txt": linesOf("line", 60, nil)})
	d := startDaemon(t, repo)
	c := d.client(t, "panel")
	sum := onlySession(t, c)
	abs := func(name string) string { return filepath.Join(repo, name) }
	hook := func(fields map[string]any, args ...string) {
		t.Helper()
		fields["cwd"] = repo
		b, _ := json.Marshal(fields)
		d.cliOK(t, string(b), args...)
	}
	cat := catalogue(t, c, sum.Resource)

	hook(map[string]any{"session_id": "claude-1", "hook_event_name": "UserPromptSubmit", "prompt": "Fix line 5"}, "turn", "start", "--hook")
	writeFile(t, repo, "shared.txt", linesOf("line", 60, map[int]string{5: "claude 5"}))
	hook(map[string]any{"session_id": "claude-1", "hook_event_name": "PostToolUse", "tool_name": "Edit",
		"tool_input": map[string]any{"file_path": abs("shared.txt"), "old_string": "line 5\n", "new_string": "claude 5\n"}}, "turn", "edit", "--hook")
	writeFile(t, repo, "claude.txt", "hello from claude\n")
	hook(map[string]any{"session_id": "claude-1", "hook_event_name": "PostToolUse", "tool_name": "Write",
		"tool_input": map[string]any{"file_path": abs("claude.txt"), "content": "hello from claude\n"}}, "turn", "edit", "--hook")
	// The person, in the same file while the agent works.
	writeFile(t, repo, "shared.txt", linesOf("line", 60, map[int]string{5: "claude 5", 30: "user 30"}))
	hook(map[string]any{"session_id": "claude-1", "hook_event_name": "Stop"}, "turn", "end", "--hook")

	var turnID string
	for chat, list := range chatsOf(t, c, sum.Resource) {
		if chatName(sum.Resource, chat) == "claude-1" && len(list) > 0 {
			turnID = strings.Split(list[0], ":")[0]
		}
	}
	if turnID == "" {
		t.Fatal("the turn is not listed")
	}
	turn := expand(t, cat["turn"].URITemplate, map[string]string{"turnId": turnID})
	m := mirrorChangeset(t, c, turn)
	st := m.Wait("Stage Turn offered", func(st protocol.ChangesetState) bool {
		return ready(st) && opIn(st, "stageTurn") != nil
	})
	var confirm string
	json.Unmarshal(opIn(st, "stageTurn").Confirmation, &confirm)
	for _, s := range []string{"claude.txt (the whole file, 1 hunk) and shared.txt (1 hunk)", "Your own edits stay unstaged: shared.txt (1 hunk)"} {
		if !strings.Contains(confirm, s) {
			t.Errorf("Stage Turn's confirmation %q does not say %q", confirm, s)
		}
	}
	res, err := invokeOn(t, c, turn, "stageTurn", nil, nil)
	if err != nil {
		t.Fatalf("stageTurn: %v", err)
	}
	if msg := string(res.Message); !strings.Contains(msg, "Undo Stage") {
		t.Errorf("stageTurn said %s, not that it can be undone", msg)
	}
	if got, want := git(t, repo, "show", ":shared.txt"), linesOf("line", 60, map[int]string{5: "claude 5"}); got != want {
		t.Errorf("staged shared.txt:\n%s\nwant only the agent's line 5", got)
	}
	if got := git(t, repo, "show", ":claude.txt"); got != "hello from claude\n" {
		t.Errorf("staged claude.txt %q", got)
	}
	if got := git(t, repo, "diff", "--name-only"); strings.TrimSpace(got) != "shared.txt" {
		t.Errorf("unstaged after Stage Turn: %q, want the person's edit of shared.txt", got)
	}
	if got := git(t, repo, "diff", "-U0", "--", "shared.txt"); !strings.Contains(got, "+user 30") || strings.Contains(got, "claude 5") {
		t.Errorf("the unstaged diff is not exactly the person's edit:\n%s", got)
	}
}
