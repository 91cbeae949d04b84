package test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserWordMarks changes a word of a Go line and a string of
// another, and checks that the page marks the whole changed words, not
// the letters after a common prefix, and that the changed lines keep
// their syntax colours under the marks.
func TestBrowserWordMarks(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	src := "package x\n\nfunc f(a T) error {\n\tif err := a.CheckClose(); err != nil {\n\t\treturn err\n\t}\n\treturn errors.New(\"bad\")\n}\n"
	repo := gitRepo(t, map[string]string{"x.go": src})
	writeFile(t, repo, "x.go", strings.Replace(strings.Replace(src, "CheckClose", "CloseAndCheck", 1), `"bad"`, `"invalid"`, 1))
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("x.go's diff, coloured", `document.getElementById('diff-path').textContent === 'x.go' && !!document.querySelector('#diff tr.line.add td.code .hljs-keyword')`)
	var marks []string
	b.eval(`[...document.querySelectorAll('#diff tr.line.del td.code, #diff tr.line.add td.code')].map((td) => [...td.querySelectorAll('mark.wd')].map((m) => m.textContent).join('|'))`, &marks)
	want := []string{"CheckClose", "CloseAndCheck", "bad", "invalid"}
	if strings.Join(marks, ",") != strings.Join(want, ",") {
		t.Errorf("marked %q, want %q", marks, want)
	}
	var coloured []bool
	b.eval(`[...document.querySelectorAll('#diff tr.line.del td.code, #diff tr.line.add td.code')].map((td) => !!td.querySelector('[class^=hljs-]'))`, &coloured)
	for i, c := range coloured {
		if !c {
			t.Errorf("changed line %d has no syntax colours", i)
		}
	}
}
