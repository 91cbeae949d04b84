package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserLargeChangeset checks the page on a changeset too large to
// put in the document whole: 400 files, of which only the rows in view
// are rendered while j still walks every one, and a 30,000-line diff that
// opens on request only, then with only its lines in view rendered.
func TestBrowserLargeChangeset(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	files := map[string]string{}
	for i := range 400 {
		files[fmt.Sprintf("f/%03d.txt", i)] = "x\n"
	}
	repo := gitRepo(t, files)
	for i := range 400 {
		writeFile(t, repo, fmt.Sprintf("f/%03d.txt", i), "x\ny\n")
	}
	var big strings.Builder
	for i := range 30000 {
		fmt.Fprintf(&big, "const v%d = %d;\n", i, i)
	}
	writeFile(t, repo, "0-big.js", big.String())
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("401 files, few rows in the document", `document.getElementById('totals').textContent.includes('401 files') &&
		document.querySelectorAll('#files li.file').length > 5 && document.querySelectorAll('#files li.file').length < 120`)
	b.waitFor("the big diff held back", `(() => {
		const n = document.querySelector('#diff .note.big');
		return n && n.textContent.includes('30,000 lines') && !document.querySelector('#diff table');
	})()`)
	b.click("Load anyway", `#diff button.load-anyway`)
	b.waitFor("the diff, virtual", `(() => {
		const rows = document.querySelectorAll('#diff table.virtual tr.line');
		return rows.length > 10 && rows.length < 400 && rows[0].dataset.a === '0';
	})()`)
	b.eval(`(() => { const d = document.getElementById('diff'); d.scrollTop = d.scrollHeight; })()`, nil)
	b.waitFor("the last lines after scrolling to the end", `!!document.querySelector('#diff tr.line[data-a="29999"]') && document.querySelectorAll('#diff tr.line').length < 400`)
	b.shot("24-large")

	// j walks past the rows in view: the list scrolls to the selection.
	for range 60 {
		b.do(chromedp.KeyEvent("j"))
	}
	b.waitFor("f/059.txt selected and in view", `(() => {
		const li = document.querySelector('#files li.file.selected');
		if (!li || li.dataset.path !== 'f/059.txt') return false;
		const r = li.getBoundingClientRect(), u = document.getElementById('files').getBoundingClientRect();
		return r.top >= u.top - 1 && r.bottom <= u.bottom + 1;
	})()`)
}
