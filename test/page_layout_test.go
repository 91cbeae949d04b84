package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestPageLayoutManyFiles lays the page out at 1024 and 1400 px on a
// repository with 200 changed files in nested folders: the diff keeps
// most of the width, no name is broken into a column of letters, the
// diff's head stays one row, and the tree, virtual at this size, shows
// its rows. Screenshots of both widths are kept for a person to look at.
func TestPageLayoutManyFiles(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	files := map[string]string{}
	name := func(i int) string {
		return fmt.Sprintf("services/pkg%02d/internal/handler_with_a_longer_name_%03d.go", i%12, i)
	}
	for i := range 200 {
		files[name(i)] = fmt.Sprintf("package pkg%02d\n\n%s", i%12, pageLines(30))
	}
	repo := gitRepo(t, files)
	for i := range 200 {
		writeFile(t, repo, name(i), strings.Replace(files[name(i)], "line 12\n", fmt.Sprintf("func Handle%d(ctx context.Context) error { return nil }\n", i), 1))
	}
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("200 files", `document.getElementById('totals').textContent.includes('200 files') && !!document.querySelector('#diff tr.hunk')`)
	for _, w := range []int64{1024, 1400} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b.t = t
			b.do(chromedp.EmulateViewport(w, 800))
			b.waitFor("laid out", fmt.Sprintf(`window.innerWidth === %d`, w))
			var got struct {
				Diff   float64 `json:"diff"`
				Narrow string  `json:"narrow"`
				Head   float64 `json:"head"`
				Rows   int     `json:"rows"`
			}
			b.eval(`(() => {
				const diff = document.getElementById('diffpane').getBoundingClientRect().width;
				const narrow = [...document.querySelectorAll('#files li.file .path, #files li.dir .dname')].find((p) => {
					const r = p.getBoundingClientRect();
					return r.height > 3 * parseFloat(getComputedStyle(p).lineHeight || '18') || r.width < 40;
				});
				return {
					diff,
					narrow: narrow ? narrow.textContent : '',
					head: document.getElementById('diff-head').getBoundingClientRect().height,
					rows: document.querySelectorAll('#files li[role=treeitem]').length,
				};
			})()`, &got)
			if got.Diff < 0.55*float64(w) {
				t.Errorf("at %d px the diff gets %.0f px", w, got.Diff)
			}
			if got.Narrow != "" {
				t.Errorf("at %d px the name %q is broken into a column", w, got.Narrow)
			}
			if got.Head > 80 {
				t.Errorf("at %d px the diff's head is %.0f px high: more than the path and one row of buttons", w, got.Head)
			}
			if got.Rows < 10 {
				t.Errorf("at %d px the tree shows %d rows", w, got.Rows)
			}
			b.shot(fmt.Sprintf("many-%d", w))
		})
	}
}
