package test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// sentAction is a dispatchAction frame the page sent.
type sentAction struct {
	Method string `json:"method"`
	Params struct {
		Channel string `json:"channel"`
		Action  struct {
			Type       string          `json:"type"`
			Annotation json.RawMessage `json:"annotation"`
			Meta       json.RawMessage `json:"_meta"`
		} `json:"action"`
	} `json:"params"`
}

// lastSent waits until the tab has sent an action of type typ (devtools
// reports a frame sent apart from what the page shows) and returns the
// last one.
func lastSent(t *testing.T, ws *sockets, typ string) sentAction {
	t.Helper()
	deadline := time.Now().Add(browserWait)
	for {
		var found *sentAction
		for _, f := range ws.frames() {
			var a sentAction
			if json.Unmarshal([]byte(f), &a) != nil || a.Method != "dispatchAction" || a.Params.Action.Type != typ {
				continue
			}
			found = &a
		}
		if found != nil {
			return *found
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page sent no %s", typ)
		}
		time.Sleep(50 * time.Millisecond) // polls for the frame, as waitFor polls the page
	}
}

// TestPageCommentCarriesShownVersions: a comment written on lines chosen
// with the keys is sent with the versions on the screen, the same _meta
// (view and versions of that file) the page sends with the file's
// review flag; a reply, which anchors nothing, carries none.
func TestPageCommentCarriesShownVersions(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": pageLines(20), "b.txt": "b\n"})
	writeFile(t, repo, "a.txt", strings.Replace(pageLines(20), "line 10\n", "line ten\n", 1))
	writeFile(t, repo, "b.txt", "b\nmore\n")
	d := startDaemon(t, repo)
	ws := watchSockets(t, b)

	b.do(chromedp.Navigate(d.Review))
	b.waitFor("a.txt's diff", `document.getElementById('diff-path').textContent === 'a.txt' && !!document.querySelector('#diff tr.hunk')`)
	b.do(chromedp.KeyEvent("v"), chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierShift)), chromedp.KeyEvent("c"))
	b.waitFor("the comment box", `document.activeElement && document.activeElement.matches('#diff .composer textarea')`)
	b.do(chromedp.KeyEvent("this is off by one"), chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	b.waitFor("the thread", `!document.querySelector('#diff .composer') && [...document.querySelectorAll('#diff .thread')].some((t) => t.textContent.includes('this is off by one'))`)

	// A reply anchors nothing: it names no versions.
	b.click("Reply", `#diff .thread button.reply`)
	b.waitFor("the reply box", `!!document.querySelector('#diff .thread .composer textarea')`)
	b.eval(`document.querySelector('#diff .thread .composer textarea').focus()`, nil)
	b.do(chromedp.KeyEvent("agreed"), chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	b.waitFor("the reply", `[...document.querySelectorAll('#diff .thread')].some((t) => t.textContent.includes('agreed'))`)
	if reply := lastSent(t, ws, "annotations/entrySet"); len(reply.Params.Action.Meta) != 0 {
		t.Errorf("a reply carries _meta %s", reply.Params.Action.Meta)
	}

	// The review flag of the same file, through the same intent().
	b.do(chromedp.KeyEvent("x"))
	b.waitFor("a.txt reviewed", fileRow("a.txt")+`.classList.contains('is-reviewed')`)

	comment := lastSent(t, ws, "annotations/set")
	review := lastSent(t, ws, "changeset/filesReviewChanged")
	var got, want struct {
		View     string                       `json:"view"`
		Versions map[string]map[string]string `json:"versions"`
	}
	if err := json.Unmarshal(comment.Params.Action.Meta, &got); err != nil {
		t.Fatalf("the comment's _meta %s: %v", comment.Params.Action.Meta, err)
	}
	if err := json.Unmarshal(review.Params.Action.Meta, &want); err != nil {
		t.Fatalf("the review flag's _meta %s: %v", review.Params.Action.Meta, err)
	}
	if len(want.Versions) != 1 || want.View == "" {
		t.Fatalf("the review flag's _meta is not one file's versions and a view: %s", review.Params.Action.Meta)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the comment carries %s, want what the review flag of its file carries: %s", comment.Params.Action.Meta, review.Params.Action.Meta)
	}
	for id, v := range got.Versions {
		if !strings.HasSuffix(id, "/a.txt") || v["after"] == "" {
			t.Errorf("the comment names the versions of %s %v, want a.txt's after-version", id, v)
		}
	}
}
