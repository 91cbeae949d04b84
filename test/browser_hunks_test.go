package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// hunkChecked is the JavaScript for the reviewed marks of the hunks shown,
// as "1" and "0" in order.
const hunkChecked = `[...document.querySelectorAll('#diff tr.hunk input.hunk-reviewed')].map(c => c.checked ? '1' : '0').join('')`

// TestBrowserHunkReview marks hunks reviewed on the page, by key and by
// click, and checks that the marks are the daemon's: kept across a
// reload, seen by a second browser, lost by the hunk an edit changed and kept
// by the hunks it did not; and that a file whose hunks are all marked is
// reviewed.
func TestBrowserHunkReview(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"f.txt": pageLines(40)})
	three := func(first string) string {
		s := strings.Replace(pageLines(40), "line 3\n", first, 1)
		s = strings.Replace(s, "line 20\n", "line twenty\n", 1)
		return strings.Replace(s, "line 37\n", "line thirty-seven\n", 1)
	}
	writeFile(t, repo, "f.txt", three("line three\n"))
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("three hunks, none marked", `document.getElementById('diff-path').textContent === 'f.txt' && `+hunkChecked+` === '000'`)
	var label string
	b.eval(`document.querySelector('#diff tr.hunk input.hunk-reviewed').getAttribute('aria-label')`, &label)
	if label != "Reviewed: hunk 1 of f.txt" {
		t.Errorf("the first hunk's checkbox is labelled %q", label)
	}

	// h marks the current hunk (n moves to it).
	b.do(chromedp.KeyEvent("n"), chromedp.KeyEvent("h"))
	b.waitFor("h: the first hunk marked", hunkChecked+` === '100'`)

	// A second browser sees the mark and marks the third hunk by a click.
	// (A second tab of the same window would be a hidden one, which paints
	// no frames.)
	b2 := newBrowser(t)
	b2.do(chromedp.Navigate(d.Review))
	b2.waitFor("the second browser: the first hunk marked", hunkChecked+` === '100'`)
	b2.click("the third hunk's checkbox", `#diff tr.hunk[data-hunk="2"] input.hunk-reviewed`)
	b.waitFor("the first browser sees the third hunk marked", hunkChecked+` === '101'`)

	b.do(chromedp.Reload())
	b.waitFor("after a reload, still marked", hunkChecked+` === '101'`)
	b.waitFor("the file not reviewed: a hunk is not", `!`+fileRow("f.txt")+`.querySelector('input.review').checked`)

	// An edit of the first hunk's lines makes it a new hunk, not marked;
	// the third keeps its mark.
	writeFile(t, repo, "f.txt", three("line THREE\n"))
	b.waitFor("the edited hunk unmarked, the others as they were", `[...document.querySelectorAll('#diff td.code')].some(td => td.textContent === 'line THREE') && `+hunkChecked+` === '001'`)
	b2.waitFor("the second browser too", hunkChecked+` === '001'`)

	// Marking the other two makes the file reviewed.
	b.click("the first hunk's checkbox", `#diff tr.hunk[data-hunk="0"] input.hunk-reviewed`)
	b.waitFor("two of three marked", hunkChecked+` === '101'`)
	b.click("the second hunk's checkbox", `#diff tr.hunk[data-hunk="1"] input.hunk-reviewed`)
	b.waitFor("every hunk marked: the file is reviewed", fileRow("f.txt")+`.querySelector('input.review').checked`)
	b2.waitFor("reviewed in the second browser", fileRow("f.txt")+`.querySelector('input.review').checked`)
	b.shot("27-hunks")
}

// TestBrowserHunkKeepUndo stages one hunk with its Keep button and
// reverts another with its Undo button, after the confirmation, leaving
// the file's other change as it was.
func TestBrowserHunkKeepUndo(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"f.txt": pageLines(40)})
	edited := strings.Replace(strings.Replace(pageLines(40), "line 3\n", "line three\n", 1), "line 35\n", "line thirty-five\nline 35.5\n", 1)
	writeFile(t, repo, "f.txt", edited)
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("two hunks with Keep and Undo", `document.querySelectorAll('#diff tr.hunk button.hunk-keep:not([hidden]):not(:disabled)').length === 2 &&
		document.querySelectorAll('#diff tr.hunk button.hunk-undo:not([hidden]):not(:disabled)').length === 2`)
	b.click("Keep on the first hunk", `#diff tr.hunk[data-hunk="0"] button.hunk-keep`)
	b.waitFor("the confirmation, if any, or the stage done", `document.getElementById('confirm').open || !document.querySelector('.opstatus')`)
	b.eval(`document.getElementById('confirm').open && document.getElementById('confirm-ok').click()`, nil)
	staged := ""
	for range 100 {
		staged = git(t, repo, "diff", "--cached")
		if staged != "" {
			break
		}
		b.eval(`new Promise(r => setTimeout(r, 100))`, nil)
	}
	if !strings.Contains(staged, "+line three") || strings.Contains(staged, "thirty-five") {
		t.Fatalf("staged after Keep on the first hunk:\n%s", staged)
	}

	b.waitFor("idle again", `!document.querySelector('.opstatus') && document.querySelectorAll('#diff tr.hunk button.hunk-undo:not(:disabled)').length > 0`)
	b.click("Undo on the last hunk", `#diff tr.hunk[data-hunk="1"] button.hunk-undo`)
	b.waitFor("the confirmation", `document.getElementById('confirm').open`)
	var text string
	b.eval(`document.getElementById('confirm-text').textContent`, &text)
	if !strings.Contains(text, "lines 35–36") {
		t.Errorf("confirmation %q does not name the hunk's lines 35–36", text)
	}
	b.click("Confirm", `#confirm-ok`)
	want := strings.Replace(pageLines(40), "line 3\n", "line three\n", 1)
	var got []byte
	for range 100 {
		var err error
		got, err = os.ReadFile(filepath.Join(repo, "f.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) == want {
			break
		}
		b.eval(`new Promise(r => setTimeout(r, 100))`, nil)
	}
	if string(got) != want {
		t.Errorf("f.txt after Undo on the last hunk:\n%s\nwant:\n%s", got, want)
	}
}

// TestBrowserHunkContext shows more lines around hunks: above the first,
// between two hunks from either side until the gap is gone, and below the
// last until the end of the file, each with its old and new numbers.
func TestBrowserHunkContext(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"f.txt": pageLines(60)})
	// A line more from line 20 on: new numbers are one past the old.
	edited := strings.Replace(strings.Replace(pageLines(60), "line 20\n", "line twenty\nline 20.5\n", 1), "line 45\n", "line forty-five\n", 1)
	writeFile(t, repo, "f.txt", edited)
	d := startDaemon(t, repo)

	rows := func(h int) string {
		return fmt.Sprintf(`[...document.querySelectorAll('#diff tr.line[data-hunk="%d"]')].map(r => r.cells[0].textContent + '/' + r.cells[1].textContent + ':' + r.cells[3].textContent)`, h)
	}
	first := func(h int) string { return rows(h) + `[0]` }
	last := func(h int) string { return rows(h) + `.at(-1)` }
	expanders := func(h int) string {
		return fmt.Sprintf(`document.querySelectorAll('#diff tr.hunk[data-hunk="%d"] button.expand').length`, h)
	}
	press := func(label string) {
		b.click(label, `#diff button.expand[aria-label=`+js(label)+`]`)
	}

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("two hunks, three lines of context", `document.querySelectorAll('#diff tr.hunk').length === 2 && `+first(0)+` === '17/17:line 17' && `+last(1)+` === '48/49:line 48'`)

	press("Show 10 more lines above hunk 1")
	b.waitFor("ten more above the first hunk", first(0)+` === '7/7:line 7'`)
	press("Show 6 more lines above hunk 1")
	b.waitFor("up to the first line; no more to show above", first(0)+` === '1/1:line 1' && `+expanders(0)+` === 0`)

	press("Show 10 more lines below hunk 1")
	b.waitFor("ten more below the first hunk, numbered on both sides", last(0)+` === '33/34:line 33'`)
	press("Show 8 more lines above hunk 2")
	b.waitFor("the gap between them shown whole", first(1)+` === '34/35:line 34' && `+expanders(1)+` === 0`)

	press("Show 10 more lines below hunk 2")
	b.waitFor("ten more below the last hunk", last(1)+` === '58/59:line 58'`)
	press("Show 2 more lines below hunk 2")
	b.waitFor("down to the end of the file", last(1)+` === '60/61:line 60' && !document.querySelector('#diff tr.hunk-tail')`)

	// The hunks keep their review controls, and the changed lines are
	// what they were.
	var changed string
	b.eval(`[...document.querySelectorAll('#diff tr.line.add, #diff tr.line.del')].map(r => r.cells[3].textContent).join()`, &changed)
	if changed != "line 20,line twenty,line 20.5,line 45,line forty-five" {
		t.Errorf("changed lines %q", changed)
	}
	b.shot("28-context")
}
