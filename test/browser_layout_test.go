package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserLayoutWidths lays the page out at 1024 and 1400 px with
// badges on the files (staged, comments, mode) and checks that the diff
// gets most of the width and that no file name is broken into a column
// of letters; screenshots of both are kept for a person to look at.
func TestBrowserLayoutWidths(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{
		"internal/server/handlers/session_changeset_operations.go": pageLines(80),
		"web/static/app.js":   pageLines(30),
		"docs/review-page.md": "a\n",
	})
	writeFile(t, repo, "internal/server/handlers/session_changeset_operations.go", strings.Replace(pageLines(80), "line 40\n", "\tif err := checkCloseAndReport(ctx, session.Changeset()); err != nil { return fmt.Errorf(\"bad operation: %w\", err) }\n", 1))
	writeFile(t, repo, "web/static/app.js", strings.Replace(pageLines(30), "line 5\n", "const x = 1;\n", 1))
	git(t, repo, "add", "web/static/app.js")
	writeFile(t, repo, "docs/review-page.md", "a\nb\n")
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("three files", `document.querySelectorAll('#files li.file').length === 3 && !!document.querySelector('#diff tr.hunk')`)
	for _, w := range []int64{1024, 1400} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b.t = t
			b.do(chromedp.EmulateViewport(w, 800))
			b.waitFor("laid out", fmt.Sprintf(`window.innerWidth === %d`, w))
			var got struct {
				Diff    float64 `json:"diff"`
				Narrow  string  `json:"narrow"`
				HeadTop float64 `json:"headTop"`
			}
			b.eval(`(() => {
				const diff = document.getElementById('diffpane').getBoundingClientRect().width;
				// A name broken into a column: its box is taller than wide.
				const narrow = [...document.querySelectorAll('#files li.file .path')].find((p) => {
					const r = p.getBoundingClientRect();
					return r.height > 3 * parseFloat(getComputedStyle(p).lineHeight || '18') || r.width < 60;
				});
				return { diff, narrow: narrow ? narrow.textContent : '', headTop: document.getElementById('diff').getBoundingClientRect().top };
			})()`, &got)
			if got.Diff < 0.55*float64(w) {
				t.Errorf("at %d px the diff gets %.0f px", w, got.Diff)
			}
			if got.Narrow != "" {
				t.Errorf("at %d px the name %q is broken into a column", w, got.Narrow)
			}
			b.shot(fmt.Sprintf("layout-%d", w))

			// The go file's diff with a comment under its change and lines
			// chosen, then a revert's confirmation.
			b.click("the go file", `#files li.file[data-path$="operations.go"]`)
			b.waitFor("its diff", `document.getElementById('diff-path').textContent.endsWith('operations.go') && !!document.querySelector('#diff tr.hunk')`)
			if w == 1024 {
				b.do(chromedp.KeyEvent("v"), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown))
				comment(b, "Wrap this error with the operation's name.")
			}
			b.do(chromedp.KeyEvent("v"), chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierShift)))
			b.waitFor("the selected-lines buttons", `!document.getElementById('range-ops').hidden`)
			b.shot(fmt.Sprintf("layout-%d-comment", w))
			b.do(chromedp.KeyEvent(kb.Escape))
			confirmation(b, "the file's Revert", `#file-ops button[data-op="revert"]:not(:disabled)`)
			b.shot(fmt.Sprintf("layout-%d-confirm", w))
			cancelConfirmation(b)
		})
	}
}
