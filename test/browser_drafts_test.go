package test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserDraft sends a draft of a file through "changesetd draft"
// while the review page is open: the file's row is marked "draft" in
// words, its diff ends with the draft's progress (the lines written of the
// file's, and the percent), and both go away when the real file is
// written.
func TestBrowserDraft(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	orig := pageLines(40)
	repo := gitRepo(t, map[string]string{"a.txt": orig, "b.txt": "bee\n"})
	writeFile(t, repo, "b.txt", "bee\nmore\n")
	state := t.TempDir()
	d := startDaemonIn(t, state, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("the uncommitted changes with b.txt", fileRow("b.txt")+` !== null`)

	// Half-way through a rewrite of a.txt that changes line 3.
	partial := strings.Replace(pageLines(20), "line 3\n", "line three\n", 1) + "line 2"
	code, out, stderr := cli(t, partial, nil, "draft", "--state-dir", state, filepath.Join(repo, "a.txt"))
	if code != 0 || strings.TrimSpace(out) != "published: 20 lines written of 40 (50%)" {
		t.Fatalf("changesetd draft: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	b.waitFor("a.txt's row marked draft", `(() => { const r = `+fileRow("a.txt")+`; return r && r.querySelector('.dbadge')?.textContent === 'draft'; })()`)
	if b.count(fileRow("b.txt") + `.querySelector('.dbadge')`) {
		t.Errorf("b.txt, a real file, is marked draft")
	}
	b.click("a.txt's row", `#files li.file[data-path="a.txt"]`)
	b.waitFor("the draft's progress at the end of the diff", `(() => {
		const p = document.querySelector('#diff > .draft-progress');
		return p && p === document.getElementById('diff').lastElementChild &&
			p.textContent.includes('20 lines of 40 written (50%)') &&
			p.querySelector('progress').value === 20 && p.querySelector('progress').max === 40 &&
			[...document.querySelectorAll('#diff td')].some(td => td.textContent.includes('line three'));
	})()`)
	b.shot("30-draft")

	// More of it: the progress follows.
	more := strings.Replace(pageLines(30), "line 3\n", "line three\n", 1)
	if code, out, stderr := cli(t, more, nil, "draft", "--state-dir", state, filepath.Join(repo, "a.txt")); code != 0 || !strings.Contains(out, "30 lines written of 40 (75%)") {
		t.Fatalf("changesetd draft: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	b.waitFor("the progress at 30 of 40", `document.querySelector('#diff > .draft-progress')?.textContent.includes('30 lines of 40 written (75%)')`)

	// The real file written: the marker and the progress go, the diff is
	// the file's.
	writeFile(t, repo, "a.txt", strings.Replace(orig, "line 3\n", "line three\n", 1))
	b.waitFor("the draft replaced by the file", `(() => {
		const r = `+fileRow("a.txt")+`;
		return r && !r.querySelector('.dbadge') && !document.querySelector('#diff .draft-progress') &&
			[...document.querySelectorAll('#diff td')].some(td => td.textContent.includes('line three'));
	})()`)
	b.shot("31-draft-written")
}

// count reports whether the JavaScript expression is truthy.
func (b *browser) count(expr string) bool {
	b.t.Helper()
	var ok bool
	b.eval(fmt.Sprintf(`!!(%s)`, expr), &ok)
	return ok
}
