package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/changesetd/changesetd/protocol"
)

// TestBrowserUndoHunkTellsWhy: an agent's turn changes two places of a
// file; the reviewer undoes each hunk with a reason, once with the keys
// (n to the hunk, U, the reason, Ctrl+Enter) and once with the hunk's
// button and the box's button. Each hunk goes back to its version before
// on disk, and the agent's next prompt (changesetd turn start --hook
// --feedback) names the file, the lines it had written and the reason.
// When the revert is refused (git's index moved since it was shown), the
// comment is taken back; when the comment is refused (its line was edited
// since), nothing is undone: either way nothing is left.
func TestBrowserUndoHunkTellsWhy(t *testing.T) {
	t.Parallel()
	base := pageLines(40)
	repo := gitRepo(t, map[string]string{"f.go": base})
	d := startDaemon(t, repo)
	c := d.client(t, "ide")
	sum := onlySession(t, c)
	m := mirrorAnnotations(t, c, requireAnnotationsChannel(t, c, sum))
	hook := func(event string, args ...string) string {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"session_id": "cc-1", "cwd": repo, "hook_event_name": event, "prompt": "work"})
		return d.cliOK(t, string(in), args...)
	}
	readF := func() string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(repo, "f.go"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// The agent's turn: three lines after line 5, line 30 changed.
	hook("UserPromptSubmit", "turn", "start", "--hook", "--feedback")
	edited := strings.Replace(strings.Replace(base, "line 5\n", "line 5\nadded a\nadded b\nadded c\n", 1), "line 30\n", "line thirty\n", 1)
	writeFile(t, repo, "f.go", edited)
	hook("Stop", "turn", "end", "--hook")

	b := newBrowser(t)
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("f.go's two hunks", `document.getElementById('diff-path').textContent === 'f.go' && document.querySelectorAll('#diff tr.hunk').length === 2 && !document.querySelector('#diff tr.hunk button.hunk-undo-why').disabled`)

	// withText: a comment whose one entry ends with the reason.
	withText := func(reason string) func(protocol.AnnotationsState) bool {
		return func(st protocol.AnnotationsState) bool {
			return slices.ContainsFunc(st.Annotations, func(a protocol.Annotation) bool {
				return len(a.Entries) == 1 && strings.HasSuffix(a.Entries[0].Text.Text, "Why: "+reason)
			})
		}
	}

	// With the keys: n goes to the first hunk, U asks why.
	b.do(chromedp.KeyEvent("n"), chromedp.KeyEvent("U"))
	b.waitFor("the box asking why, focused", `document.getElementById('undo-why')?.open && document.activeElement === document.querySelector('#undo-why textarea') &&
		document.getElementById('undo-why-text').textContent.includes('Undo hunk 1 of f.go (lines 6–8)')`)
	b.do(chromedp.SendKeys(`#undo-why textarea`, "These helpers are not needed."), chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	m.Wait("the first reason", withText("These helpers are not needed."))
	b.waitFor("one hunk left", `document.querySelectorAll('#diff tr.hunk').length === 1 && !document.querySelector('#diff tr.line.add[data-a="5"]')`)
	if got, want := readF(), strings.Replace(base, "line 30\n", "line thirty\n", 1); got != want {
		t.Fatalf("after the first undo f.go is\n%s\nwant only the added lines gone", got)
	}

	// When the revert is refused, the comment is taken back: here git's
	// index moves (git add) while the box is open, so the revert, bound
	// to the view shown, is refused; the comment, which writes neither
	// the tree nor the index, is not.
	before := len(m.Wait("the first reason", withText("These helpers are not needed.")).Annotations)
	b.click("the hunk's Undo, tell why", `#diff tr.hunk button.hunk-undo-why:not([disabled])`)
	b.waitFor("the box", `document.getElementById('undo-why')?.open`)
	git(t, repo, "add", "f.go")
	b.waitFor("f.go shown staged", `document.querySelector('#files li.file[data-path="f.go"]')?.dataset.index === 'staged'`)
	b.do(chromedp.SendKeys(`#undo-why textarea`, "Refused one."))
	b.click("Undo and tell the agent", `#undo-why button.ok:not([disabled])`)
	b.waitFor("the refusal said", `[...document.querySelectorAll('#toasts .toast.error')].some((t) => t.textContent.includes('Undo failed, the comment was taken back'))`)
	m.Wait("the refused undo's comment taken back", func(st protocol.AnnotationsState) bool {
		return len(st.Annotations) == before && !withText("Refused one.")(st)
	})
	if got := readF(); !strings.Contains(got, "line thirty\n") {
		t.Fatalf("a refused undo changed f.go:\n%s", got)
	}
	git(t, repo, "reset", "-q", "f.go")
	b.waitFor("f.go shown unstaged", `document.querySelector('#files li.file[data-path="f.go"]')?.dataset.index === 'unstaged'`)

	// When the comment is refused, nothing is undone: here the hunk's
	// line is edited on disk while the box is open, so the comment,
	// bound to the version shown, no longer has its line.
	b.click("the hunk's Undo, tell why", `#diff tr.hunk button.hunk-undo-why:not([disabled])`)
	b.waitFor("the box", `document.getElementById('undo-why')?.open`)
	writeFile(t, repo, "f.go", strings.Replace(base, "line 30\n", "line THIRTY\n", 1))
	b.waitFor("the edit shown", `[...document.querySelectorAll('#diff tr.line.add')].some((r) => r.textContent.includes('THIRTY'))`)
	b.do(chromedp.SendKeys(`#undo-why textarea`, "Comment refused."))
	b.click("Undo and tell the agent", `#undo-why button.ok:not([disabled])`)
	b.waitFor("the refusal said", `[...document.querySelectorAll('#toasts .toast.error')].some((t) => t.textContent.includes('Nothing was undone: the comment with the reason was refused'))`)
	if st := m.Wait("the annotations", func(protocol.AnnotationsState) bool { return true }); len(st.Annotations) != before || withText("Comment refused.")(st) {
		t.Fatalf("a refused comment left %d annotations, want %d", len(st.Annotations), before)
	}
	if got := readF(); !strings.Contains(got, "line THIRTY\n") {
		t.Fatalf("an undo whose comment was refused changed f.go:\n%s", got)
	}
	writeFile(t, repo, "f.go", strings.Replace(base, "line 30\n", "line thirty\n", 1))
	b.waitFor("the edit undone by hand", `[...document.querySelectorAll('#diff tr.line.add')].some((r) => r.textContent.includes('thirty'))`)

	// With a click: the hunk's button, the reason, the box's button.
	b.click("the hunk's Undo, tell why", `#diff tr.hunk button.hunk-undo-why:not([disabled])`)
	b.waitFor("the box", `document.getElementById('undo-why')?.open && document.getElementById('undo-why-text').textContent.includes('(line 30)')`)
	b.do(chromedp.SendKeys(`#undo-why textarea`, "Keep the old name."))
	b.click("Undo and tell the agent", `#undo-why button.ok:not([disabled])`)
	m.Wait("the second reason", withText("Keep the old name."))
	b.waitFor("no hunk left", `!document.querySelector('#diff tr.hunk')`)
	if got := readF(); got != base {
		t.Fatalf("after both undos f.go is\n%s\nwant it as committed", got)
	}

	// The agent's next prompt.
	out := hook("UserPromptSubmit", "turn", "start", "--hook", "--feedback")
	for _, want := range []string{
		"### `f.go`, lines 6-8 (gone since)", "Why: These helpers are not needed.",
		"### `f.go`, line 30", "Why: Keep the old name.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's feedback lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Refused one.") {
		t.Errorf("the agent is told about an undo that was refused:\n%s", out)
	}
}
