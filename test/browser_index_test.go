package test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserCommitCountsPartlyStaged opens the commit dialog with a
// partly staged file and checks that the message it starts with counts
// what the commit records, as git diff --cached counts it, not the whole
// file's change.
func TestBrowserCommitCountsPartlyStaged(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": pageLines(60), "b.txt": "b\n"})
	// Staged: line 3 changed and a line after it (+2 -1); b.txt (+1 -0).
	staged := strings.Replace(pageLines(60), "line 3\n", "line three\nline 3.5\n", 1)
	writeFile(t, repo, "a.txt", staged)
	writeFile(t, repo, "b.txt", "b\nB\n")
	git(t, repo, "add", "a.txt", "b.txt")
	// Not staged: lines 40–49 of a.txt deleted.
	var cut strings.Builder
	for i := 40; i <= 49; i++ {
		cut.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	writeFile(t, repo, "a.txt", strings.Replace(staged, cut.String(), "", 1))
	if got := git(t, repo, "diff", "--cached", "--numstat"); got != "2\t1\ta.txt\n1\t0\tb.txt\n" {
		t.Fatalf("git diff --cached --numstat: %q", got)
	}
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("a.txt partly staged", fileRow("a.txt")+` && `+fileRow("a.txt")+`.dataset.index === 'partial'`)
	b.click("Commit", `#cs-ops button[data-op="commit"]:not(:disabled)`)
	b.waitFor("the commit dialog", `document.getElementById('commit-dialog').open`)
	var msg string
	b.eval(`document.getElementById('commit-message').value`, &msg)
	want := "Update 2 file(s) (+3 -1)\n\n- modify a.txt (+2 -1)\n- modify b.txt (+1 -0)\n"
	if msg != want {
		t.Errorf("the commit message starts as\n%s\nwant\n%s", msg, want)
	}
}

// TestBrowserModeChange makes an executable file not executable and
// checks that the page says so, as git does: the file's row and its diff
// name the modes, not only "+0 −0".
func TestBrowserModeChange(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"run.sh": "#!/bin/sh\necho hi\n"})
	if err := os.Chmod(filepath.Join(repo, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "commit", "-qam", "executable")
	if err := os.Chmod(filepath.Join(repo, "run.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, repo)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("run.sh's diff", `document.getElementById('diff-path').textContent === 'run.sh'`)
	b.waitFor("the mode change, in the row and the diff", fileRow("run.sh")+`.querySelector('.mbadge')?.getAttribute('aria-label') === 'mode 100755 → 100644' &&
		document.querySelector('#diff .modechange')?.textContent === 'mode 100755 → 100644'`)
}

// TestBrowserStagedHunks keeps (stages) one hunk of a file whose other
// hunk, above it, adds lines, and checks that the page shows the kept hunk
// as staged with its Keep done and an Unstage, the other as before; then
// unstages it from the page, which takes it out of the index (its lines
// in the index are not those of the working tree).
func TestBrowserStagedHunks(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"f.txt": pageLines(40)})
	writeFile(t, repo, "f.txt", strings.Replace(strings.Replace(pageLines(40), "line 3\n", "line three\nline 3.5\n", 1), "line 35\n", "line thirty-five\n", 1))
	d := startDaemon(t, repo)
	hunk := func(i int) string {
		return `document.querySelector('#diff tr.hunk[data-hunk="` + strconv.Itoa(i) + `"]')`
	}
	staged := func(i int) string {
		return `(` + hunk(i) + `.classList.contains('staged') && !` + hunk(i) + `.querySelector('.hstaged').hidden && ` + hunk(i) + `.querySelector('button.hunk-keep').disabled && !` + hunk(i) + `.querySelector('button.hunk-unstage').hidden)`
	}
	unstaged := func(i int) string {
		return `(!` + hunk(i) + `.classList.contains('staged') && ` + hunk(i) + `.querySelector('.hstaged').hidden && !` + hunk(i) + `.querySelector('button.hunk-keep').disabled && ` + hunk(i) + `.querySelector('button.hunk-unstage').hidden)`
	}

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("two hunks, neither staged", `document.querySelectorAll('#diff tr.hunk').length === 2 && !!`+hunk(1)+`?.querySelector('button.hunk-keep:not(:disabled)') && `+unstaged(0)+` && `+unstaged(1))
	// Stage and unstage ask for no confirmation.
	b.click("Keep on the second hunk", `#diff tr.hunk[data-hunk="1"] button.hunk-keep:not(:disabled)`)
	b.waitFor("the second hunk staged, the first not", `!!`+hunk(1)+` && `+staged(1)+` && `+unstaged(0))
	if got := git(t, repo, "diff", "--cached"); !strings.Contains(got, "+line thirty-five") || strings.Contains(got, "three") {
		t.Fatalf("the index after Keep on the second hunk:\n%s", got)
	}
	b.click("Unstage on the second hunk", `#diff tr.hunk[data-hunk="1"] button.hunk-unstage:not(:disabled)`)
	b.waitFor("neither staged", `!!`+hunk(1)+` && `+unstaged(0)+` && `+unstaged(1))
	if got := git(t, repo, "diff", "--cached"); got != "" {
		t.Errorf("the index after Unstage:\n%s", got)
	}
}
