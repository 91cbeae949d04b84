package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// docBlock returns the fenced block of docs/agents.md whose info string is
// "<lang> <name>".
func docBlock(t *testing.T, lang, name string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)```" + lang + " " + name + "\n(.*?)```")
	m := re.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/agents.md has no ```%s %s block", lang, name)
	}
	return string(m[1])
}

// runDocCommand runs one command from the doc the way an agent would:
// through sh, with the daemon binary on PATH and the default state dir.
func runDocCommand(t *testing.T, command, dir, stdin string, env []string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	return string(out)
}

func TestAgentRecipesFromTheDocs(t *testing.T) {
	xdg := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + xdg}
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	// The daemon uses the default state dir the commands will look in.
	d := startDaemonIn(t, filepath.Join(xdg, "changesetd"), repo)
	c := d.client(t, "panel")
	sum := onlySession(t, c)

	// Claude Code: run the configured hook commands with the JSON Claude
	// Code sends on stdin.
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(docBlock(t, "json", "settings")), &settings); err != nil {
		t.Fatalf("the settings block is not valid JSON: %v", err)
	}
	hook := func(event string) string {
		h := settings.Hooks[event]
		if len(h) != 1 || len(h[0].Hooks) != 1 || h[0].Hooks[0].Type != "command" {
			t.Fatalf("settings lack one %s command hook", event)
		}
		return h[0].Hooks[0].Command
	}
	sub := filepath.Join(repo, "sub")
	os.MkdirAll(sub, 0o755)
	in, _ := json.Marshal(map[string]any{"session_id": "cc-1", "cwd": sub, "hook_event_name": "UserPromptSubmit", "prompt": "Rename the helper"})
	if out := runDocCommand(t, hook("UserPromptSubmit"), t.TempDir(), string(in), env); out != "" {
		t.Errorf("the UserPromptSubmit hook printed %q; it must print nothing", out)
	}
	writeFile(t, repo, "sub/new.txt", "new\n")
	stop, _ := json.Marshal(map[string]any{"session_id": "cc-1", "cwd": sub, "hook_event_name": "Stop", "stop_hook_active": false})
	runDocCommand(t, hook("Stop"), t.TempDir(), string(stop), env)
	// A second Stop with no turn running is fine.
	runDocCommand(t, hook("Stop"), t.TempDir(), string(stop), env)

	// Generic: the commands exactly as written, from inside the project.
	var printed []string
	for _, line := range strings.Split(strings.TrimSpace(docBlock(t, "sh", "generic")), "\n") {
		if strings.Contains(line, "turn start") {
			writeFile(t, repo, "a.txt", "a\nmore\n")
		}
		printed = append(printed, strings.TrimSpace(runDocCommand(t, line, repo, "", env)))
		if strings.Contains(line, "turn start") {
			writeFile(t, repo, "b.txt", "b\n")
		}
	}
	if len(printed) != 2 || printed[0] == "" || printed[0] != printed[1] {
		t.Fatalf("generic recipe printed %q; want the same turn id from start and end", printed)
	}

	// The hook's turn is in the chat of its agent session (session_id
	// cc-1), the generic one in the session's default chat.
	id := strings.TrimPrefix(sum.Resource, protocol.SessionScheme+"/")
	chats := chatsOf(t, c, sum.Resource)
	hookChat, defaultChat := chats[protocol.ChatScheme+"/"+id+"/cc-1"], chats[protocol.ChatScheme+"/"+id]
	if len(chats) != 2 || len(hookChat) != 1 || len(defaultChat) != 1 || !strings.HasPrefix(defaultChat[0], printed[0]+":") {
		t.Fatalf("chats = %v; want the hook's turn in the cc-1 chat and %s ended in the default chat", chats, printed[0])
	}
	done := []string{strings.Split(hookChat[0], ":")[0], printed[0]}
	cat := catalogue(t, c, sum.Resource)
	first := changesetSummary(t, c, expand(t, cat["turn"].URITemplate, map[string]string{"turnId": done[0]}), repo)
	if !slices.Equal(first, []string{"add sub/new.txt +1 -0"}) {
		t.Errorf("the hook turn = %v", first)
	}
	second := changesetSummary(t, c, expand(t, cat["turn"].URITemplate, map[string]string{"turnId": done[1]}), repo)
	if !slices.Equal(second, []string{"add b.txt +1 -0"}) {
		t.Errorf("the generic turn = %v (a.txt was edited before it started)", second)
	}
}
