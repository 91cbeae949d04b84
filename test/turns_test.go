package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
	"github.com/changesetd/changesetd/uritemplate"
)

// turnCLI runs "changesetd turn ..." against the daemon and returns stdout.
func (d *daemon) turnCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"turn"}, append(args, "--state-dir", d.StateDir)...)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("changesetd turn %v: %v\n%s", args, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

func turnStart(t *testing.T, c *fake.Client, sessionURI, message string) string {
	t.Helper()
	var info struct {
		TurnID string `json:"turnId"`
	}
	if err := c.Call(ctx(t), protocol.MethodTurnStart, map[string]any{"channel": sessionURI, "message": message}, &info); err != nil {
		t.Fatal(err)
	}
	return info.TurnID
}

func turnEnd(t *testing.T, c *fake.Client, sessionURI string) {
	t.Helper()
	if err := c.Call(ctx(t), protocol.MethodTurnEnd, map[string]any{"channel": sessionURI}, nil); err != nil {
		t.Fatal(err)
	}
}

// chatTurns subscribes to the session's chat (found from the session
// state) and returns the ids of its completed turns and the active one.
func chatTurns(t *testing.T, c *fake.Client, sessionURI string) (done []string, active string) {
	t.Helper()
	raw, _ := subscribe(t, c, sessionURI)
	var st protocol.SessionState
	json.Unmarshal(raw, &st)
	if len(st.Chats) == 0 {
		t.Fatal("session state lists no chat")
	}
	raw, _ = subscribe(t, c, st.Chats[0].Resource)
	var chat protocol.ChatState
	if err := json.Unmarshal(raw, &chat); err != nil {
		t.Fatal(err)
	}
	for _, tr := range chat.Turns {
		done = append(done, tr.ID)
	}
	if chat.ActiveTurn != nil {
		active = chat.ActiveTurn.ID
	}
	c.Call(ctx(t), protocol.MethodUnsubscribe, map[string]any{"channel": st.Chats[0].Resource}, nil)
	c.Call(ctx(t), protocol.MethodUnsubscribe, map[string]any{"channel": sessionURI}, nil)
	return done, active
}

// summary describes a changeset as "op path [old path] +a -r" lines.
func summary(st protocol.ChangesetState, root string) []string {
	var out []string
	rel := func(uri string) string { return strings.TrimPrefix(uri, "file://"+root+"/") }
	for _, f := range st.Files {
		op, _ := f.Meta["changesetd"].(map[string]any)["operation"].(string)
		line := op
		switch {
		case f.Edit.Before != nil && f.Edit.After != nil && f.Edit.Before.URI != f.Edit.After.URI:
			line += " " + rel(f.Edit.Before.URI) + "->" + rel(f.Edit.After.URI)
		case f.Edit.After != nil:
			line += " " + rel(f.Edit.After.URI)
		default:
			line += " " + rel(f.Edit.Before.URI)
		}
		if f.Edit.Diff != nil {
			line += " +" + itoa(*f.Edit.Diff.Added) + " -" + itoa(*f.Edit.Diff.Removed)
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

func changesetSummary(t *testing.T, c *fake.Client, uri, root string) []string {
	t.Helper()
	m := mirrorChangeset(t, c, uri)
	st := m.Wait("ready", ready)
	c.Call(ctx(t), protocol.MethodUnsubscribe, map[string]any{"channel": uri}, nil)
	return summary(st, root)
}

func TestTurnsEndToEnd(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{
		"a.txt": "a1\na2\n", "b.txt": "b1\nb2\nb3\nb4\nb5\nb6\n", "c.txt": "c1\n",
	})
	writeFile(t, repo, "a.txt", "a1\nA2\n") // before the session: never in session or turn changesets
	d := startDaemon(t, repo)
	c := d.client(t, "ide")
	sum := onlySession(t, c)
	cat := catalogue(t, c, sum.Resource)

	// Turn 1, over the protocol: a tool edit and a shell write while it runs.
	t1 := turnStart(t, c, sum.Resource, "first")
	writeFile(t, repo, "b.txt", "b1\nb2\nb3\nb4\nb5\nB6\n")
	if out, err := exec.Command("sh", "-c", "printf 'd\\n' > "+filepath.Join(repo, "d.txt")).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	turnEnd(t, c, sum.Resource)

	// Between turns, by hand.
	writeFile(t, repo, "c.txt", "c1\nc2\n")

	// Turn 2, through the CLI as an agent hook would: rename and delete.
	t2 := d.turnCLI(t, "start", "--dir", repo, "--message", "second")
	if err := os.Rename(filepath.Join(repo, "b.txt"), filepath.Join(repo, "e.txt")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(repo, "d.txt"))
	if got := d.turnCLI(t, "end", "--dir", repo); got != t2 {
		t.Errorf("turn end printed %q, want %q", got, t2)
	}

	// Turn 3 stays running: its changeset is live.
	t3 := turnStart(t, c, sum.Resource, "third")
	writeFile(t, repo, "f.txt", "f\n")

	done, active := chatTurns(t, c, sum.Resource)
	if !slices.Equal(done, []string{t1, t2}) || active != t3 {
		t.Fatalf("chat turns = %v active %q, want [%s %s] active %s", done, active, t1, t2, t3)
	}

	turnURI := func(id string) string {
		return expand(t, cat["turn"].URITemplate, uritemplate.Values{"turnId": id})
	}
	compareURI := func(a, b string) string {
		return expand(t, cat["compare-turns"].URITemplate, uritemplate.Values{"originalTurnId": a, "modifiedTurnId": b})
	}
	want := map[string][]string{
		turnURI(t1):                {"add d.txt +1 -0", "modify b.txt +1 -1"},
		turnURI(t2):                {"delete d.txt +0 -1", "move b.txt->e.txt +0 -0"},
		compareURI(t1, t2):         {"delete d.txt +0 -1", "modify c.txt +1 -0", "move b.txt->e.txt +0 -0"},
		compareURI("baseline", t1): {"add d.txt +1 -0", "modify b.txt +1 -1"},
		turnURI(t3):                {"add f.txt +1 -0"},
		expand(t, cat["session"].URITemplate, nil): {"add f.txt +1 -0", "modify c.txt +1 -0", "move b.txt->e.txt +1 -1"},
	}
	for uri, w := range want {
		if got := changesetSummary(t, c, uri, repo); !slices.Equal(got, w) {
			t.Errorf("%s:\n got %v\nwant %v", uri, got, w)
		}
	}

	// The live turn follows the disk until it ends, then stays put.
	m3 := mirrorChangeset(t, c, turnURI(t3))
	writeFile(t, repo, "g.txt", "g\n")
	m3.Wait("g.txt in the running turn", func(st protocol.ChangesetState) bool { return ready(st) && fileByPath(st, repo, "g.txt") != nil })
	turnEnd(t, c, sum.Resource)
	writeFile(t, repo, "h.txt", "h\n")
	if got := changesetSummary(t, c, turnURI(t3), repo); !slices.Equal(got, []string{"add f.txt +1 -0", "add g.txt +1 -0"}) {
		t.Errorf("ended turn 3 = %v", got)
	}

	// A turn's before content stays readable after the tree moved on.
	m1 := mirrorChangeset(t, c, turnURI(t1))
	st := m1.Wait("ready", ready)
	b := fileByPath(st, repo, "b.txt")
	var rr protocol.ResourceReadResult
	if err := c.Call(ctx(t), protocol.MethodResourceRead, map[string]any{"channel": protocol.RootURI, "uri": b.Edit.After.Content.URI}, &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Data != "b1\nb2\nb3\nb4\nb5\nB6\n" {
		t.Errorf("turn 1's after content of b.txt = %q", rr.Data)
	}

	// Unknown turn ids are a clear NotFound.
	err := c.Call(ctx(t), protocol.MethodSubscribe, map[string]any{"channel": turnURI("nope")}, nil)
	if rpcCode(err) != protocol.CodeNotFound || !strings.Contains(err.Error(), t1) {
		t.Errorf("unknown turn: %v (want -32008 listing the known turns)", err)
	}

	// Everything survives a restart.
	before := map[string][]string{}
	for uri := range want {
		before[uri] = changesetSummary(t, c, uri, repo)
	}
	c.Close()
	d.stop()
	d2 := startDaemonIn(t, d.StateDir, repo)
	c2 := d2.client(t, "ide-again")
	done, active = chatTurns(t, c2, sum.Resource)
	if !slices.Equal(done, []string{t1, t2, t3}) || active != "" {
		t.Errorf("after restart: turns %v active %q", done, active)
	}
	for uri, w := range before {
		if strings.Contains(uri, "/session") {
			continue // live against the working tree, which moved on
		}
		if got := changesetSummary(t, c2, uri, repo); !slices.Equal(got, w) {
			t.Errorf("after restart %s:\n got %v\nwant %v", uri, got, w)
		}
	}
}
