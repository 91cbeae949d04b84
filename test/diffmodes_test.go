package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
)

// goLines is a small Go-like file of n lines.
func goLines(n int) string {
	return lines(n, func(i int) string {
		switch i % 6 {
		case 0:
			return "func f" + string(rune('a'+i%26)) + "() {"
		case 5:
			return "}"
		}
		return "\tx := " + string(rune('a'+i%26))
	})
}

// wsEdits are real edits of whitespace, alone and mixed with content
// changes: a file reindented, one with trailing spaces and CRLF only, one
// mixing all of them with changed lines.
func wsEdits(t *testing.T) (repo string, want map[string]bool) {
	base := goLines(30)
	repo = gitRepo(t, map[string]string{"indent.go": base, "crlf.go": base, "mixed.go": base})
	writeFile(t, repo, "indent.go", strings.ReplaceAll(base, "\tx", "    x"))
	writeFile(t, repo, "crlf.go", strings.Replace(strings.ReplaceAll(base, "\n", "\r\n"), "}\r\n", "}   \r\n", 2))
	mixed := strings.Split(base, "\n")
	mixed[2] = "        " + strings.TrimSpace(mixed[2])  // indent
	mixed[3] = strings.Replace(mixed[3], "x", "y", 1)    // real
	mixed[4] += " \t"                                    // trailing
	mixed[12] = strings.Replace(mixed[12], ":=", "=", 1) // real
	mixed[13] += "\r"                                    // CRLF
	mixed[25] = "\t" + mixed[25]                         // indent
	writeFile(t, repo, "mixed.go", strings.Join(mixed, "\n"))
	// Whether each file keeps a diff with whitespace ignored.
	return repo, map[string]bool{"indent.go": false, "crlf.go": false, "mixed.go": true}
}

// TestIgnoreWhitespacePatchMatchesGit: a file's patch read with ws=ignore
// is what git diff -w prints for it, byte for byte, on real edits of
// indentation, trailing spaces and line ends mixed with real changes; a
// file whose only change is whitespace reads as an empty patch (git
// prints nothing for it), while its published patch is the whole change.
func TestIgnoreWhitespacePatchMatchesGit(t *testing.T) {
	t.Parallel()
	repo, keeps := wsEdits(t)
	m := subscribeUncommitted(t, startDaemon(t, repo))
	st := m.Wait("three files", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 3 })
	for rel, keep := range keeps {
		f := fileByPath(st, repo, rel)
		uri := metaString(f.Meta, "changesetd", "patchUri")
		got, err := readResource(t, m.c, uri+"&ws=ignore")
		if err != nil {
			t.Fatalf("%s: reading its patch with whitespace ignored: %v", rel, err)
		}
		want := git(t, repo, "diff", "-w", "--full-index", "--binary", "--", rel)
		if string(got) != want {
			t.Errorf("%s: the daemon's -w patch differs from git diff -w\n--- daemon\n%s\n--- git\n%s", rel, got, want)
		}
		if keep != (len(got) > 0) {
			t.Errorf("%s: a -w patch of %d bytes, want one only for a file with a real change", rel, len(got))
		}
		if whole := filePatch(t, m.c, f); whole != git(t, repo, "diff", "--full-index", "--binary", "--", rel) {
			t.Errorf("%s: the published patch is not git diff's", rel)
		}
	}
	f := fileByPath(st, repo, "mixed.go")
	if _, err := readResource(t, m.c, metaString(f.Meta, "changesetd", "patchUri")+"&ws=all"); err == nil || !strings.Contains(err.Error(), "ws \"all\"") {
		t.Errorf("ws=all: %v, want a refusal naming the value", err)
	}
}

// noIndexHunks is git diff --no-index of two contents, from its first
// hunk on (the paths of the header are the temporary files').
func noIndexHunks(t *testing.T, before, after string) string {
	t.Helper()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "reviewed"), filepath.Join(dir, "now")
	if err := os.WriteFile(a, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(after), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("git", "diff", "--no-index", "--no-color", a, b).Output() // exit 1: they differ
	return hunksOf(string(out))
}

func hunksOf(patch string) string {
	if i := strings.Index(patch, "\n@@ "); i >= 0 {
		return patch[i+1:]
	}
	return ""
}

// TestSinceReviewSurvivesRestart: a file marked reviewed and then edited
// by an agent offers the patch from the reviewed version to the current
// one, which is git diff --no-index of the two; the offer and the version
// it reads from survive a restart of the daemon.
func TestSinceReviewSurvivesRestart(t *testing.T) {
	t.Parallel()
	base := pageLines(40)
	repo := gitRepo(t, map[string]string{"c.txt": base})
	reviewed := strings.Replace(base, "line 5\n", "line 5 by you\n", 1)
	writeFile(t, repo, "c.txt", reviewed)
	d := startDaemon(t, repo)
	c := d.client(t, "reviewer")
	uri := expand(t, catalogue(t, c, onlySession(t, c).Resource)["uncommitted"].URITemplate, nil)
	m := mirrorChangeset(t, c, uri)
	st := m.Wait("c.txt changed", func(st protocol.ChangesetState) bool { return ready(st) && fileByPath(st, repo, "c.txt") != nil })
	review(t, c, uri, 1, true, fileByPath(st, repo, "c.txt").ID)
	m.Wait("c.txt reviewed", func(st protocol.ChangesetState) bool { return reviewedIn(st, repo, "c.txt") })
	offered := func(st protocol.ChangesetState) bool {
		f := fileByPath(st, repo, "c.txt")
		return ready(st) && f != nil && !f.IsReviewed() && metaString(f.Meta, "changesetd", "sinceReview", "patchUri") != ""
	}
	if f := fileByPath(m.State(), repo, "c.txt"); metaString(f.Meta, "changesetd", "sinceReview", "patchUri") != "" {
		t.Errorf("a file reviewed as it is offers the changes since its review")
	}

	d.hookTurn(t, "start", "cc-since", repo, "edit c.txt")
	now := strings.Replace(strings.Replace(reviewed, "line 30\n", "line 30 by the agent\n", 1), "line 38\n", "", 1)
	writeFile(t, repo, "c.txt", now)
	d.hookTurn(t, "end", "cc-since", repo, "")
	st = m.Wait("the offer of the changes since the review", offered)
	want := noIndexHunks(t, reviewed, now)
	if !strings.Contains(want, "+line 30 by the agent") || strings.Contains(want, "by you") {
		t.Fatalf("git diff --no-index of the two versions:\n%s", want)
	}
	f := fileByPath(st, repo, "c.txt")
	since := metaString(f.Meta, "changesetd", "sinceReview", "patchUri")
	got, err := readResource(t, m.c, since)
	if err != nil {
		t.Fatalf("reading %s: %v", since, err)
	}
	if hunksOf(string(got)) != want || !strings.HasPrefix(string(got), "diff --git a/c.txt b/c.txt\n") {
		t.Errorf("the changes since the review\n%s\nwant the hunks of git diff --no-index\n%s", got, want)
	}
	if strings.Contains(string(got), "by you") && !strings.Contains(want, "by you") {
		t.Errorf("the changes since the review show the change that was reviewed")
	}
	if nonce := metaString(f.Meta, "changesetd", "sinceReview", "reviewedNonce"); nonce != changeset.BlobOID([]byte(reviewed)) || !strings.HasSuffix(since, "&since="+nonce) {
		t.Errorf("reviewedNonce %s in %s, want the reviewed content's blob id %s", nonce, since, changeset.BlobOID([]byte(reviewed)))
	}
	// Another reviewed version than the one kept is refused, not read
	// from the one kept.
	other := strings.Replace(since, "&since=", "&since="+changeset.BlobOID([]byte(base))+"&was=", 1)
	if _, err := readResource(t, m.c, other); err == nil || !strings.Contains(err.Error(), "version marked reviewed is") {
		t.Errorf("since another version: %v, want a conflict", err)
	}

	c.Close()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	d2 := startDaemonIn(t, d.StateDir, repo)
	c2 := d2.client(t, "reviewer-2")
	m2 := mirrorChangeset(t, c2, uri)
	st = m2.Wait("the offer after a restart", offered)
	f = fileByPath(st, repo, "c.txt")
	got, err = readResource(t, c2, metaString(f.Meta, "changesetd", "sinceReview", "patchUri"))
	if err != nil || hunksOf(string(got)) != want {
		t.Errorf("after a restart, the changes since the review: %v\n%s\nwant\n%s", err, got, want)
	}
	// Read with whitespace ignored too: the same here, as the agent's
	// edits are not whitespace.
	if ws, err := readResource(t, c2, metaString(f.Meta, "changesetd", "sinceReview", "patchUri")+"&ws=ignore"); err != nil || string(ws) != string(got) {
		t.Errorf("since the review with whitespace ignored: %v\n%s", err, ws)
	}
}

// shownLines is the page's expression for the lines of the diff shown, as
// "+text", "-text" and " text", trailing whitespace left out.
const shownLines = `[...document.querySelectorAll('#diff table.difftable tr.line')].map(tr => (tr.querySelector('.sign').textContent + tr.querySelector('td.code').textContent).trimEnd())`

// patchLines lists the body lines of a patch's hunks as shownLines does.
func patchLines(patch string) []string {
	out := []string{}
	in := false
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "@@ "):
			in = true
		case strings.HasPrefix(l, "diff --git "):
			in = false
		case in && l != "" && l[0] != '\\':
			if l[0] == ' ' {
				l = " " + strings.TrimRight(l[1:], " \t\r")
			}
			out = append(out, strings.TrimRight(l, " \t\r"))
		}
	}
	return out
}

// TestBrowserDiffModes uses the page as a reviewer: w (and the button)
// shows a file's diff as git diff -w does, says when only whitespace
// changed, and turns off comments and hunk operations on lines that are
// not the changeset's, saying why; the key follows the single-key switch
// and is in the key help. A file marked reviewed with x and then edited
// by an agent through the hooks unfolds with the offer of the changes
// since the review, which shows git diff --no-index of the two versions.
func TestBrowserDiffModes(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo, _ := wsEdits(t)
	base := pageLines(40)
	writeFile(t, repo, "c.txt", base)
	git(t, repo, "add", "c.txt")
	git(t, repo, "commit", "-q", "-m", "c")
	reviewed := strings.Replace(base, "line 5\n", "line 5 by you\n", 1)
	writeFile(t, repo, "c.txt", reviewed)
	d := startDaemon(t, repo)
	b.do(chromedp.Navigate(d.Review))
	b.waitFor("four files, ready", `document.querySelectorAll('#files li.file').length === 4 && document.getElementById('cs-status').textContent === 'ready'`)
	wsOn := `document.getElementById('ws-toggle').getAttribute('aria-pressed') === 'true'`
	shows := func(what string, want []string) {
		t.Helper()
		b.waitFor(what, `JSON.stringify(`+shownLines+`) === `+js(mustJSON(t, want)))
	}
	// Whether the hunks' controls (mark, Keep, Undo) are shown.
	controlsOff := `document.querySelector('#diff tr.hunk') && [...document.querySelectorAll('#diff .hunkops')].every(h => h.getClientRects().length === 0)`
	controlsOn := `document.querySelector('#diff tr.hunk') && [...document.querySelectorAll('#diff .hunkops')].every(h => h.getClientRects().length > 0)`
	// noLines chooses lines with the keys and with a selection, and checks
	// that neither offers a comment or an operation.
	noLines := func() {
		t.Helper()
		b.do(chromedp.KeyEvent("v"))
		b.eval(`(() => { const rows = document.querySelectorAll('#diff tr.line'); const r = document.createRange(); r.setStartBefore(rows[1]); r.setEndAfter(rows[3]); getSelection().removeAllRanges(); getSelection().addRange(r); return true; })()`, nil)
		b.do(chromedp.KeyEvent("c"))
		b.waitFor("no lines chosen, no comment box", `document.getElementById('range-ops').hidden && document.getElementById('diff-status').textContent === '' && !document.querySelector('#diff .composer')`)
		b.eval(`getSelection().removeAllRanges(), true`, nil)
	}

	t.Run("ignore whitespace", func(t *testing.T) {
		b.t = t
		b.click("mixed.go", `#files li.file[data-path="mixed.go"]`)
		whole := patchLines(git(t, repo, "diff", "--", "mixed.go"))
		shows("mixed.go's whole diff", whole)
		b.waitFor("its hunk controls", controlsOn)
		b.do(chromedp.KeyEvent("v"))
		comment(b, "Check this block.")
		b.do(chromedp.KeyEvent("w"))
		ignored := patchLines(git(t, repo, "diff", "-w", "--", "mixed.go"))
		if len(ignored) == 0 || len(ignored) >= len(whole) {
			t.Fatalf("git diff -w of mixed.go has %d lines, the whole diff %d", len(ignored), len(whole))
		}
		shows("w: mixed.go as git diff -w shows it", ignored)
		b.waitFor("the toggle pressed, and what is off and why", wsOn+` && document.querySelector('#diff .note.ws-ignored').textContent.includes('Comments on lines, Keep, Undo and hunk marks are off here') && `+controlsOff)

		// No line can be chosen for a comment or an operation, by
		// keys or by the mouse; the comment made on the whole diff shows
		// under its line.
		noLines()
		b.waitFor("the comment under its line", `(() => { const t = document.querySelector('#diff table.difftable .thread-row'); return t && t.textContent.includes('Check this block.') && !document.querySelector('#diff .file-threads'); })()`)

		b.click("indent.go", `#files li.file[data-path="indent.go"]`)
		b.waitFor("indent.go: only whitespace changed, said so", `(document.querySelector('#diff .note.empty-mode')?.textContent || '').includes('Only whitespace changed') && !document.querySelector('#diff tr.line')`)
		b.click("crlf.go", `#files li.file[data-path="crlf.go"]`)
		b.waitFor("crlf.go: only whitespace changed, said so", `(document.querySelector('#diff .note.empty-mode')?.textContent || '').includes('Only whitespace changed')`)
		b.shot("diffmodes-01-whitespace-only")
		b.axeCheck("whitespace ignored")

		b.click("Show whitespace", `#ws-toggle`)
		shows("crlf.go's whole diff again", patchLines(git(t, repo, "diff", "--", "crlf.go")))
		b.waitFor("the toggle released, the controls back", `!(`+wsOn+`) && !document.querySelector('#diff .note.ws-ignored') && `+controlsOn)

		b.do(chromedp.KeyEvent("?"))
		b.waitFor("w in the key help", `document.getElementById('help').open && document.getElementById('help').textContent.includes('ignore whitespace changes')`)
		b.click("single keys off", `#single-keys`)
		b.do(chromedp.KeyEvent(kb.Escape))
		b.waitFor("the help closed", `!document.getElementById('help').open`)
		b.do(chromedp.KeyEvent("w"))
		b.do(chromedp.KeyEvent("?")) // a key the page takes if single keys were on: nothing happens either
		b.waitFor("w ignored with single keys off", `!(`+wsOn+`) && !document.getElementById('help').open && !document.querySelector('#diff .note.ws-ignored')`)
		b.click("the keys' help", `#help-open`)
		b.click("single keys on", `#single-keys`)
		b.click("close", `#help-close`)
		b.waitFor("single keys on", `document.getElementById('single-keys').checked && document.getElementById('keys-off').hidden`)
	})

	t.Run("since my last review", func(t *testing.T) {
		b.t = t
		b.click("c.txt", `#files li.file[data-path="c.txt"]`)
		shows("c.txt's diff", patchLines(git(t, repo, "diff", "--", "c.txt")))
		b.do(chromedp.KeyEvent("x"))
		b.waitFor("c.txt reviewed and folded", `document.querySelector('#files li.file[data-path="c.txt"]').classList.contains('reviewed') || !!document.querySelector('#diff .note.folded')`)
		b.waitFor("c.txt folded", `!!document.querySelector('#diff .note.folded')`)

		d.hookTurn(t, "start", "cc-since", repo, "edit c.txt")
		now := strings.Replace(strings.Replace(reviewed, "line 30\n", "line 30 by the agent\n", 1), "line 38\n", "", 1)
		writeFile(t, repo, "c.txt", now)
		wrote, _ := json.Marshal(map[string]any{"session_id": "cc-since", "cwd": repo, "hook_event_name": "PostToolUse", "tool_name": "Write",
			"tool_input": map[string]any{"file_path": filepath.Join(repo, "c.txt"), "content": now}})
		d.cliOK(t, string(wrote), "turn", "edit", "--hook")
		d.hookTurn(t, "end", "cc-since", repo, "")
		b.waitFor("c.txt unfolded, offering the changes since the review", `!document.querySelector('#diff .note.folded') && !!document.querySelector('#diff .note.since-offer button.since-review')`)
		shows("the whole diff until asked", patchLines(git(t, repo, "diff", "--", "c.txt")))
		b.shot("diffmodes-02-since-offer")

		b.click("Changes since your review", `#diff button.since-review`)
		since := patchLines(noIndexHunks(t, reviewed, now))
		if len(since) == 0 {
			t.Fatal("git diff --no-index of the two versions is empty")
		}
		shows("only what changed since the review: git diff --no-index of the two versions", since)
		b.waitFor("said so, with the controls off and no author of the changeset's hunks", `document.querySelector('#diff .note.since-review').textContent.includes('since your review') && `+controlsOff+` && !document.querySelector('#diff .hunk-author')`)
		noLines()
		b.shot("diffmodes-03-since-review")
		b.axeCheck("changes since the review")

		b.click("Whole diff", `#diff .note.since-review button.whole-diff`)
		shows("the whole diff again", patchLines(git(t, repo, "diff", "--", "c.txt")))
		b.waitFor("the controls back, the agent's hunks its own", controlsOn+` && [...document.querySelectorAll('#diff .hunk-author')].some(a => a.textContent.includes('cc-since'))`)
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
