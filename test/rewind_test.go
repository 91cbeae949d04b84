package test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
	"github.com/changesetd/changesetd/uritemplate"
)

// turnEnv is a daemon on one repository and a client that runs turns.
type turnEnv struct {
	t     *testing.T
	repo  string
	state string
	d     *daemon
	c     *fake.Client
	sess  string
	cat   map[string]protocol.Changeset
}

func startTurns(t *testing.T, repo, state string) *turnEnv {
	t.Helper()
	d := startDaemonIn(t, state, repo)
	c := d.client(t, "agent")
	sess := onlySession(t, c).Resource
	return &turnEnv{t: t, repo: repo, state: state, d: d, c: c, sess: sess, cat: catalogue(t, c, sess)}
}

func (e *turnEnv) turnURI(id string) string {
	return expand(e.t, e.cat[protocol.KindTurn].URITemplate, uritemplate.Values{"turnId": id})
}

// rewindOffered waits until the turn's changeset is ready with want files
// and offers revert on the whole changeset; it returns the state.
func rewindOffered(m *changesetMirror, files int, also func(protocol.ChangesetState) bool) protocol.ChangesetState {
	return m.Wait("revert of the whole turn offered", func(st protocol.ChangesetState) bool {
		o := opIn(st, "revert")
		return ready(st) && len(st.Files) == files && o != nil && o.Status == protocol.OpIdle &&
			slices.Contains(o.Scopes, protocol.ScopeChangeset) && (also == nil || also(st))
	})
}

// confirmationText is an operation's confirmation as a string.
func confirmationText(o *protocol.ChangesetOperation) string {
	var s string
	if o != nil && len(o.Confirmation) > 0 {
		_ = json.Unmarshal(o.Confirmation, &s)
	}
	return s
}

// onDisk is a tree's files as rel -> content, "" meaning absent.
func onDisk(t *testing.T, repo string, rels ...string) map[string]*string {
	t.Helper()
	out := map[string]*string{}
	for _, rel := range rels {
		b, err := os.ReadFile(filepath.Join(repo, rel))
		if errors.Is(err, os.ErrNotExist) {
			out[rel] = nil
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		out[rel] = &s
	}
	return out
}

func sameTree(a, b map[string]*string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || (x == nil) != (y == nil) || (x != nil && *x != *y) {
			return false
		}
	}
	return true
}

func showTree(m map[string]*string) string {
	var parts []string
	for k, v := range m {
		if v == nil {
			parts = append(parts, k+"=<absent>")
		} else {
			parts = append(parts, k+"="+strconv.Quote(*v))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// A turn is rewound in one step: every file it changed goes back to the
// turn's before snapshot (other uncommitted changes made before the turn
// included), the file it created is deleted, the one it deleted comes
// back. A file changed again after the turn makes the rewind refuse, with
// -32011 changedAfterTurn naming it, and its confirmation names it too.
// Undo Revert puts back exactly what the turn left, after a restart too.
func TestRewindTurn(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "keep.txt": "keep\n"})
	writeFile(t, repo, "a.txt", "a before the turn\n")
	writeFile(t, repo, "notes.txt", "notes before the turn\n")
	state := t.TempDir()
	e := startTurns(t, repo, state)
	id := turnStart(t, e.c, e.sess, "edit things")
	writeFile(t, repo, "a.txt", "a in the turn\n")
	if err := os.Remove(filepath.Join(repo, "b.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "new.txt", "made by the turn\n")
	writeFile(t, repo, "notes.txt", "notes in the turn\n")
	turnEnd(t, e.c, e.sess)
	paths := []string{"a.txt", "b.txt", "new.txt", "notes.txt", "keep.txt"}
	left := onDisk(t, repo, paths...)

	// Changed again after the turn: refused, nothing written.
	writeFile(t, repo, "notes.txt", "notes after the turn\n")
	uri := e.turnURI(id)
	live := mirrorChangeset(t, e.c, expand(t, e.cat[protocol.KindUncommitted].URITemplate, nil))
	live.Wait("uncommitted ready", ready)
	m := mirrorChangeset(t, e.c, uri)
	st := rewindOffered(m, 4, func(st protocol.ChangesetState) bool {
		return strings.Contains(confirmationText(opIn(st, "revert")), "Changed again since")
	})
	conf := confirmationText(opIn(st, "revert"))
	if !strings.Contains(conf, "refused") || !strings.Contains(conf, "notes.txt.") || strings.Contains(conf[strings.Index(conf, "Changed again"):], "a.txt") {
		t.Errorf("rewind confirmation %q does not name exactly notes.txt as changed after the turn", conf)
	}
	if !strings.Contains(conf, "new.txt") || !strings.Contains(conf, "deleted") {
		t.Errorf("rewind confirmation %q does not say new.txt would be deleted", conf)
	}
	// The turn's before side, as the daemon kept it.
	before := map[string]*string{"keep.txt": left["keep.txt"]}
	for _, rel := range paths[:4] {
		f := findFile(st, repo, rel)
		if f == nil {
			t.Fatalf("%s is not in the turn's changeset", rel)
		}
		before[rel] = nil
		if f.Edit.Before != nil {
			b, err := readResource(t, e.c, f.Edit.Before.Content.URI)
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			before[rel] = &s
		}
	}
	if *before["a.txt"] != "a before the turn\n" || *before["notes.txt"] != "notes before the turn\n" || *before["b.txt"] != "b\n" || before["new.txt"] != nil {
		t.Fatalf("the turn's before side is %s", showTree(before))
	}
	_, err := invokeOn(t, e.c, uri, "revert", nil, nil)
	var pe *protocol.Error
	if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonChangedAfterTurn || !errors.As(err, &pe) {
		t.Fatalf("rewind with notes.txt changed after the turn: %v (reason %q), want -32011 %s", err, protocol.ReasonOf(err), protocol.ReasonChangedAfterTurn)
	}
	if data, _ := pe.Data.(map[string]any); data == nil || !slices.Equal(anyStrings(data["files"]), []string{"notes.txt"}) {
		t.Errorf("refusal's data = %v, want files [notes.txt]", pe.Data)
	}
	want := onDisk(t, repo, paths...)
	if got := onDisk(t, repo, paths...); !sameTree(got, want) || *got["a.txt"] != "a in the turn\n" {
		t.Fatalf("a refused rewind wrote: %s", showTree(got))
	}

	// As the turn left it again: the confirmation follows the working
	// tree, and the rewind goes through. (The refusal recomputed the
	// changeset; that is over first.)
	m.Wait("the changeset recomputed after the refusal", func(st protocol.ChangesetState) bool {
		return ready(st) && strings.Contains(confirmationText(opIn(st, "revert")), "Changed again since")
	})
	writeFile(t, repo, "notes.txt", "notes in the turn\n")
	m.Wait("the confirmation naming no file changed since", func(st protocol.ChangesetState) bool {
		c := confirmationText(opIn(st, "revert"))
		return ready(st) && c != "" && !strings.Contains(c, "Changed again since")
	})
	res, err := invokeOn(t, e.c, uri, "revert", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Message), "undo id") {
		t.Errorf("rewind result %s does not say it can be undone", res.Message)
	}
	if got := onDisk(t, repo, paths...); !sameTree(got, before) {
		t.Fatalf("after the rewind:\n got %s\nwant %s", showTree(got), showTree(before))
	}
	m.Wait("undo offered on the turn", func(st protocol.ChangesetState) bool {
		o := opIn(st, "undo")
		return ready(st) && o != nil && o.Status == protocol.OpIdle
	})

	// One undo puts back what the turn left, after a restart.
	if err := e.d.stop(); err != nil {
		t.Fatal(err)
	}
	e = startTurns(t, repo, state)
	m = mirrorChangeset(t, e.c, uri)
	m.Wait("undo offered on the turn after a restart", func(st protocol.ChangesetState) bool {
		o := opIn(st, "undo")
		return ready(st) && o != nil && o.Status == protocol.OpIdle
	})
	if _, err := invokeOn(t, e.c, uri, "undo", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(t, repo, paths...); !sameTree(got, left) {
		t.Fatalf("after the undo:\n got %s\nwant %s", showTree(got), showTree(left))
	}
}

func anyStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// rewindCLI runs "changesetd rewind" with stdin and returns its exit code
// and output.
func (e *turnEnv) rewindCLI(stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	cmd := exec.Command(binary, append([]string{"rewind", "--state-dir", e.state, "--dir", e.repo}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// "changesetd rewind TURN" prints the confirmation and asks; answered no
// it changes nothing, with --yes it rewinds; a file changed after the
// turn makes it fail naming the file.
func TestRewindCLI(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	e := startTurns(t, repo, t.TempDir())
	id := turnStart(t, e.c, e.sess, "first")
	writeFile(t, repo, "a.txt", "a in the turn\n")
	writeFile(t, repo, "new.txt", "new\n")
	turnEnd(t, e.c, e.sess)

	code, out, stderr := e.rewindCLI("n\n", id)
	if code != 1 || !strings.Contains(out, "new.txt did not exist before") && !strings.Contains(out, "would be deleted: new.txt") || !strings.Contains(out, "Nothing was changed") {
		t.Errorf("rewind answered no: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if got := string(readFileT(t, repo, "a.txt")); got != "a in the turn\n" {
		t.Fatalf("a.txt = %q after a rewind answered no", got)
	}
	code, out, stderr = e.rewindCLI("", id, "--yes")
	if code != 0 || !strings.Contains(out, "Reverted 2 files") {
		t.Fatalf("rewind --yes: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if got := string(readFileT(t, repo, "a.txt")); got != "a\n" {
		t.Errorf("a.txt = %q after the rewind", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.txt after the rewind: %v, want it deleted", err)
	}

	id = turnStart(t, e.c, e.sess, "second")
	writeFile(t, repo, "b.txt", "b in the turn\n")
	turnEnd(t, e.c, e.sess)
	writeFile(t, repo, "b.txt", "b after the turn\n")
	code, out, stderr = e.rewindCLI("", id, "--yes")
	if code != 1 || !strings.Contains(stderr, "b.txt changed again after the turn") {
		t.Errorf("rewind of a turn whose file changed since: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if got := string(readFileT(t, repo, "b.txt")); got != "b after the turn\n" {
		t.Errorf("b.txt = %q after a refused rewind", got)
	}
}

func readFileT(t *testing.T, dir, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
