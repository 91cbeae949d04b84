package test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestAttributionRecipesFromTheDocs runs the post-write hooks of
// docs/agents.md as each agent would — Claude Code's PostToolUse, Gemini
// CLI's AfterTool, Copilot CLI's postToolUse, Codex CLI's notify and the
// command for everyone else — with the input their references document,
// and checks who each file's change is credited to.
func TestAttributionRecipesFromTheDocs(t *testing.T) {
	t.Parallel()
	xdg := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + xdg}
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemonIn(t, filepath.Join(xdg, "changesetd"), repo)
	c := d.client(t, "panel")
	sum := onlySession(t, c)
	cat := catalogue(t, c, sum.Resource)
	payload := func(m map[string]any) string {
		b, _ := json.Marshal(m)
		return string(b)
	}
	type hooks struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	command := func(block, event, tool string) string {
		t.Helper()
		var h hooks
		if err := json.Unmarshal([]byte(docBlock(t, "json", block)), &h); err != nil {
			t.Fatalf("the %s block: %v", block, err)
		}
		for _, g := range h.Hooks[event] {
			if regexp.MustCompile("^(" + g.Matcher + ")$").MatchString(tool) {
				return g.Hooks[0].Command
			}
		}
		t.Fatalf("the %s block has no %s hook for %s", block, event, tool)
		return ""
	}

	// Claude Code's Write and Edit.
	writeFile(t, repo, "claude.txt", "one\ntwo\n")
	runDocCommand(t, command("settings", "PostToolUse", "Write"), t.TempDir(), payload(map[string]any{
		"session_id": "cc-1", "cwd": repo, "hook_event_name": "PostToolUse", "tool_name": "Write",
		"tool_input": map[string]any{"file_path": filepath.Join(repo, "claude.txt"), "content": "one\ntwo\n"}}), env)
	// A file outside the session and a tool that names no file report
	// nothing, and fail no agent.
	elsewhere := filepath.Join(t.TempDir(), "settings.json")
	runDocCommand(t, command("settings", "PostToolUse", "Write"), t.TempDir(), payload(map[string]any{
		"session_id": "cc-1", "cwd": repo, "hook_event_name": "PostToolUse", "tool_name": "Write",
		"tool_input": map[string]any{"file_path": elsewhere, "content": "{}"}}), env)
	runDocCommand(t, command("settings", "PostToolUse", "Write"), t.TempDir(), payload(map[string]any{
		"session_id": "cc-1", "cwd": repo, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "make"}}), env)
	// Gemini CLI's replace; its standard output must be JSON.
	writeFile(t, repo, "a.txt", "A\n")
	out := runDocCommand(t, command("gemini-settings", "AfterTool", "replace"), t.TempDir(), payload(map[string]any{
		"session_id": "gm-1", "cwd": repo, "hook_event_name": "AfterTool", "timestamp": "2026-01-01T00:00:00Z", "transcript_path": "/tmp/t.json",
		"tool_name": "replace", "tool_input": map[string]any{"file_path": "a.txt", "old_string": "a\n", "new_string": "A\n"},
		"tool_response": map[string]any{"llmContent": "ok", "returnDisplay": "ok"}}), env)
	if json.Unmarshal([]byte(out), new(map[string]any)) != nil {
		t.Errorf("the AfterTool hook printed %q, which Gemini CLI cannot parse as JSON", out)
	}
	// Copilot CLI's create, its arguments a JSON string.
	var copilot struct {
		Hooks map[string][]struct {
			Bash string `json:"bash"`
		} `json:"hooks"`
	}
	json.Unmarshal([]byte(docBlock(t, "json", "copilot-hooks")), &copilot)
	if len(copilot.Hooks["postToolUse"]) != 1 {
		t.Fatal("the Copilot CLI hooks lack one postToolUse command")
	}
	writeFile(t, repo, "copilot.txt", "c\n")
	args, _ := json.Marshal(map[string]any{"path": "copilot.txt", "file_text": "c\n"})
	runDocCommand(t, copilot.Hooks["postToolUse"][0].Bash, t.TempDir(), payload(map[string]any{
		"sessionId": "cp-1", "timestamp": 1767225600000, "cwd": repo, "toolName": "create", "toolArgs": string(args),
		"toolResult": map[string]any{"resultType": "success", "textResultForLlm": "created"}}), env)
	// Everyone else names the files.
	writeFile(t, repo, "notes.txt", "n\n")
	for _, line := range strings.Split(strings.TrimSpace(docBlock(t, "sh", "attribution")), "\n") {
		runDocCommand(t, line, repo, "", env)
	}
	// An edit tool's stream, named by --agent.
	writeFile(t, repo, "tool.txt", "t\n")
	runDocCommand(t, "changesetd edits --agent my-tool", repo, editLine(t, map[string]any{"path": "tool.txt"})+"\n", env)
	// The user.
	writeFile(t, repo, "mine.txt", "m\n")

	sess := sum.Resource
	uncommitted := expand(t, cat["uncommitted"].URITemplate, nil)
	want := map[string][]string{
		"claude.txt":  {"cc-1"},
		"a.txt":       {"gm-1"},
		"copilot.txt": {"cp-1"},
		"notes.txt":   {"my-script"},
		"tool.txt":    {"my-tool"},
		"mine.txt":    {"you"},
	}
	mirrorChangeset(t, c, uncommitted).Wait("every file's author", func(st protocol.ChangesetState) bool {
		return ready(st) && sameAuthors(authorsByFile(st, repo, sess), want)
	})

	// Codex CLI: notify runs the configured program with the event as
	// its last argument. Its turns run from one end to the next, and what
	// changes in them is unknown: Codex reports no writes.
	m := regexp.MustCompile(`(?m)^notify = (\[.*\])$`).FindStringSubmatch(docBlock(t, "toml", "codex-config"))
	if m == nil {
		t.Fatal("the Codex CLI block has no notify line")
	}
	var argv []string
	if err := json.Unmarshal([]byte(m[1]), &argv); err != nil || len(argv) == 0 || argv[0] != "changesetd" {
		t.Fatalf("notify = %s: %v", m[1], err)
	}
	notify := func(turnID string) {
		t.Helper()
		ev := payload(map[string]any{"type": "agent-turn-complete", "thread-id": "cx-1", "turn-id": turnID, "cwd": repo,
			"input-messages": []string{"Rename it"}, "last-assistant-message": "Renamed."})
		cmd := exec.Command(binary, append(argv[1:], ev)...)
		cmd.Env = append(cleanEnv(), env...)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
			t.Fatalf("notify: %v, printed %q", err, out)
		}
	}
	notify("t-1")
	writeFile(t, repo, "codex.txt", "x\n")
	notify("t-2")
	turns := chatsOf(t, c, sum.Resource)[protocol.ChatURI(sess, "cx-1")]
	if len(turns) != 2 || !strings.HasPrefix(turns[1], "*") {
		t.Fatalf("Codex's chat has turns %v; want one ended and one running", turns)
	}
	id, _, _ := strings.Cut(turns[0], ":")
	mirrorChangeset(t, c, expand(t, cat["turn"].URITemplate, map[string]string{"turnId": id})).Wait("Codex's turn, unknown", func(st protocol.ChangesetState) bool {
		return ready(st) && sameAuthors(authorsByFile(st, repo, sess), map[string][]string{"codex.txt": {"unknown"}})
	})
}
