package test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserStagedState checks that the uncommitted changes show what is
// staged, as git's own tools do, and that Stage and Unstage are enabled
// only where there is something to move.
func TestBrowserStagedState(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	writeFile(t, repo, "a.txt", "a\nA\n")
	writeFile(t, repo, "b.txt", "b\nB\n")
	writeFile(t, repo, "c.txt", "c\nC\n")
	git(t, repo, "add", "a.txt", "c.txt")
	writeFile(t, repo, "c.txt", "c\nC\nCC\n")
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	index := func(path string) string { return fileRow(path) + `.dataset.index` }
	b.waitFor("a.txt staged, b.txt not, c.txt partly", `(() => {
		const a = `+fileRow("a.txt")+`, b = `+fileRow("b.txt")+`, c = `+fileRow("c.txt")+`;
		return a && b && c && a.querySelector('.idx').textContent === 'staged' && !b.querySelector('.idx') &&
			c.querySelector('.idx').textContent === 'partly staged' && document.getElementById('totals').textContent.includes('2 staged');
	})()`)
	op := func(id string) string { return `document.querySelector('#file-ops button[data-op="` + id + `"]')` }
	b.click("a.txt", `#files li.file[data-path="a.txt"]`)
	b.waitFor("a.txt: Stage disabled, saying why; Unstage enabled", `document.getElementById('diff-path').textContent === 'a.txt' && `+
		op("stage")+`.disabled && `+op("stage")+`.title.includes('Nothing to stage') && !`+op("unstage")+`.disabled`)
	b.click("b.txt", `#files li.file[data-path="b.txt"]`)
	b.waitFor("b.txt: Stage enabled; Unstage disabled, saying why", `document.getElementById('diff-path').textContent === 'b.txt' && !`+
		op("stage")+`.disabled && `+op("unstage")+`.disabled && `+op("unstage")+`.title.includes('Nothing to unstage')`)
	b.click("c.txt", `#files li.file[data-path="c.txt"]`)
	b.waitFor("c.txt: both enabled", `document.getElementById('diff-path').textContent === 'c.txt' && !`+op("stage")+`.disabled && !`+op("unstage")+`.disabled`)
	b.shot("21-staged")

	// Staged from the page, and unstaged by git: the marks follow.
	b.click("b.txt", `#files li.file[data-path="b.txt"]`)
	b.click("Stage", `#file-ops button[data-op="stage"]:not([disabled])`)
	b.waitFor("b.txt staged", index("b.txt")+` === 'staged'`)
	git(t, repo, "reset", "-q", "a.txt")
	b.waitFor("a.txt unstaged", index("a.txt")+` === 'unstaged' && !`+fileRow("a.txt")+`.querySelector('.idx')`)
}

// TestBrowserCommitDialog checks the commit: a message field filled in
// with a generated message the reviewer can change, a confirmation that
// names the files the commit takes (the staged ones when some are), and
// the commit made with the message as written.
func TestBrowserCommitDialog(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	writeFile(t, repo, "a.txt", "a\nA\n")
	writeFile(t, repo, "b.txt", "b\nB\n")
	git(t, repo, "add", "a.txt")
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("a.txt staged", fileRow("a.txt")+` && `+fileRow("a.txt")+`.dataset.index === 'staged'`)
	b.click("Commit", `#cs-ops button[data-op="commit"]`)
	b.waitFor("the dialog naming a.txt only, the message filled in", `(() => {
		const d = document.getElementById('commit-dialog');
		const files = [...document.querySelectorAll('#commit-files li')].map(li => li.textContent);
		return d.open && document.getElementById('commit-what').textContent.includes('1 staged file') &&
			files.length === 1 && files[0] === 'a.txt' &&
			document.getElementById('commit-message').value.startsWith('Update 1 file(s) (+1 -0)') &&
			document.getElementById('commit-message').value.includes('- modify a.txt (+1 -0)');
	})()`)
	b.shot("22-commit")
	b.eval(`(() => { const m = document.getElementById('commit-message'); m.value = ''; m.focus(); })()`, nil)
	b.click("Commit with no message", `#commit-ok`)
	b.waitFor("asked for a message", `document.getElementById('commit-dialog').open && document.getElementById('commit-error').textContent.includes('message')`)
	b.do(chromedp.SendKeys(`#commit-message`, "a: say A too\n\nWritten in the review page."))
	b.click("Commit", `#commit-ok`)
	b.waitFor("a.txt committed, b.txt left", `!document.getElementById('commit-dialog').open && !`+fileRow("a.txt")+` && !!`+fileRow("b.txt"))
	if got := strings.TrimSpace(git(t, repo, "log", "-1", "--format=%B")); got != "a: say A too\n\nWritten in the review page." {
		t.Errorf("commit message %q, want the one typed", got)
	}
	if got := strings.TrimSpace(git(t, repo, "show", "--name-only", "--format=", "HEAD")); got != "a.txt" {
		t.Errorf("the commit has %q, want a.txt only", got)
	}

	// Nothing staged: the dialog says the commit takes every change.
	b.click("Commit", `#cs-ops button[data-op="commit"]`)
	b.waitFor("the dialog naming b.txt, all changes", `document.getElementById('commit-dialog').open &&
		document.getElementById('commit-what').textContent.includes('Nothing is staged') &&
		[...document.querySelectorAll('#commit-files li')].map(li => li.textContent).join() === 'b.txt'`)
	b.click("Cancel", `#commit-cancel`)
	b.waitFor("closed", `!document.getElementById('commit-dialog').open`)
	if got := strings.TrimSpace(git(t, repo, "status", "--porcelain")); got != "M b.txt" {
		t.Errorf("after Cancel, git status %q, want b.txt still modified", got)
	}
}
