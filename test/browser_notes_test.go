package test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserShowsWorkspaceWarnings: what the daemon could not apply
// exactly (here a clean filter it cannot run) is said above the files, not
// only in the session's _meta.
func TestBrowserShowsWorkspaceWarnings(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{
		".gitattributes": "*.sec filter=rot\n",
		"keys.sec":       "one\n",
	})
	git(t, repo, "config", "filter.rot.clean", "cat")
	git(t, repo, "config", "filter.rot.smudge", "cat")
	writeFile(t, repo, "keys.sec", "one\ntwo\n")
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("the warning about the filter, above the files", `(() => {
		const w = document.getElementById('cs-warnings');
		return !w.hidden && w.textContent.includes('Warning') && w.textContent.includes('keys.sec');
	})()`)
	b.shot("40-warnings")
}
