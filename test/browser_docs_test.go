package test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserDocsScreenshot retakes docs/review-page.png on a copy of
// go-git's sources from the module cache, with a turn recorded by the
// Claude Code hooks, a staged file and a review comment. It runs only with
// CHANGESETD_DOCS_SCREENSHOT=1 (and go-git v5.19.3 in the module cache):
//
//	CHANGESETD_DOCS_SCREENSHOT=1 go test -run BrowserDocsScreenshot ./test/
func TestBrowserDocsScreenshot(t *testing.T) {
	t.Parallel()
	if os.Getenv("CHANGESETD_DOCS_SCREENSHOT") == "" {
		t.Skip("set CHANGESETD_DOCS_SCREENSHOT=1 to retake docs/review-page.png")
	}
	gomod := os.Getenv("GOMODCACHE")
	if gomod == "" {
		gomod = filepath.Join(os.Getenv("HOME"), "go", "pkg", "mod")
	}
	src := filepath.Join(gomod, "github.com", "go-git", "go-git", "v5@v5.19.3")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no go-git sources at %s: %v", src, err)
	}
	files := map[string]string{}
	filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if e.IsDir() {
			if rel == "_examples" || rel == "internal" || strings.HasPrefix(rel, "plumbing/format/packfile") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, ".md") || rel == "go.mod" {
			b, _ := os.ReadFile(p)
			files[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
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
	d.hookTurn(t, "start", "3f1c9a2e-claude", repo, "Let Status skip untracked files on request")
	edit("worktree_status.go", "type StatusOptions struct {\n\tStrategy StatusStrategy\n}", "type StatusOptions struct {\n\tStrategy StatusStrategy\n\t// SkipUntracked leaves untracked files out of the status: it then\n\t// needs no walk of the working tree for them.\n\tSkipUntracked bool\n}")
	edit("options.go", "\t// Glob adds all paths, matching pattern, to the index. If pattern matches a\n", "\t// Glob adds all paths matching the pattern to the index. If the pattern\n\t// matches a\n")
	edit("worktree_status.go", "\treturn w.status(o.Strategy, hash)\n}", "\tif o.SkipUntracked {\n\t\treturn w.statusTracked(o.Strategy, hash)\n\t}\n\treturn w.status(o.Strategy, hash)\n}")
	edit("worktree_status.go", "func (w *Worktree) status(ss StatusStrategy, commit plumbing.Hash) (Status, error) {", "// statusTracked is status without the untracked files.\nfunc (w *Worktree) statusTracked(ss StatusStrategy, commit plumbing.Hash) (Status, error) {\n\ts, err := w.status(ss, commit)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\tfor path, fs := range s {\n\t\tif fs.Worktree == Untracked {\n\t\t\tdelete(s, path)\n\t\t}\n\t}\n\treturn s, nil\n}\n\nfunc (w *Worktree) status(ss StatusStrategy, commit plumbing.Hash) (Status, error) {")
	d.hookTurn(t, "end", "3f1c9a2e-claude", repo, "")
	edit("README.md", "go-git", "go-git (with SkipUntracked)")
	git(t, repo, "add", "options.go")

	b := newBrowser(t)
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("the turn", `[...document.querySelectorAll('#turns li.turn')].some(li => li.textContent.includes('skip untracked'))`)
	b.waitFor("three files", `document.querySelectorAll('#files li.file').length === 3`)
	b.click("worktree_status.go", `#files li.file[data-path="worktree_status.go"]`)
	b.waitFor("its diff", `document.getElementById('diff-path').textContent === 'worktree_status.go' && document.querySelectorAll('#diff tr.line.add').length > 10`)
	commentOnRows(b, 61, 63, "Should this say in the doc comment that ignored files are left out too?")
	b.waitFor("the thread", `!!document.querySelector('#diff .thread:not(.pending)')`)
	b.click("README.md's checkbox", `#files li.file[data-path="README.md"] input.review`)
	b.waitFor("ticked", fileRow("README.md")+`.querySelector('input.review').checked`)
	b.eval(`document.getSelection().removeAllRanges(); document.activeElement.blur()`, nil)
	p := b.shot("docs-review-page")
	png, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "review-page.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
