package test

import (
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
)

// hookTurn runs "changesetd turn start|end --hook" as the Claude Code
// hooks of docs/agents.md do, for the agent session id in repo.
func (d *daemon) hookTurn(t *testing.T, edge, id, repo, prompt string) {
	t.Helper()
	in := map[string]any{"session_id": id, "cwd": repo, "hook_event_name": "Stop"}
	if edge == "start" {
		in["hook_event_name"], in["prompt"] = "UserPromptSubmit", prompt
	}
	b, _ := json.Marshal(in)
	d.cliOK(t, string(b), "turn", edge, "--hook")
}

// TestBrowserAgentChats checks that the timeline shows the turns of every
// chat of the session, each labelled with its agent: those the Claude Code
// hooks record on the agent's own chat, those of --agent, and those of the
// default chat; a chat that appears while the page is open shows at once.
// A turn left running says who runs it, since when, and how to end it, and
// every operation it disables says so.
func TestBrowserAgentChats(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	writeFile(t, repo, "b.txt", "b\nB\n")
	d := startDaemon(t, repo)
	d.hookTurn(t, "start", "cc-hook-1", repo, "hooked prompt")
	writeFile(t, repo, "a.txt", "a\nmore a\n")
	d.hookTurn(t, "end", "cc-hook-1", repo, "")
	d.turnCLI(t, "start", "--dir", repo, "--agent", "bot", "--message", "named agent")
	d.turnCLI(t, "end", "--dir", repo, "--agent", "bot")
	d.turnCLI(t, "start", "--dir", repo, "--message", "default chat")
	d.turnCLI(t, "end", "--dir", repo)

	b.do(chromedp.Navigate(d.Review))
	turns := `[...document.querySelectorAll('#turns li.turn')].map(li => li.textContent)`
	b.waitFor("three turns, newest first, by agent", `(() => {
		const t = `+turns+`;
		return t.length === 3 && t[0].includes('default chat') && t[0].includes('no agent') &&
			t[1].includes('named agent') && t[1].includes('agent bot') &&
			t[2].includes('hooked prompt') && t[2].includes('agent cc-hook-1') && t[2].includes('+1 −0');
	})()`)
	b.click("the hook's turn", `#turns li.turn[data-agent="cc-hook-1"] .name`)
	b.waitFor("the hook turn's changeset", `document.getElementById('cs-label').textContent.includes('hooked prompt') &&
		document.querySelectorAll('#files li.file').length === 1 && !!document.querySelector('#files li.file[data-path="a.txt"]')`)
	b.click("Uncommitted", `#catalog li[data-kind="uncommitted"]`)
	b.waitFor("the operations enabled", `!!document.querySelector('#cs-ops button[data-op="commit"]') && !document.querySelector('#cs-ops button[data-op="commit"]').disabled && document.getElementById('running').hidden`)

	// A second Claude Code session starts a turn while the page is open:
	// its chat is new, and its running turn holds the operations.
	d.hookTurn(t, "start", "cc-hook-2", repo, "still going")
	b.waitFor("the new chat's running turn", `(() => {
		const li = document.querySelector('#turns li.turn.running[data-agent="cc-hook-2"]');
		return li && li.textContent.includes('still going') && li.textContent.includes('running since');
	})()`)
	const end = "changesetd turn end --agent cc-hook-2"
	b.waitFor("the operations disabled, saying why and how to end the turn", `(() => {
		const ops = [...document.querySelectorAll('#cs-ops button.op, #file-ops button.op')];
		const run = document.getElementById('running');
		return ops.length >= 4 && ops.every(b => b.disabled && b.title.includes('still going') && b.title.includes(`+js(end)+`)) &&
			!run.hidden && run.innerText.includes('Turn running') && run.innerText.includes('agent cc-hook-2') &&
			run.innerText.includes(`+js(end)+`) && run.innerText.includes('Commit');
	})()`)
	b.shot("20-running-turn")
	d.turnCLI(t, "end", "--dir", repo, "--agent", "cc-hook-2")
	b.waitFor("the operations enabled again, the note gone", `(() => {
		const ops = [...document.querySelectorAll('#cs-ops button.op, #file-ops button.op')];
		const on = (id) => ops.some(b => b.dataset.op === id && !b.disabled);
		return ops.length >= 4 && ops.every(b => !b.title.includes('still going')) && on('commit') && on('revert') && on('stage') &&
			document.getElementById('running').hidden &&
			document.querySelectorAll('#turns li.turn').length === 4 && !document.querySelector('#turns li.turn.running');
	})()`)
}
