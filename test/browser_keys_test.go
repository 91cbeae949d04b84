package test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserReviewKeys drives the review features by keys, clicks and
// typing: ? for the keys, n/p between hunks, the changed words of a
// changed line marked, the path filter, a reviewed file's diff folded
// until opened again, u to the next file not reviewed, file rows operable
// from the keyboard with labelled checkboxes, and side by side lines that
// say + and − as well as colour.
func TestBrowserReviewKeys(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	var base strings.Builder
	for i := 1; i <= 40; i++ {
		base.WriteString("x := compute(" + strings.Repeat("a", i%5+1) + ")\n")
	}
	repo := gitRepo(t, map[string]string{"src/a.go": base.String(), "src/b.go": "b\n", "docs/readme.md": "# Read me\n"})
	edited := strings.Replace(base.String(), "x := compute(aa)\n", "x := compute(bb)\n", 1)
	lines := strings.Split(edited, "\n")
	lines[30] = "y" + lines[30][1:]
	edited = strings.Join(lines, "\n")
	writeFile(t, repo, "src/a.go", edited)
	writeFile(t, repo, "src/b.go", "b\nB\n")
	writeFile(t, repo, "docs/readme.md", "# Read me\n\nMore.\n")
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	selected := `document.querySelector('#files li.file.selected').dataset.path`
	b.waitFor("three files, docs/readme.md first", `document.querySelectorAll('#files li.file').length === 3 && `+selected+` === 'docs/readme.md'`)

	b.do(chromedp.KeyEvent("?"))
	b.waitFor("the keys", `document.getElementById('help').open && document.getElementById('help').textContent.includes('next file not reviewed')`)
	b.do(chromedp.KeyEvent(kb.Escape))
	b.waitFor("the keys closed", `!document.getElementById('help').open`)

	b.do(chromedp.KeyEvent("j"))
	b.waitFor("src/a.go's two hunks", selected+` === 'src/a.go' && document.querySelectorAll('#diff tr.hunk').length === 2`)
	b.waitFor("the changed words marked", `[...document.querySelectorAll('#diff mark.wd')].map(m => m.textContent).join() === 'aa,bb,x,y'`)
	current := `[...document.querySelectorAll('#diff tr.hunk')].findIndex(h => h.classList.contains('current'))`
	b.do(chromedp.KeyEvent("n"))
	b.waitFor("n: the first hunk", current+` === 0`)
	b.do(chromedp.KeyEvent("n"))
	b.waitFor("n: the second hunk, in view", current+` === 1 && (() => {
		const h = document.querySelectorAll('#diff tr.hunk')[1].getBoundingClientRect(), p = document.getElementById('diff').getBoundingClientRect();
		return h.top >= p.top - 1 && h.bottom <= p.bottom + 1;
	})()`)
	b.do(chromedp.KeyEvent("p"))
	b.waitFor("p: the first hunk again", current+` === 0`)

	b.do(chromedp.KeyEvent("s"))
	b.waitFor("side by side, + and − in the text", `(() => {
		const a = document.querySelector('#diff table.split td.code.add'), d = document.querySelector('#diff table.split td.code.del');
		return a && d && getComputedStyle(a, '::before').content === '"+ "' && getComputedStyle(d, '::before').content === '"− "';
	})()`)
	b.do(chromedp.KeyEvent("s"))

	// x folds the reviewed diff; it opens on request.
	b.do(chromedp.KeyEvent("x"))
	b.waitFor("src/a.go folded", `!!document.querySelector('#diff .note.folded') && !document.querySelector('#diff table')`)
	b.click("Show the diff", `#diff button.unfold`)
	b.waitFor("unfolded", `!!document.querySelector('#diff table.unified')`)
	// u: the next file not reviewed, wrapping past the end.
	b.do(chromedp.KeyEvent("u"))
	b.waitFor("u: src/b.go", selected+` === 'src/b.go'`)
	b.do(chromedp.KeyEvent("x"), chromedp.KeyEvent("u"))
	b.waitFor("u: docs/readme.md, wrapping", selected+` === 'docs/readme.md'`)

	// The filter: / focuses it, typing narrows the list, Escape clears.
	b.do(chromedp.KeyEvent("/"))
	b.waitFor("the filter focused", `document.activeElement === document.getElementById('filter')`)
	b.do(chromedp.SendKeys(`#filter`, "src/"))
	b.waitFor("two of three", `[...document.querySelectorAll('#files li.file')].map(li => li.dataset.path).join() === 'src/a.go,src/b.go' &&
		document.getElementById('filter-count').textContent === '2 of 3'`)
	b.do(chromedp.KeyEvent(kb.Escape))
	b.waitFor("all three again", `document.querySelectorAll('#files li.file').length === 3 && document.getElementById('filter-count').textContent === ''`)

	// Rows from the keyboard; checkboxes named after their file.
	b.eval(`document.querySelector('#files li.file[data-path="src/b.go"]').focus()`, nil)
	b.do(chromedp.KeyEvent(kb.Enter))
	b.waitFor("Enter on a row opens it", selected+` === 'src/b.go' && document.getElementById('diff-path').textContent === 'src/b.go'`)
	var label string
	b.eval(fileRow("src/a.go")+`.querySelector('input.review').getAttribute('aria-label')`, &label)
	if label != "Reviewed: src/a.go" {
		t.Errorf("checkbox label %q, want %q", label, "Reviewed: src/a.go")
	}
	b.shot("25-keys")
}

// TestBrowserHighlight checks that code is coloured by its language, that
// a language's grammar loads only once a file in it is shown, and that a
// file in no known language loads none.
func TestBrowserHighlight(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"main.go": "package main\n", "notes.txt": "notes\n"})
	writeFile(t, repo, "main.go", "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n")
	writeFile(t, repo, "notes.txt", "notes\nfunc is a word here\n")
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	loaded := `performance.getEntriesByType('resource').map(r => r.name.split('/').pop()).filter(n => n.startsWith('hljs-')).sort().join()`
	b.waitFor("main.go coloured", `document.getElementById('diff-path').textContent === 'main.go' &&
		[...document.querySelectorAll('#diff td.code .hljs-keyword')].some(s => s.textContent === 'func') &&
		[...document.querySelectorAll('#diff td.code .hljs-string')].some(s => s.textContent === '"hello"')`)
	var got string
	b.eval(loaded, &got)
	if got != "hljs-core.js,hljs-go.js" {
		t.Errorf("loaded %q, want the core and the Go grammar only", got)
	}
	b.do(chromedp.KeyEvent("j"))
	b.waitFor("notes.txt, plain", `document.getElementById('diff-path').textContent === 'notes.txt' && !!document.querySelector('#diff td.code') && !document.querySelector('#diff td.code span')`)
	b.eval(loaded, &got)
	if got != "hljs-core.js,hljs-go.js" {
		t.Errorf("after a text file, loaded %q", got)
	}
	// The text of a coloured line is the line's: selecting and copying
	// sees no markup.
	b.do(chromedp.KeyEvent("k"))
	b.waitFor("main.go's line 3 as text", `[...document.querySelectorAll('#diff tr.line[data-a="2"] td.code')].some(td => td.textContent === 'func main() {')`)
}

// TestBrowserEditBadges checks that what an edit tool reports shows on
// the file's row: a fuzzy match, and a file changed after the tool wrote
// it.
func TestBrowserEditBadges(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": "hello world\n", "b.txt": "bee\n", "c.txt": "sea\n"})
	writeFile(t, repo, "a.txt", "HELLO world\n")
	writeFile(t, repo, "b.txt", "BEE\n")
	writeFile(t, repo, "c.txt", "SEA\n")
	d := startDaemon(t, repo)
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("three files", `document.querySelectorAll('#files li.file').length === 3`)
	in := editLine(t, map[string]any{"path": filepath.Join(repo, "a.txt"), "bytes_before": 12, "bytes_after": 12, "lines_before": 1, "lines_after": 1,
		"checksum_before": blake3Hex("hello world\n"), "checksum_after": blake3Hex("HELLO world\n"), "fuzzy": true, "strategy": "block_anchor", "similarity": 0.9}) + "\n" +
		editLine(t, map[string]any{"path": filepath.Join(repo, "b.txt"), "bytes_before": 4, "bytes_after": 4, "lines_before": 1, "lines_after": 1,
			"checksum_before": blake3Hex("bee\n"), "checksum_after": blake3Hex("Bee\n")}) + "\n"
	if out, errs, code := d.cliRun(t, in, "edits", "--dir", repo); code != 0 {
		t.Fatalf("changesetd edits: exit %d\n%s%s", code, out, errs)
	}
	b.waitFor("a.txt fuzzy, b.txt changed after the tool, c.txt neither", `(() => {
		const badges = (p) => [...`+"document.querySelectorAll(`#files li.file[data-path=\"${p}\"] .ebadge`)"+`].map(e => e.textContent).join();
		return badges('a.txt') === 'fuzzy' && badges('b.txt') === 'checksum mismatch' && badges('c.txt') === '' &&
			`+fileRow("b.txt")+`.querySelector('.ebadge').title.includes('not what the edit tool wrote');
	})()`)
}

// TestBrowserFileTree checks the file list as a tree: a row per folder
// with the number of changed files under it and their counts, folded by
// a click or Enter, and j walking only the files shown.
func TestBrowserFileTree(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"src/a/x.go": "package a\n", "src/b/y.go": "package b\n", "top.txt": "top\n"})
	writeFile(t, repo, "src/a/x.go", "package a\n\nvar X = 1\n")
	writeFile(t, repo, "src/b/y.go", "package b\n\nvar Y = 2\n")
	writeFile(t, repo, "top.txt", "top\nmore\n")
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	rows := `[...document.querySelectorAll('#files > li:not(.vspace)')].map(li => li.dataset.dir !== undefined ? 'dir:' + li.dataset.dir : li.dataset.path).join()`
	b.waitFor("the tree", rows+` === 'dir:src,dir:src/a,src/a/x.go,dir:src/b,src/b/y.go,top.txt'`)
	var count, name string
	b.eval(`document.querySelector('#files li.dir[data-dir="src"] .dcount').textContent`, &count)
	b.eval(fileRow("src/a/x.go")+`.querySelector('.path').textContent`, &name)
	if count != "2 files · +4 −0" || name != "x.go" {
		t.Errorf("src's count %q, x.go's name %q; want %q and %q", count, name, "2 files · +4 −0", "x.go")
	}
	b.click("src/a", `#files li.dir[data-dir="src/a"]`)
	b.waitFor("src/a folded", rows+` === 'dir:src,dir:src/a,dir:src/b,src/b/y.go,top.txt' && document.querySelector('#files li.dir[data-dir="src/a"]').getAttribute('aria-expanded') === 'false'`)
	selected := `document.querySelector('#files li.file.selected').dataset.path`
	b.click("y.go", `#files li.file[data-path="src/b/y.go"]`)
	b.do(chromedp.KeyEvent("k"))
	b.waitFor("k stays on y.go: x.go is folded away", selected+` === 'src/b/y.go'`)
	b.eval(`document.querySelector('#files li.dir[data-dir="src/a"]').focus()`, nil)
	b.do(chromedp.KeyEvent(kb.Enter))
	b.waitFor("Enter unfolds it", rows+` === 'dir:src,dir:src/a,src/a/x.go,dir:src/b,src/b/y.go,top.txt'`)
	b.do(chromedp.KeyEvent("k"))
	b.waitFor("k: x.go", selected+` === 'src/a/x.go'`)
	// A folded folder hides its subfolders too, and unfolded shows them
	// as they were: src/a folded again, src/b open.
	b.click("src/a", `#files li.dir[data-dir="src/a"]`)
	b.click("src", `#files li.dir[data-dir="src"]`)
	b.waitFor("src folded with all under it", rows+` === 'dir:src,top.txt'`)
	b.click("src", `#files li.dir[data-dir="src"]`)
	b.waitFor("src unfolded, src/a still folded", rows+` === 'dir:src,dir:src/a,dir:src/b,src/b/y.go,top.txt'`)
	b.shot("26-tree")
}

// TestBrowserFullFileAndImages checks the whole-file view (f, or its
// button): every line of the file, the changes among them with their old
// and new numbers; and an image's two sides shown as images.
func TestBrowserFullFileAndImages(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	png1 := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82"
	png2 := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\x60\xf8\xcf\x00\x00\x02\x02\x01\x00\x7b\x0e\x1e\x1b\x00\x00\x00\x00IEND\xaeB`\x82"
	repo := gitRepo(t, map[string]string{"a.txt": pageLines(30), "logo.png": png1})
	edited := strings.Replace(strings.Replace(pageLines(30), "line 5\n", "line five\n", 1), "line 25\n", "line 25\nline 25.5\n", 1)
	writeFile(t, repo, "a.txt", edited)
	writeFile(t, repo, "logo.png", png2)
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("a.txt's two hunks", `document.getElementById('diff-path').textContent === 'a.txt' && document.querySelectorAll('#diff tr.hunk').length === 2`)
	b.do(chromedp.KeyEvent("f"))
	b.waitFor("the whole file: 31 new lines and the deleted one", `(() => {
		const t = document.querySelector('#diff table.fullfile');
		if (!t) return false;
		const rows = [...t.querySelectorAll('tr.line')];
		const nums = rows.filter(r => r.cells[1].textContent !== '').map(r => Number(r.cells[1].textContent));
		const at = (n) => rows.find(r => r.cells[1].textContent === String(n));
		return nums.length === 31 && nums.every((n, i) => n === i + 1) && rows.length === 32 &&
			at(15).cells[0].textContent === '15' && at(30).cells[0].textContent === '29' &&
			at(5).classList.contains('add') && at(26).classList.contains('add') && rows.filter(r => r.classList.contains('del')).length === 1;
	})()`)
	b.do(chromedp.KeyEvent("f"))
	b.waitFor("the changes only again", `!document.querySelector('#diff table.fullfile') && document.querySelectorAll('#diff tr.hunk').length === 2`)

	b.do(chromedp.KeyEvent("j"))
	b.waitFor("logo.png's two sides as images", `(() => {
		const imgs = [...document.querySelectorAll('#diff .images img')];
		return imgs.length === 2 && imgs.every(i => i.complete && i.naturalWidth === 1) && imgs[0].alt.includes('before') && imgs[1].alt.includes('after');
	})()`)
}
