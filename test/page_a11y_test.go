package test

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// axeSource is axe-core, vendored for the tests only (testdata/axe).
//
//go:embed testdata/axe/axe.min.js
var axeSource string

// treeRepo is a repository with changes in two folders and at the top.
func treeRepo(t *testing.T) string {
	t.Helper()
	repo := gitRepo(t, map[string]string{"src/a/x.go": "package a\n", "src/b/y.go": "package b\n", "top.txt": "top\n"})
	writeFile(t, repo, "src/a/x.go", "package a\n\nvar X = 1\n")
	writeFile(t, repo, "src/b/y.go", "package b\n\nvar Y = 2\n")
	writeFile(t, repo, "top.txt", "top\nmore\n")
	return repo
}

// active is the JavaScript naming the focused element: a tree row by its
// file's path or "dir:" and its folder, else its id.
const active = `(() => { const e = document.activeElement; if (!e) return ''; if (e.dataset.dir !== undefined) return 'dir:' + e.dataset.dir; return e.dataset.path || e.id; })()`

// TestPageFileTreeKeyboard: the file list is a tree with one tab stop.
// Tab reaches it from the filter, the arrows move in it, Left and Right
// fold and unfold a folder, Enter opens a file.
func TestPageFileTreeKeyboard(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t, treeRepo(t))
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("the tree", `document.querySelectorAll('#files li.file').length === 3 && !!document.querySelector('#diff tr.hunk')`)

	var tree struct {
		Role  string   `json:"role"`
		Stops []string `json:"stops"`
		Items []string `json:"items"`
	}
	b.eval(`({
		role: document.getElementById('files').getAttribute('role'),
		stops: [...document.querySelectorAll('#files [tabindex], #files input, #files button')].filter((e) => e.tabIndex >= 0).map((e) => e.dataset.path || e.dataset.dir || e.tagName),
		items: [...document.querySelectorAll('#files li[role=treeitem]')].map((li) => li.getAttribute('aria-level') + ':' + (li.dataset.path || li.dataset.dir) + ':' + (li.getAttribute('aria-expanded') ?? li.getAttribute('aria-selected'))),
	})`, &tree)
	if tree.Role != "tree" {
		t.Errorf("the file list's role is %q, want tree", tree.Role)
	}
	if len(tree.Stops) != 1 || tree.Stops[0] != "src/a/x.go" {
		t.Errorf("the file list's tab stops are %q, want the selected file's row alone", tree.Stops)
	}
	want := []string{"1:src:true", "2:src/a:true", "3:src/a/x.go:true", "2:src/b:true", "3:src/b/y.go:false", "1:top.txt:false"}
	if strings.Join(tree.Items, " ") != strings.Join(want, " ") {
		t.Errorf("tree items (level:path:expanded or selected)\n got %q\nwant %q", tree.Items, want)
	}

	// From the filter, Tab goes past the note on authors (one line that
	// opens) to the tree's one row, and one more Tab leaves the tree.
	b.do(chromedp.Click(`#filter`))
	b.do(chromedp.KeyEvent(kb.Tab))
	b.waitFor("Tab: the note on authors", `document.activeElement.matches('#author-note summary')`)
	b.do(chromedp.KeyEvent(kb.Tab))
	b.waitFor("Tab: x.go's row", active+` === 'src/a/x.go'`)
	b.do(chromedp.KeyEvent(kb.ArrowDown))
	b.waitFor("Down: src/b", active+` === 'dir:src/b'`)
	b.do(chromedp.KeyEvent(kb.ArrowLeft))
	b.waitFor("Left folds src/b", `document.querySelector('#files li.dir[data-dir="src/b"]').getAttribute('aria-expanded') === 'false' && !document.querySelector('#files li.file[data-path="src/b/y.go"]') && `+active+` === 'dir:src/b'`)
	b.do(chromedp.KeyEvent(kb.ArrowRight))
	b.waitFor("Right unfolds it", `document.querySelector('#files li.dir[data-dir="src/b"]').getAttribute('aria-expanded') === 'true' && !!document.querySelector('#files li.file[data-path="src/b/y.go"]')`)
	b.do(chromedp.KeyEvent(kb.ArrowRight))
	b.waitFor("Right enters it: y.go", active+` === 'src/b/y.go'`)
	b.do(chromedp.KeyEvent(kb.ArrowLeft))
	b.waitFor("Left: back to its folder", active+` === 'dir:src/b'`)
	b.do(chromedp.KeyEvent(kb.End))
	b.waitFor("End: top.txt", active+` === 'top.txt'`)
	var shown string
	b.eval(`document.getElementById('diff-path').textContent`, &shown)
	if shown != "src/a/x.go" {
		t.Errorf("moving in the tree opened %q; only Enter opens", shown)
	}
	b.do(chromedp.KeyEvent(kb.Enter))
	b.waitFor("Enter opens top.txt", `document.getElementById('diff-path').textContent === 'top.txt' && `+fileRow("top.txt")+`.getAttribute('aria-selected') === 'true'`)
	b.do(chromedp.KeyEvent(" "))
	b.waitFor("Space ticks it reviewed, the focus stays on it", fileRow("top.txt")+`.classList.contains('is-reviewed') && `+active+` === 'top.txt'`)
	// Right after, while the tick's echo may still re-render the tree:
	// the row keys go to the focused row, wherever the render puts it.
	b.do(chromedp.KeyEvent(kb.Home))
	b.waitFor("Home: src", active+` === 'dir:src'`)
	b.do(chromedp.KeyEvent(kb.Tab))
	b.waitFor("Tab leaves the tree", `!document.getElementById('files').contains(document.activeElement)`)
	var stops int
	b.eval(`[...document.querySelectorAll('#files li[data-key]')].filter((li) => li.tabIndex === 0).length`, &stops)
	if stops != 1 {
		t.Errorf("after moving, the tree has %d tab stops, want 1", stops)
	}
}

// TestPageSingleKeysOff: the single-key shortcuts are turned off in the
// help, stay off after a reload, and on again.
func TestPageSingleKeysOff(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t, treeRepo(t))
	b.do(chromedp.Navigate(d.Review))
	selected := `document.getElementById('diff-path').textContent`
	b.waitFor("x.go shown", selected+` === 'src/a/x.go'`)
	b.do(chromedp.KeyEvent("j"))
	b.waitFor("j: y.go", selected+` === 'src/b/y.go'`)

	b.click("the keys' help", `#help-open`)
	b.waitFor("the help", `document.getElementById('help').open`)
	b.click("the shortcuts' box", `#single-keys`)
	b.click("Close", `#help-close`)
	b.waitFor("the help closed, the note shown", `!document.getElementById('help').open && !document.getElementById('keys-off').hidden`)
	for _, k := range []string{"j", "k", "s", "?"} {
		b.do(chromedp.KeyEvent(k))
	}
	var state struct {
		Path  string `json:"path"`
		Split bool   `json:"split"`
		Help  bool   `json:"help"`
	}
	read := func() {
		b.eval(`({ path: `+selected+`, split: !!document.querySelector('#diff table.split'), help: document.getElementById('help').open })`, &state)
	}
	read()
	if state.Path != "src/b/y.go" || state.Split || state.Help {
		t.Errorf("with the shortcuts off, j k s ? still acted: %+v", state)
	}

	// After a reload: s and ? act at once when they act at all (j would
	// race the selection the reload restores).
	b.do(chromedp.Reload())
	b.waitFor("reloaded", `!!document.querySelector('#diff table.unified tr.hunk') && !document.getElementById('keys-off').hidden`)
	b.do(chromedp.KeyEvent("s"), chromedp.KeyEvent("?"))
	read()
	if state.Split || state.Help {
		t.Errorf("after a reload the shortcuts are on again: %+v", state)
	}
	b.click("the keys' help", `#help-open`)
	b.click("the shortcuts' box", `#single-keys`)
	b.click("Close", `#help-close`)
	b.waitFor("the note gone", `document.getElementById('keys-off').hidden`)
	b.do(chromedp.KeyEvent("s"))
	b.waitFor("s acts again", `!!document.querySelector('#diff table.split')`)
}

// axeFinding is one rule axe-core found broken.
type axeFinding struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axeCheck runs axe-core on the page as it is and fails on every finding
// of the serious or critical kind.
func (b *browser) axeCheck(view string) {
	b.t.Helper()
	var loaded bool
	b.eval(`typeof window.axe === 'object'`, &loaded)
	if !loaded {
		b.eval(axeSource+"\n;true", nil)
	}
	var found []axeFinding
	b.eval(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations
		.filter((v) => v.impact === 'serious' || v.impact === 'critical')
		.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 6).map((n) => n.target.join(' ') + ' — ' + n.failureSummary) })))`, &found)
	for _, f := range found {
		b.t.Errorf("%s: axe %s (%s): %s\n  %s", view, f.ID, f.Impact, f.Help, strings.Join(f.Nodes, "\n  "))
	}
	if len(found) > 0 {
		b.shot(fmt.Sprintf("axe-%s-%s", sanitize(b.t.Name()), sanitize(view)))
	}
}

// TestPageAxe runs axe-core on the page's main views: the session list,
// the file tree and a diff as the page opens, side by side, a comment
// box open on chosen lines, the keys' help and the commit dialog. No
// finding of the serious or critical kind is allowed.
func TestPageAxe(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := treeRepo(t)
	d := startDaemon(t, repo)
	// axe is loaded into the page from outside; the page's own CSP is
	// for its own scripts.
	b.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
		return err
	}))
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("the page", `document.querySelectorAll('#sessions li').length === 1 && document.querySelectorAll('#files li.file').length === 3 && !!document.querySelector('#diff tr.hunk') && !!document.querySelector('#cs-ops button')`)
	b.axeCheck("sessions, files and diff")

	b.do(chromedp.KeyEvent("s"))
	b.waitFor("side by side", `!!document.querySelector('#diff table.split')`)
	b.axeCheck("side by side")
	b.do(chromedp.KeyEvent("s"))

	b.waitFor("unified", `!!document.querySelector('#diff table.unified tr.line')`)
	b.do(chromedp.KeyEvent("v"), chromedp.KeyEvent("c"))
	b.waitFor("the comment box", `!!document.querySelector('#diff .composer textarea')`)
	b.axeCheck("comment box")
	b.do(chromedp.KeyEvent(kb.Escape))

	b.click("the keys' help", `#help-open`)
	b.waitFor("the help", `document.getElementById('help').open`)
	b.axeCheck("help")
	b.click("Close", `#help-close`)

	b.click("Commit", `#cs-ops button[data-op="commit"]`)
	b.waitFor("the commit dialog", `document.getElementById('commit-dialog').open`)
	b.axeCheck("commit dialog")
	b.click("Cancel", `#commit-cancel`)

	b.do(darkMode(true))
	b.waitFor("dark", `matchMedia('(prefers-color-scheme: dark)').matches`)
	b.axeCheck("dark")
}
