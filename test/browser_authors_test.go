package test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// hunkAuthors is the JavaScript for the author labels of the hunks shown,
// joined by "|".
const hunkAuthors = `[...document.querySelectorAll('#diff tr.hunk .hunk-author')].map(s => s.textContent).join('|')`

// TestBrowserHunkAuthors: the page marks each hunk with who wrote it, as
// a label with an icon, and filters the files by author; with no
// post-write hook at all it says how to turn attribution on.
func TestBrowserHunkAuthors(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"f.txt": pageLines(40), "g.txt": "g\n"})
	d := startDaemon(t, repo)
	b.do(chromedp.Navigate(d.Review))
	writeFile(t, repo, "g.txt", "g\nmore\n")
	b.waitFor("no evidence: the note says how to turn it on", `document.getElementById('diff-path').textContent !== '' && !document.getElementById('author-note').hidden && document.getElementById('author-filter').hidden`)

	// An agent writes line 3 and reports it; the user then edits line 35.
	agentText := strings.Replace(pageLines(40), "line 3\n", "line three\n", 1)
	writeFile(t, repo, "f.txt", agentText)
	in, _ := json.Marshal(map[string]any{"session_id": "claude-1", "cwd": repo, "hook_event_name": "PostToolUse", "tool_name": "Edit",
		"tool_input": map[string]any{"file_path": filepath.Join(repo, "f.txt"), "old_string": "line 3\n", "new_string": "line three\n"}})
	d.cliOK(t, string(in), "turn", "edit", "--hook")
	writeFile(t, repo, "f.txt", strings.Replace(agentText, "line 35\n", "line thirty-five\n", 1))

	b.click("f.txt", `#files li.file[data-path="f.txt"]`)
	b.waitFor("each hunk labelled with its author", hunkAuthors+` === '◆ claude-1|● you'`)
	b.waitFor("the note gone, the filter offered", `document.getElementById('author-note').hidden && !document.getElementById('author-filter').hidden`)
	var opts string
	b.eval(`[...document.querySelectorAll('#author-filter option')].map(o => o.textContent).join('|')`, &opts)
	if opts != "Everyone|◆ claude-1|● you" {
		t.Errorf("the author filter offers %q", opts)
	}
	var title string
	b.eval(`document.querySelector('#diff tr.hunk .hunk-author').title`, &title)
	if !strings.Contains(title, "claude-1") {
		t.Errorf("the first hunk's label is titled %q", title)
	}

	// Only the agent's files: g.txt (the user's) leaves the list.
	var ok bool
	b.eval(`(() => { const s = document.getElementById('author-filter'); s.value = [...s.options].find(o => o.textContent === '◆ claude-1').value; s.dispatchEvent(new Event('change')); return s.value !== '' })()`, &ok)
	b.waitFor("only the agent's file listed", `[...document.querySelectorAll('#files li.file')].length === 1 && !!`+fileRow("f.txt"))
	// The user's hunk of that file is listed apart, not hidden.
	b.waitFor("the other author's hunk set apart", `[...document.querySelectorAll('#diff tr.hunk')].map(r => r.classList.contains('other-author') ? 'apart' : 'own').join() === 'own,apart'`)
	b.shot("40-hunk-authors")

	// Beside the filter: stage this agent's changes, and only those.
	b.waitFor("the agent's operations beside the filter", `[...document.querySelectorAll('#author-ops button')].map(b => b.textContent).join('|') === "Stage this agent's changes|Revert this agent's changes"`)
	b.click("Stage this agent's changes", `#author-ops button[data-op="stageAuthor"]`)
	b.waitFor("the confirmation", `document.getElementById('confirm').open`)
	b.click("Confirm", `#confirm-ok`)
	b.waitFor("the stage's result", `[...document.querySelectorAll('#toasts .toast')].some(t => t.textContent.startsWith("Staged claude-1's changes: f.txt (1 hunk)"))`)
	cached := git(t, repo, "diff", "--cached")
	if !strings.Contains(cached, "+line three") || strings.Contains(cached, "thirty-five") || strings.Contains(cached, "g.txt") {
		t.Errorf("staged:\n%s", cached)
	}
}
