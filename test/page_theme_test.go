package test

import (
	"context"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// TestPageTheme: the theme button cycles auto → light → dark → auto; a
// chosen theme wins over the system's and stays after a reload, and auto
// follows the system.
func TestPageTheme(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t, treeRepo(t))
	bg := `getComputedStyle(document.body).backgroundColor`
	const white, dark = "rgb(255, 255, 255)", "rgb(13, 17, 23)"
	b.do(darkMode(true), chromedp.Navigate(d.Review))
	b.waitFor("the page, dark as the system", `!!document.querySelector('#diff tr.hunk') && document.getElementById('theme').textContent === 'Theme: auto' && `+bg+` === '`+dark+`'`)

	b.click("the theme", `#theme`)
	b.waitFor("light although the system is dark", `document.getElementById('theme').textContent === 'Theme: light' && `+bg+` === '`+white+`'`)
	b.do(chromedp.Reload())
	b.waitFor("still light after a reload", `!!document.querySelector('#diff tr.hunk') && document.getElementById('theme').textContent === 'Theme: light' && `+bg+` === '`+white+`'`)

	b.do(darkMode(false))
	b.click("the theme", `#theme`)
	b.waitFor("dark although the system is light", `document.getElementById('theme').textContent === 'Theme: dark' && `+bg+` === '`+dark+`'`)
	b.click("the theme", `#theme`)
	b.waitFor("auto: light as the system", `document.getElementById('theme').textContent === 'Theme: auto' && `+bg+` === '`+white+`'`)
	b.do(darkMode(true))
	b.waitFor("auto: dark as the system", bg+` === '`+dark+`'`)
}

// TestPageCopyPath: Copy path puts the shown file's path in the
// clipboard and says so.
func TestPageCopyPath(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t, treeRepo(t))
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("x.go shown", `document.getElementById('diff-path').textContent === 'src/a/x.go' && !document.getElementById('copy-path').hidden`)
	b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			if _, err := cdp.Call(ctx, chromedp.FromContext(ctx).Browser, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted,
			}); err != nil {
				return err
			}
		}
		return nil
	}))
	b.do(chromedp.KeyEvent("j"))
	b.waitFor("y.go shown", `document.getElementById('diff-path').textContent === 'src/b/y.go'`)
	b.do(chromedp.Click(`#copy-path`))
	b.waitFor("the note", `[...document.querySelectorAll('#toasts .toast')].some((t) => t.textContent === 'Copied src/b/y.go')`)
	var got string
	b.eval(`navigator.clipboard.readText()`, &got)
	if got != "src/b/y.go" {
		t.Errorf("the clipboard holds %q, want src/b/y.go", got)
	}
}
