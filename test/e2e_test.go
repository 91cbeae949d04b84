package test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
	"github.com/changesetd/changesetd/uritemplate"
)

func rpcCode(err error) int64 {
	var re *fake.RPCError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

// onlySession returns the summary of the daemon's single session.
func onlySession(t *testing.T, c *fake.Client) protocol.SessionSummary {
	t.Helper()
	var res protocol.ListSessionsResult
	if err := c.Call(ctx(t), protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 {
		t.Fatalf("listSessions: %d sessions, want 1", len(res.Items))
	}
	return res.Items[0]
}

// catalogue subscribes to a session and waits until it is ready (its
// baseline taken: what changes from now on is the session's) with its
// changeset catalogue.
func catalogue(t *testing.T, c *fake.Client, sessionURI string) map[string]protocol.Changeset {
	t.Helper()
	raw, from := subscribe(t, c, sessionURI)
	var st protocol.SessionState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st.Lifecycle != protocol.LifecycleReady {
		// The catalogue comes first, then session/ready.
		err := c.Wait(ctx(t), "session ready", func() bool {
			ready := false
			for _, e := range c.Envelopes(sessionURI) {
				if e.ServerSeq <= from {
					continue
				}
				switch e.Action.ActionType() {
				case "session/changesetsChanged":
					st.Changesets = e.Action.Action.(protocol.SessionChangesetsChanged).Changesets
				case "session/ready":
					ready = true
				}
			}
			// The catalogue is published before session/ready, and may
			// be empty (a directory that cannot be served).
			return ready
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]protocol.Changeset{}
	for _, cs := range st.Changesets {
		out[cs.ChangeKind] = cs
	}
	return out
}

func expand(t *testing.T, tmpl string, vars uritemplate.Values) string {
	t.Helper()
	tp, err := uritemplate.Parse(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	u, err := tp.Expand(vars)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestInitializeNegotiatesVersions(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	cases := []struct {
		offer []string
		want  string
		code  int64
	}{
		{[]string{"1.0.0"}, "1.0.0", 0},
		{[]string{"0.9.3", "1.2.0", "1.0.0"}, "1.2.0", 0},
		{[]string{"0.9.0"}, "0.9.0", 0},
		{[]string{"0.7.0", "0.6.0"}, "0.7.0", 0},
		{[]string{"2.0.0", "0.5.1"}, "", protocol.CodeUnsupportedProtocolVersion},
		{[]string{"1.0"}, "", protocol.CodeInvalidParams},
	}
	for _, tc := range cases {
		c := d.dial(t)
		res, err := c.Initialize(ctx(t), "client-"+strings.Join(tc.offer, "_"), nil, tc.offer...)
		if tc.code != 0 {
			if rpcCode(err) != tc.code {
				t.Errorf("offer %v: err = %v, want code %d", tc.offer, err, tc.code)
			}
			if tc.code == protocol.CodeUnsupportedProtocolVersion {
				var re *fake.RPCError
				errors.As(err, &re)
				var data struct {
					SupportedVersions []string `json:"supportedVersions"`
				}
				raw, _ := json.Marshal(re.Data)
				if json.Unmarshal(raw, &data); len(data.SupportedVersions) == 0 {
					t.Errorf("offer %v: error data %s lacks supportedVersions", tc.offer, re.Data)
				}
				// The socket stays open: the client closes it (VS Code
				// shows "incompatible" only on an open transport).
				if err := c.Call(ctx(t), protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
					t.Errorf("offer %v: ping after the refusal: %v, want the socket left open", tc.offer, err)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("offer %v: %v", tc.offer, err)
			continue
		}
		if res.ProtocolVersion != tc.want {
			t.Errorf("offer %v: negotiated %q, want %q", tc.offer, res.ProtocolVersion, tc.want)
		}
	}
}

func TestAuthAndOrigin(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	base := "http://" + d.Addr + "/ahp"
	upgrade := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}
	if r := httpGet(t, base, upgrade); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", r.StatusCode)
	}
	if r := httpGet(t, base+"?token=wrong", upgrade); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: status %d, want 401", r.StatusCode)
	}
	wsBase := "ws://" + d.Addr + "/ahp"
	c, _, err := fake.Dial(ctx(t), wsBase, http.Header{"Authorization": {"Bearer " + d.Token}})
	if err != nil {
		t.Fatalf("bearer token refused: %v", err)
	}
	c.Close()
	_, resp, err := fake.Dial(ctx(t), d.URL, http.Header{"Origin": {"https://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Origin: err=%v resp=%v, want 403", err, resp)
	}
	c, _, err = fake.Dial(ctx(t), d.URL, http.Header{"Origin": {"http://localhost:3000"}})
	if err != nil {
		t.Errorf("loopback Origin refused: %v", err)
	} else {
		c.Close()
	}
	info, err := os.Stat(filepath.Join(d.StateDir, "token"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v mode %v, want 0600", err, info.Mode())
	}
}

func TestPingBeforeInitializeAndGating(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	c := d.dial(t)
	if err := c.Call(ctx(t), protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
		t.Fatalf("ping before initialize: %v", err)
	}
	err := c.Call(ctx(t), protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, nil)
	if rpcCode(err) != protocol.CodeInvalidRequest {
		t.Errorf("listSessions before initialize: %v, want -32600", err)
	}
	if _, err := c.Initialize(ctx(t), "gate", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx(t), "gate", nil); rpcCode(err) != protocol.CodeInvalidRequest {
		t.Errorf("second initialize: %v, want -32600", err)
	}
}

func TestUncommittedChangesetEndToEnd(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "gone.txt": "bye\n"})
	writeFile(t, repo, "a.txt", "one\n2\nthree\nfour\n")
	writeFile(t, repo, "new/b.txt", "fresh\n")
	os.Remove(filepath.Join(repo, "gone.txt"))
	d := startDaemon(t, repo)
	c := d.client(t, "ide")

	sum := onlySession(t, c)
	if want := "file://" + repo; !slices.Contains(sum.WorkingDirectories, want) {
		t.Fatalf("workingDirectories = %v, want %s", sum.WorkingDirectories, want)
	}
	cat := catalogue(t, c, sum.Resource)
	for _, kind := range []string{"uncommitted", "branch", "session", "turn", "compare-turns"} {
		cs, ok := cat[kind]
		if !ok {
			t.Fatalf("catalogue lacks %s: %v", kind, cat)
		}
		if !cs.HasReview() {
			t.Errorf("%s does not advertise review", kind)
		}
		if !strings.HasPrefix(cs.URITemplate, "ahp-changeset:/") {
			t.Errorf("%s template %q is not an ahp-changeset: URI", kind, cs.URITemplate)
		}
	}
	uri := expand(t, cat["uncommitted"].URITemplate, nil)
	m := mirrorChangeset(t, c, uri)
	st := m.Wait("3 files ready", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 3 })

	a := fileByPath(st, repo, "a.txt")
	if a == nil || a.Edit.Before == nil || a.Edit.After == nil || a.Edit.Diff == nil {
		t.Fatalf("a.txt: %+v", a)
	}
	if *a.Edit.Diff.Added != 2 || *a.Edit.Diff.Removed != 1 {
		t.Errorf("a.txt diff = +%d -%d, want +2 -1", *a.Edit.Diff.Added, *a.Edit.Diff.Removed)
	}
	if b := fileByPath(st, repo, "new/b.txt"); b == nil || b.Edit.Before != nil || b.Edit.After == nil {
		t.Errorf("new/b.txt should be a creation: %+v", b)
	}
	if g := fileByPath(st, repo, "gone.txt"); g == nil || g.Edit.After != nil || g.Edit.Before == nil {
		t.Errorf("gone.txt should be a deletion: %+v", g)
	}

	// Both sides are readable: the before side stays the committed bytes.
	var rr protocol.ResourceReadResult
	if err := c.Call(ctx(t), protocol.MethodResourceRead, map[string]any{"channel": protocol.RootURI, "uri": a.Edit.Before.Content.URI}, &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Data != "one\ntwo\nthree\n" {
		t.Errorf("before content = %q", rr.Data)
	}
	if err := c.Call(ctx(t), protocol.MethodResourceRead, map[string]any{"channel": protocol.RootURI, "uri": a.Edit.After.Content.URI}, &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Data != "one\n2\nthree\nfour\n" {
		t.Errorf("after content = %q", rr.Data)
	}
	err := c.Call(ctx(t), protocol.MethodResourceRead, map[string]any{"channel": protocol.RootURI, "uri": "file:///etc/passwd"}, nil)
	if rpcCode(err) != protocol.CodePermissionDenied {
		t.Errorf("reading outside the workspace: %v, want -32009", err)
	}

	// A write on disk arrives as a live update.
	writeFile(t, repo, "a.txt", "one\ntwo\nthree\n")
	writeFile(t, repo, "c.txt", "x\ny\n")
	st = m.Wait("a.txt clean, c.txt added", func(st protocol.ChangesetState) bool {
		return ready(st) && fileByPath(st, repo, "a.txt") == nil && fileByPath(st, repo, "c.txt") != nil
	})
	if c := fileByPath(st, repo, "c.txt"); *c.Edit.Diff.Added != 2 {
		t.Errorf("c.txt added = %d, want 2", *c.Edit.Diff.Added)
	}
	// A commit moves the base without any working-tree event.
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "second")
	m.Wait("clean after commit", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 0 })
}

func TestUnknownAndMalformedChangesetURIs(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a": "a\n"})
	d := startDaemon(t, repo)
	c := d.client(t, "ide")
	sum := onlySession(t, c)
	cat := catalogue(t, c, sum.Resource)
	turn := expand(t, cat["turn"].URITemplate, uritemplate.Values{"turnId": "no such/turn"})
	for _, uri := range []string{
		turn,
		"ahp-changeset:/" + strings.TrimPrefix(sum.Resource, "ahp-session:/") + "/changeset/bogus",
		"ahp-changeset:/nosuchsession/changeset/uncommitted",
		"ahp-changeset:",
	} {
		err := c.Call(ctx(t), protocol.MethodSubscribe, map[string]any{"channel": uri}, nil)
		if rpcCode(err) != protocol.CodeNotFound {
			t.Errorf("subscribe %s: %v, want -32008", uri, err)
		} else if len(err.Error()) < 30 {
			t.Errorf("subscribe %s: message %q does not say what was wrong", uri, err)
		}
	}
	err := c.Call(ctx(t), protocol.MethodSubscribe, map[string]any{"channel": "ahp-session:/nope"}, nil)
	if rpcCode(err) != protocol.CodeSessionNotFound {
		t.Errorf("subscribe unknown session: %v, want -32001", err)
	}
}

func TestReviewEchoAndRejection(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	writeFile(t, repo, "a.txt", "A\n")
	writeFile(t, repo, "b.txt", "B\n")
	d := startDaemon(t, repo)
	alice, bob := d.client(t, "alice"), d.client(t, "bob")
	sum := onlySession(t, alice)
	uri := expand(t, catalogue(t, alice, sum.Resource)["uncommitted"].URITemplate, nil)
	ma := mirrorChangeset(t, alice, uri)
	mb := mirrorChangeset(t, bob, uri)
	st := ma.Wait("two files", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 2 })
	aID := fileByPath(st, repo, "a.txt").ID

	dispatch := func(c *fake.Client, seq int64, action any) {
		t.Helper()
		if err := c.Notify(protocol.MethodDispatchAction, map[string]any{"channel": uri, "clientSeq": seq, "action": action}); err != nil {
			t.Fatal(err)
		}
	}
	dispatch(alice, 1, map[string]any{"type": "changeset/filesReviewChanged", "files": []string{aID}, "reviewed": true})
	for _, m := range []*changesetMirror{ma, mb} {
		st := m.Wait("a.txt reviewed", func(st protocol.ChangesetState) bool {
			f := fileByPath(st, repo, "a.txt")
			return f != nil && f.IsReviewed()
		})
		if f := fileByPath(st, repo, "b.txt"); f.IsReviewed() {
			t.Error("b.txt reviewed too")
		}
	}
	echo := func(c *fake.Client) *fake.Envelope {
		for _, e := range c.Envelopes(uri) {
			if e.Origin != nil {
				return &e
			}
		}
		return nil
	}
	for name, c := range map[string]*fake.Client{"alice": alice, "bob": bob} {
		e := echo(c)
		if e == nil || e.Origin.ClientID != "alice" || e.Origin.ClientSeq != 1 || e.RejectionReason != "" {
			t.Errorf("%s: echo = %+v, want origin alice/1", name, e)
		}
	}

	// Not client-dispatchable and malformed: rejected to the sender only.
	dispatch(alice, 2, map[string]any{"type": "changeset/fileRemoved", "fileId": aID})
	dispatch(alice, 3, map[string]any{"type": "changeset/filesReviewChanged", "files": []string{}, "reviewed": true})
	// Unknown channel: dropped silently.
	if err := alice.Notify(protocol.MethodDispatchAction, map[string]any{"channel": "ahp-changeset:/nobody/changeset/uncommitted", "clientSeq": 4, "action": map[string]any{"type": "changeset/filesReviewChanged", "files": []string{"x"}, "reviewed": true}}); err != nil {
		t.Fatal(err)
	}
	rejected := func() []fake.Envelope {
		var out []fake.Envelope
		for _, e := range alice.Envelopes("") {
			if e.RejectionReason != "" {
				out = append(out, e)
			}
		}
		return out
	}
	if err := alice.Wait(ctx(t), "two rejections", func() bool { return len(rejected()) == 2 }); err != nil {
		t.Fatal(err)
	}
	for _, e := range rejected() {
		if e.Origin == nil || e.Origin.ClientID != "alice" || (e.Origin.ClientSeq != 2 && e.Origin.ClientSeq != 3) {
			t.Errorf("rejection %+v lacks the dispatch origin", e)
		}
	}
	// Bob pings after the rejections were produced; by the time the pong
	// arrives he would have received any echo of them.
	if err := bob.Call(ctx(t), protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range bob.Envelopes("") {
		if e.RejectionReason != "" {
			t.Errorf("bob received alice's rejection: %+v", e)
		}
	}
	if f := fileByPath(mb.State(), repo, "a.txt"); !f.IsReviewed() {
		t.Error("rejected action changed bob's state")
	}
}
