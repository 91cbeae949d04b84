package test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/chromedp/chromedp"
)

// TestBrowserReducerNewActions runs the page's reducers and the daemon's
// on the same states and actions: chat/turnsLoaded (older turns in front,
// those held not repeated, the cursor taken or cleared),
// session/workingDirectoryReplaced, session/chatsReordered, and status,
// operation status and scope strings the page does not know, which stay
// as they are.
func TestBrowserReducerNewActions(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	d := startDaemon(t)
	openBlank(t, b, d)
	turn := func(id string) string {
		return fmt.Sprintf(`{"id":%q,"message":{"text":%q},"responseParts":[],"state":"complete"}`, id, "turn "+id)
	}
	chat := func(uri string) string { return fmt.Sprintf(`{"resource":%q,"title":%q}`, uri, uri) }
	chats := `{"chats":[` + chat("ahp-chat:/s/x") + `,` + chat("ahp-chat:/s/y") + `,` + chat("ahp-chat:/s/z") + `]}`
	dirs := `{"workingDirectories":["file:///a","file:///b","file:///c"]}`
	cs := `{"status":"ready","files":[],"operations":[{"id":"revert","label":"Revert","scopes":["file"],"status":"idle"}]}`
	for _, c := range []struct {
		name, fn, initial, actions, want string
	}{
		{"turnsLoaded puts older turns in front", "applyChat", `{"turns":[` + turn("c") + `,` + turn("d") + `],"turnsNextCursor":"cur-c"}`,
			`[{"type":"chat/turnsLoaded","turns":[` + turn("a") + `,` + turn("b") + `,` + turn("c") + `],"turnsNextCursor":"cur-a"}]`,
			`{"turns":[` + turn("a") + `,` + turn("b") + `,` + turn("c") + `,` + turn("d") + `],"turnsNextCursor":"cur-a"}`},
		{"turnsLoaded without a cursor clears it", "applyChat", `{"turns":[` + turn("b") + `],"turnsNextCursor":"cur-b"}`,
			`[{"type":"chat/turnsLoaded","turns":[` + turn("a") + `]}]`,
			`{"turns":[` + turn("a") + `,` + turn("b") + `]}`},
		{"workingDirectoryReplaced C→A", "applySession", dirs, `[{"type":"session/workingDirectoryReplaced","directory":"file:///c","replacement":"file:///a"}]`,
			`{"workingDirectories":["file:///a","file:///b"]}`},
		{"workingDirectoryReplaced B→C", "applySession", dirs, `[{"type":"session/workingDirectoryReplaced","directory":"file:///b","replacement":"file:///c"}]`,
			`{"workingDirectories":["file:///a","file:///c"]}`},
		{"workingDirectoryReplaced by a record", "applySession", dirs, `[{"type":"session/workingDirectoryReplaced","directory":"file:///b","replacement":{"uri":"file:///d"}}]`,
			`{"workingDirectories":["file:///a","file:///d","file:///c"]}`},
		{"workingDirectoryReplaced without the target", "applySession", dirs, `[{"type":"session/workingDirectoryReplaced","directory":"file:///q","replacement":"file:///d"}]`, dirs},
		{"chatsReordered", "applySession", chats, `[{"type":"session/chatsReordered","chats":["ahp-chat:/s/z","ahp-chat:/s/q","ahp-chat:/s/x","ahp-chat:/s/z"]}]`,
			`{"chats":[` + chat("ahp-chat:/s/z") + `,` + chat("ahp-chat:/s/x") + `,` + chat("ahp-chat:/s/y") + `]}`},
		{"unknown changeset status", "applyChangeset", cs, `[{"type":"changeset/statusChanged","status":"paused"}]`,
			`{"status":"paused","files":[],"operations":[{"id":"revert","label":"Revert","scopes":["file"],"status":"idle"}]}`},
		{"unknown operation status", "applyChangeset", cs, `[{"type":"changeset/operationStatusChanged","operationId":"revert","status":"queued"}]`,
			`{"status":"ready","files":[],"operations":[{"id":"revert","label":"Revert","scopes":["file"],"status":"queued"}]}`},
		{"unknown operation scope", "applyChangeset", cs, `[{"type":"changeset/operationsChanged","operations":[{"id":"revert","label":"Revert","scopes":["file","paragraph"],"status":"idle"}]}]`,
			`{"status":"ready","files":[],"operations":[{"id":"revert","label":"Revert","scopes":["file","paragraph"],"status":"idle"}]}`},
	} {
		var got any
		b.eval(fmt.Sprintf(`import('/assets/reducer.js').then(m => { let s = %s; for (const a of %s) [s] = m.%s(s, a); return s; })`, c.initial, c.actions, c.fn), &got)
		gb, _ := json.Marshal(got)
		var want any
		json.Unmarshal([]byte(c.want), &want)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("%s: the page's reducer\n got %s\nwant %s", c.name, gb, wb)
		}
		// The daemon's reducer agrees, both read into its state type.
		if goState, jsState := goReduce(t, c.fn, c.initial, c.actions), normalise(t, c.fn, gb); goState != jsState {
			t.Errorf("%s: the daemon's reducer\n got %s\nthe page's %s", c.name, goState, jsState)
		}
	}
}

// goReduce runs actions through the daemon's reducer for fn's channel.
func goReduce(t *testing.T, fn, initial, actions string) string {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(actions), &raw); err != nil {
		t.Fatal(err)
	}
	var list []protocol.Action
	for _, r := range raw {
		a, err := protocol.DecodeAction(r)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, a)
	}
	var out any
	switch fn {
	case "applyChat":
		var s protocol.ChatState
		json.Unmarshal([]byte(initial), &s)
		for _, a := range list {
			s, _ = reducer.ApplyChat(s, a, reducer.Env{})
		}
		out = s
	case "applySession":
		var s protocol.SessionState
		json.Unmarshal([]byte(initial), &s)
		for _, a := range list {
			s, _ = reducer.ApplySession(s, a, reducer.Env{})
		}
		out = s
	case "applyChangeset":
		var s protocol.ChangesetState
		json.Unmarshal([]byte(initial), &s)
		for _, a := range list {
			s, _ = reducer.ApplyChangeset(s, a, reducer.Env{})
		}
		out = s
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// normalise reads a state into the daemon's type for fn and writes it
// again, so the page's and the daemon's compare field by field.
func normalise(t *testing.T, fn string, state []byte) string {
	t.Helper()
	var out any
	switch fn {
	case "applyChat":
		out = &protocol.ChatState{}
	case "applySession":
		out = &protocol.SessionState{}
	case "applyChangeset":
		out = &protocol.ChangesetState{}
	}
	if err := json.Unmarshal(state, out); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// TestBrowserOlderTurns restores a session with more turns than a
// restored chat holds (its latest 200): the timeline shows the latest
// page, "Load older turns" shows more, and once every turn held is shown
// it fetches the older ones from the daemon, down to the first turn.
func TestBrowserOlderTurns(t *testing.T) {
	t.Parallel()
	const n = 210
	b := newBrowser(t)
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	state := t.TempDir()
	e := startTurns(t, repo, state)
	for i := 1; i <= n; i++ {
		turnStart(t, e.c, e.sess, fmt.Sprintf("turn %03d", i))
		turnEnd(t, e.c, e.sess)
	}
	if err := e.d.stop(); err != nil {
		t.Fatal(err)
	}
	d := startDaemonIn(t, state, repo)

	b.do(chromedp.Navigate(d.Review))
	shows := func(what string, count int, newest, oldest, pager string) {
		t.Helper()
		b.waitFor(what, fmt.Sprintf(`(() => {
			const li = [...document.querySelectorAll('#turns li.turn .name')].map(e => e.textContent);
			const p = document.querySelector('.turn-pager');
			const pager = !p || p.hidden ? '' : p.querySelector('.pager-text').textContent;
			return li.length === %d && li[0] === %s && li[li.length - 1] === %s && pager === %s;
		})()`, count, js(newest), js(oldest), js(pager)))
	}
	shows("the latest 50 turns, older ones on the daemon", 50, "turn 210", "turn 161", "Latest 50 of 200+ turns.")
	for _, want := range []int{100, 150, 200} {
		b.click("Load older turns", `.turn-pager button.load-older`)
		shows(fmt.Sprintf("the latest %d turns", want), want, "turn 210", fmt.Sprintf("turn %03d", n-want+1), fmt.Sprintf("Latest %d of 200+ turns.", want))
	}
	b.eval(`document.querySelector('.turn-pager').scrollIntoView()`, nil)
	b.shot("32-older-turns")
	// Every turn held is shown: the next page comes from the daemon.
	b.click("Load older turns", `.turn-pager button.load-older`)
	shows("every turn, down to the first, and no more to load", n, "turn 210", "turn 001", "")
}
