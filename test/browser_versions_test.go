package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserUndoActsOnShownVersion: the confirmation of a hunk's Undo is
// open when the file is rewritten on disk; confirming it is refused with a
// message that says the file changed, and nothing is written: the page
// sends the version it showed, and the daemon acts on that or not at all.
func TestBrowserUndoActsOnShownVersion(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"f.txt": pageLines(40)})
	edited := strings.Replace(strings.Replace(pageLines(40), "line 3\n", "line three\n", 1), "line 35\n", "line thirty-five\n", 1)
	writeFile(t, repo, "f.txt", edited)
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("two hunks with Undo", `document.querySelectorAll('#diff tr.hunk button.hunk-undo:not([hidden]):not(:disabled)').length === 2`)
	b.click("Undo on the last hunk", `#diff tr.hunk[data-hunk="1"] button.hunk-undo`)
	b.waitFor("the confirmation", `document.getElementById('confirm').open`)

	// Meanwhile the agent rewrites the hunk's lines; the page shows the new
	// version behind the open dialog.
	rewritten := strings.Replace(edited, "line thirty-five\n", "line THIRTY-FIVE\n", 1)
	writeFile(t, repo, "f.txt", rewritten)
	b.waitFor("the new version behind the dialog", `[...document.querySelectorAll('#diff td.code')].some(td => td.textContent === 'line THIRTY-FIVE') && document.getElementById('confirm').open`)

	b.click("Confirm", `#confirm-ok`)
	b.waitFor("refused: the file changed", `[...document.querySelectorAll('#toasts .toast.error')].some(t => /changed/.test(t.textContent))`)
	var msg string
	b.eval(`[...document.querySelectorAll('#toasts .toast.error')].map(t => t.textContent).join(' | ')`, &msg)
	if !strings.Contains(msg, "f.txt") {
		t.Errorf("the refusal does not name the file: %q", msg)
	}
	b.waitFor("idle again", `!document.querySelector('.opstatus.running')`)
	got, err := os.ReadFile(filepath.Join(repo, "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != rewritten {
		t.Errorf("f.txt was written:\n%s\nwant the rewritten version", got)
	}
	if staged := git(t, repo, "diff", "--cached", "--name-only"); staged != "" {
		t.Errorf("the index changed: %s", staged)
	}
	if head := git(t, repo, "show", "HEAD:f.txt"); head != pageLines(40) {
		t.Errorf("HEAD's f.txt changed")
	}
}

// Every operation and review flag the page sends goes through one
// function, intent, which adds the versions shown: no other code of the
// page names the methods or the action that carry them.
func TestPageIntentsGoThroughOneFunction(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "web", "static", "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no page scripts: %v", err)
	}
	sent := []string{"'invokeChangesetOperation'", "'changeset/filesReviewChanged'", "'x-changesetd/hunksReviewChanged'"}
	for _, name := range files {
		if filepath.Base(name) == "reducer.js" {
			continue // reduces the echo; sends nothing
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		from, to := -1, -1
		if i := strings.Index(src, "\nfunction intent("); i >= 0 {
			from = i
			to = i + strings.Index(src[i:], "\n}\n")
		}
		for _, s := range sent {
			for off := 0; ; {
				i := strings.Index(src[off:], s)
				if i < 0 {
					break
				}
				at := off + i
				if at < from || at > to {
					line := strings.Count(src[:at], "\n") + 1
					t.Errorf("%s:%d sends %s outside intent(): it would not carry the versions shown", filepath.Base(name), line, s)
				}
				off = at + len(s)
			}
		}
		if filepath.Base(name) == "intent.js" && from < 0 {
			t.Errorf("intent.js has no function intent")
		}
	}
}
