package test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserScreens takes screenshots of the page's main views at 1024
// and 1400 px wide, for a person to look at: the uncommitted changes with
// a long file's diff, the all-diffs mode and a turn's view, on a copy of
// some 3,000 files of Go's own sources (GOROOT/src) with an agent's turn
// recorded through the hooks. It runs only with CHANGESETD_SCREENSHOTS=1;
// the pictures go to the artifacts directory.
//
//	CHANGESETD_SCREENSHOTS=1 go test -run BrowserScreens ./test/
func TestBrowserScreens(t *testing.T) {
	t.Parallel()
	if os.Getenv("CHANGESETD_SCREENSHOTS") == "" {
		t.Skip("set CHANGESETD_SCREENSHOTS=1 to take the screenshots")
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	files := map[string]string{}
	for _, dir := range []string{"cmd/compile", "cmd/go", "go", "net", "crypto"} {
		filepath.WalkDir(filepath.Join(src, dir), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			if e.IsDir() {
				if e.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && len(b) < 400_000 {
				files[filepath.ToSlash(rel)] = string(b)
			}
			return nil
		})
	}
	if len(files) < 2000 {
		t.Skipf("only %d files under %s", len(files), src)
	}
	repo := gitRepo(t, files)
	d := startDaemon(t, repo)

	edit := func(name, old, new string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(repo, name))
		if err != nil || !strings.Contains(string(b), old) {
			t.Fatalf("%s: %v, or no %q in it", name, err, old)
		}
		writeFile(t, repo, name, strings.Replace(string(b), old, new, 1))
	}
	d.hookTurn(t, "start", "5b2e0c1d-claude", repo, "Name the SSA builder's state after what it holds, and note why in the doc comments")
	// The long file: 8,000 lines, changed in a few places.
	ssa := "cmd/compile/internal/ssagen/ssa.go"
	edit(ssa, "heap allocations of scalar locals.", "heap allocations of scalar locals, in bytes.")
	edit(ssa, "func (s *state) newValue0(", "// It never fails.\nfunc (s *state) newValue0(")
	edit(ssa, "func (s *state) entryNewValue0(", "// entryNewValue0 adds a new value with no arguments to the entry block.\n// It is hoisted there so that every block sees it.\nfunc (s *state) entryNewValue0(")
	n := 0
	for name, body := range files {
		if n == 60 || !strings.HasPrefix(name, "net/") || !strings.HasSuffix(name, ".go") || !strings.Contains(body, "\n// ") {
			continue
		}
		edit(name, "\n// ", "\n// Reviewed: ")
		n++
	}
	d.hookTurn(t, "end", "5b2e0c1d-claude", repo, "")
	edit("go/ast/ast.go", "// Package ast declares", "// Package ast declares (and documents)")

	b := newBrowser(t)
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("the turn", `document.querySelectorAll('#turns li.turn').length === 1`)
	b.waitFor("the files", fmt.Sprintf(`document.getElementById('totals').textContent.includes('%d files')`, n+2))
	for _, w := range []int64{1024, 1400} {
		b.do(chromedp.EmulateViewport(w, 860))
		b.waitFor("laid out", fmt.Sprintf(`window.innerWidth === %d`, w))
		b.click("Uncommitted", `#catalog li[data-kind="uncommitted"]`)
		b.click(ssa, `#files li.file[data-path="`+ssa+`"]`)
		b.waitFor("its diff", `document.getElementById('diff-path').textContent === '`+ssa+`' && document.querySelectorAll('#diff tr.line.add').length >= 4`)
		b.shot(fmt.Sprintf("screen-%d-uncommitted", w))
		b.do(chromedp.KeyEvent("a"))
		b.waitFor("every diff", `!document.getElementById('alldiff').hidden && document.querySelectorAll('#alldiff table.difftable').length >= 2 && !document.querySelector('#alldiff .loading')`)
		b.shot(fmt.Sprintf("screen-%d-all", w))
		b.do(chromedp.KeyEvent("a"))
		b.waitFor("one file", `document.getElementById('alldiff').hidden`)
		b.click("the turn", `#turns li.turn .name`)
		b.waitFor("the turn's files", fmt.Sprintf(`document.getElementById('totals').textContent.includes('%d files') && !!document.querySelector('#diff tr.hunk')`, n+1))
		b.shot(fmt.Sprintf("screen-%d-turn", w))
	}
}
