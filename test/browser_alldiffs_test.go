package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestBrowserAllDiffs reads a changeset of 240 files in the all-diffs mode
// as a person does: a to turn it on, the wheel to scroll, j and k file by
// file, a click in the file list, the reviewed box in a file's header.
// Only the files near the view are in the document and have their patches
// read; a far file's diff appears when it is scrolled to, and is the
// file's patch as git prints it. The file read stays in place while the
// files above it, estimated until then, are read and measured.
func TestBrowserAllDiffs(t *testing.T) {
	t.Parallel()
	const n = 240
	long := strings.Repeat("a long line that wraps in the diff pane, ", 12)
	base := map[string]string{}
	name := func(i int) string { return fmt.Sprintf("d%d/f%03d.txt", i/40, i) }
	for i := range n {
		base[name(i)] = pageLines(60)
	}
	repo := gitRepo(t, base)
	for i := range n {
		lines := strings.Split(pageLines(60), "\n")
		lines[9] = fmt.Sprintf("changed %d: %s", i, long)
		// Each file has a different share of long lines, so that no
		// estimate from the counts is right.
		for k := range i % 4 {
			lines[40+k] = long + fmt.Sprint(k)
		}
		writeFile(t, repo, name(i), strings.Join(lines, "\n"))
	}
	d := startDaemon(t, repo)

	b := newBrowser(t)
	// The resourceRead requests the page sends, to tell which patches it
	// read.
	spy := `window.__reads = [];
	const send = WebSocket.prototype.send;
	WebSocket.prototype.send = function (data) {
		try { const m = JSON.parse(data); if (m.method === 'resourceRead') window.__reads.push(m.params.uri); } catch {}
		return send.call(this, data);
	};`
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: spy}); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("240 files listed", `document.getElementById('totals').textContent.includes('240 files')`)

	// With the single-key shortcuts off, a is a letter like any other.
	keysSwitch := func(what string) {
		b.click("all keys", `#help-open`)
		b.click("the single keys' switch", `#single-keys`)
		b.click("close", `#help-close`)
		b.waitFor("the help closed, the keys "+what, `!document.getElementById('help').open && document.getElementById('keys-off').hidden === `+fmt.Sprint(what == "on"))
	}
	keysSwitch("off")
	b.do(chromedp.KeyEvent("a"))
	b.do(chromedp.KeyEvent("j"))
	b.waitFor("a and j taken for nothing", `document.getElementById('alldiff').hidden && document.querySelector('#files li.file.selected')?.dataset.path === 'd0/f000.txt'`)
	keysSwitch("on")

	b.do(chromedp.KeyEvent("a"))
	top := `(() => { const p = document.getElementById('alldiff'); return [...p.querySelectorAll('section.allfile')].find(s => s.getBoundingClientRect().bottom > p.getBoundingClientRect().top + 1)?.dataset.path; })()`
	b.waitFor("the mode on, the first files' diffs shown", `!document.getElementById('alldiff').hidden && document.getElementById('diff').hidden &&
		document.getElementById('all-toggle').getAttribute('aria-pressed') === 'true' &&
		document.querySelectorAll('#alldiff section.allfile table.difftable').length >= 2 && `+top+` === 'd0/f000.txt'`)
	var counts struct{ Sections, Reads int }
	b.eval(`({ sections: document.querySelectorAll('#alldiff section.allfile').length, reads: new Set(window.__reads).size })`, &counts)
	if counts.Sections > 30 || counts.Reads > 40 {
		t.Fatalf("the mode put %d files in the document and read %d patches of 240: not only those near the view", counts.Sections, counts.Reads)
	}
	last := name(n - 1)
	b.waitFor("the last file not in the document", `!document.querySelector('#alldiff section[data-path="`+last+`"]')`)

	// The wheel: the selection follows the file at the top of the view.
	var box []float64
	b.eval(`(() => { const r = document.getElementById('alldiff').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`, &box)
	wheel := func(dy float64) chromedp.Action[chromedp.Void] {
		return chromedp.MouseEvent(chromedp.MouseWheel, box[0], box[1], func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 0.01, dy })
	}
	b.do(wheel(2500))
	b.waitFor("the list's selection following the scroll", `(() => { const t = `+top+`; return t && t !== 'd0/f000.txt' && document.querySelector('#files li.file.selected')?.dataset.path === t; })()`)

	// j and k go file by file, each to the top of the view.
	selected := `document.querySelector('#files li.file.selected')?.dataset.path`
	var before string
	b.eval(selected, &before)
	b.do(chromedp.KeyEvent("j"))
	b.waitFor("j: the next file at the top", `(() => { const s = `+selected+`; return s !== `+js(before)+` && `+top+` === s && Math.abs(`+offsetExpr(`s`)+`) < 2; })()`)
	b.do(chromedp.KeyEvent("k"))
	b.waitFor("k: back", `(() => { const s = `+selected+`; return s === `+js(before)+` && `+top+` === s; })()`)

	// A click in the list scrolls to a file in the middle, which stays at
	// the top while the files around it are read and measured.
	mid := name(150)
	var list []float64
	b.eval(`(() => { const r = document.getElementById('files').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`, &list)
	for i := 0; ; i++ {
		var there bool
		b.eval(fileRow(mid)+` !== null`, &there)
		if there {
			break
		}
		if i == 40 {
			t.Fatalf("%s never came into the list's view", mid)
		}
		b.do(chromedp.MouseEvent(chromedp.MouseWheel, list[0], list[1], func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 0.01, 500 }))
	}
	b.click(mid+" in the list", `#files li.file[data-path="`+mid+`"]`)
	b.waitFor(mid+" at the top, the files around it read", `(() => {
		return `+top+` === '`+mid+`' && !document.querySelector('#alldiff .loading');
	})()`)
	var off float64
	b.eval(offsetExpr(js(mid)), &off)
	if off < -2 || off > 2 {
		t.Fatalf("%s moved %.1f px from the top of the view as the files around it were read", mid, off)
	}

	// Far down: the last file's diff is read when scrolled to, and it is
	// its patch.
	for range 40 {
		b.do(wheel(4000))
	}
	b.waitFor("the last file's diff shown", `!!document.querySelector('#alldiff section[data-path="`+last+`"] table.difftable')`)
	var shown []string
	b.eval(`[...document.querySelectorAll('#alldiff section[data-path="`+last+`"] tr.line')].map(tr => (tr.classList.contains('add') ? '+' : tr.classList.contains('del') ? '-' : ' ') + tr.querySelector('td.code').textContent)`, &shown)
	var want []string
	for _, l := range strings.Split(git(t, repo, "diff", "--", last), "\n") {
		if l == "" || strings.HasPrefix(l, "diff ") || strings.HasPrefix(l, "index ") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "@@") || strings.HasPrefix(l, `\`) {
			continue
		}
		want = append(want, l)
	}
	if strings.Join(shown, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the mode shows for %s:\n%s\ngit diff says:\n%s", last, strings.Join(shown, "\n"), strings.Join(want, "\n"))
	}

	// The reviewed box in a file's header ticks the file.
	b.click("the reviewed box of "+last, `#alldiff section[data-path="`+last+`"] .allhead input.review`)
	b.waitFor("ticked in the list and folded", fileRow(last)+`?.querySelector('input.review').checked && !!document.querySelector('#alldiff section[data-path="`+last+`"] button.unfold')`)

	// a again: the one file at the top, alone.
	b.do(chromedp.KeyEvent("a"))
	b.waitFor("one file again", `document.getElementById('alldiff').hidden && !document.getElementById('diff').hidden`)
}

func offsetExpr(path string) string {
	return `(document.querySelector('#alldiff section.allfile[data-path="' + ` + path + ` + '"]').getBoundingClientRect().top - document.getElementById('alldiff').getBoundingClientRect().top)`
}

// TestBrowserAllDiffsFirstScreenBesideALongFile: the all-diffs mode draws
// its first screen as soon as the last patch it needs is in, also when a
// file in view is too long to show among the others and reads no patch.
// That file's patch was counted as awaited, so every such screen waited
// for an animation frame more; here animation frames never come, and the
// diffs must be drawn all the same.
func TestBrowserAllDiffsFirstScreenBesideALongFile(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": pageLines(40), "b.txt": pageLines(40)})
	writeFile(t, repo, "0-long.txt", pageLines(6000)) // sorts first: at the top of the view
	writeFile(t, repo, "a.txt", strings.Replace(pageLines(40), "line 20\n", "line twenty\n", 1))
	writeFile(t, repo, "b.txt", strings.Replace(pageLines(40), "line 30\n", "line thirty\n", 1))
	d := startDaemon(t, repo)

	b := newBrowser(t)
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("3 files listed", `document.getElementById('totals').textContent.includes('3 files')`)
	b.do(chromedp.Evaluate[chromedp.Void](`localStorage.setItem('changesetd.all', 'on')`))
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `window.requestAnimationFrame = () => 0;`}); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Reload())
	b.waitFor("the long file's note and the two diffs, drawn with no animation frame", `(() => {
		const p = document.getElementById('alldiff');
		const long = p && p.querySelector('section.allfile[data-path="0-long.txt"]');
		return !p.hidden && !!long && long.textContent.includes('open it alone') &&
			p.querySelectorAll('section.allfile table.difftable').length === 2 && !p.querySelector('.loading');
	})()`)
}
