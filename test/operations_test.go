package test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
	"github.com/changesetd/changesetd/uritemplate"
)

// opEnv is a daemon on one repository with a client mirroring the
// uncommitted changeset.
type opEnv struct {
	t    *testing.T
	repo string
	d    *daemon
	c    *fake.Client
	sess string
	cat  map[string]protocol.Changeset
	uri  string
	m    *changesetMirror
}

func startOps(t *testing.T, repo string) *opEnv {
	t.Helper()
	return attachOps(t, startDaemon(t, repo), repo)
}

// attachOps is startOps on a running daemon.
func attachOps(t *testing.T, d *daemon, repo string) *opEnv {
	t.Helper()
	c := d.client(t, "ide")
	sum := onlySession(t, c)
	cat := catalogue(t, c, sum.Resource)
	uri := expand(t, cat["uncommitted"].URITemplate, nil)
	e := &opEnv{t: t, repo: repo, d: d, c: c, sess: sum.Resource, cat: cat, uri: uri}
	e.m = mirrorChangeset(t, c, uri)
	e.m.Wait("ready", ready)
	return e
}

func resTarget(id string) map[string]any { return map[string]any{"kind": "resource", "resource": id} }

// lineTarget is a range target covering 0-based lines from..to.
func lineTarget(id string, from, to int) map[string]any {
	return map[string]any{"kind": "range", "resource": id, "range": map[string]any{
		"start": map[string]any{"line": from, "character": 0},
		"end":   map[string]any{"line": to, "character": 0},
	}}
}

// invokeOn calls invokeChangesetOperation; target and meta may be nil.
func invokeOn(t *testing.T, c *fake.Client, uri, op string, target, meta map[string]any) (protocol.InvokeChangesetOperationResult, error) {
	t.Helper()
	p := map[string]any{"channel": uri, "operationId": op}
	if target != nil {
		p["target"] = target
	}
	if meta != nil {
		p["_meta"] = meta
	}
	var res protocol.InvokeChangesetOperationResult
	err := c.Call(ctx(t), protocol.MethodInvokeChangesetOperation, p, &res)
	return res, err
}

func (e *opEnv) invoke(op string, target, meta map[string]any) (protocol.InvokeChangesetOperationResult, error) {
	e.t.Helper()
	return invokeOn(e.t, e.c, e.uri, op, target, e.shown(target, meta))
}

// shown gives a range invocation that names no version the versions a
// client shows, as the review page does: those of the target file in the
// state the test's client holds now. (The daemon refuses a range
// operation that names none.)
func (e *opEnv) shown(target, meta map[string]any) map[string]any {
	if target == nil || target["kind"] != protocol.ScopeRange || meta["versions"] != nil || meta["expectedNonce"] != nil {
		return meta
	}
	out := map[string]any{}
	for k, v := range meta {
		out[k] = v
	}
	out["versions"] = versionsOf(e.m.State(), target["resource"].(string))
	return out
}

// versionsOf is _meta.versions for the files ids of st, as shown there.
func versionsOf(st protocol.ChangesetState, ids ...string) map[string]any {
	out := map[string]any{}
	for _, f := range st.Files {
		if !slices.Contains(ids, f.ID) {
			continue
		}
		v := map[string]any{"before": "", "after": ""}
		if f.Edit.Before != nil {
			v["before"] = f.Edit.Before.Content.Nonce
		}
		if f.Edit.After != nil {
			v["after"] = f.Edit.After.Content.Nonce
		}
		out[f.ID] = v
	}
	return out
}

// mustInvoke invokes and fails the test on an error.
func (e *opEnv) mustInvoke(op string, target, meta map[string]any) protocol.InvokeChangesetOperationResult {
	e.t.Helper()
	res, err := e.invoke(op, target, meta)
	if err != nil {
		e.t.Fatalf("%s %v: %v", op, target, err)
	}
	return res
}

func (e *opEnv) id(rel string) string { return fileURI(e.repo, rel) }

func opIn(st protocol.ChangesetState, id string) *protocol.ChangesetOperation {
	for i := range st.Operations {
		if st.Operations[i].ID == id {
			return &st.Operations[i]
		}
	}
	return nil
}

// waitOffered waits until op is offered idle with exactly scopes.
func (e *opEnv) waitOffered(op string, scopes ...string) {
	e.t.Helper()
	e.m.Wait(fmt.Sprintf("%s offered with scopes %v", op, scopes), func(st protocol.ChangesetState) bool {
		o := opIn(st, op)
		return ready(st) && o != nil && o.Status == protocol.OpIdle && slices.Equal(o.Scopes, scopes)
	})
}

// waitGone waits until the changeset is ready without rel.
func (e *opEnv) waitGone(rel string) protocol.ChangesetState {
	e.t.Helper()
	return e.m.Wait(rel+" dropped from the changeset", func(st protocol.ChangesetState) bool {
		return ready(st) && findFile(st, e.repo, rel) == nil
	})
}

// waitHas waits until the changeset is ready with rel.
func (e *opEnv) waitHas(rel string) protocol.ChangesetState {
	e.t.Helper()
	return e.m.Wait(rel+" in the changeset", func(st protocol.ChangesetState) bool {
		return ready(st) && findFile(st, e.repo, rel) != nil
	})
}

func (e *opEnv) git(args ...string) string { e.t.Helper(); return string(gitOut(e.t, e.repo, args...)) }

// disk returns a file's bytes.
func (e *opEnv) disk(rel string) []byte {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.repo, filepath.FromSlash(rel)))
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *opEnv) absent(rel string) bool {
	_, err := os.Lstat(filepath.Join(e.repo, filepath.FromSlash(rel)))
	return errors.Is(err, fs.ErrNotExist)
}

func (e *opEnv) perm(rel string) fs.FileMode {
	e.t.Helper()
	fi, err := os.Lstat(filepath.Join(e.repo, filepath.FromSlash(rel)))
	if err != nil {
		e.t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func chmod(t *testing.T, repo, rel string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(repo, filepath.FromSlash(rel)), mode); err != nil {
		t.Fatal(err)
	}
}

// statusOf returns the operationStatusChanged actions c received on uri
// for op, as "status" or "status: message".
func statusOf(c *fake.Client, uri, op string) []string {
	var out []string
	for _, e := range c.Envelopes(uri) {
		if a, ok := e.Action.Action.(protocol.ChangesetOperationStatusChanged); ok && a.OperationID == op {
			s := a.Status
			if a.Error != nil {
				s += ": " + a.Error.Message
			}
			out = append(out, s)
		}
	}
	return out
}

// snapshotDir records every file under dir with its mode and bytes.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line %02d", i+1)
	}
	return out
}

func joinLines(ls []string) string { return strings.Join(ls, "\n") + "\n" }

func diffCounts(f *protocol.ChangesetFile) string {
	if f == nil || f.Edit.Diff == nil || f.Edit.Diff.Added == nil || f.Edit.Diff.Removed == nil {
		return "?"
	}
	return fmt.Sprintf("+%d -%d", *f.Edit.Diff.Added, *f.Edit.Diff.Removed)
}

func TestOperationRevertResources(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{
		"mod.txt":     "alpha\nbeta\ngamma\n",
		"del.sh":      "#!/bin/sh\necho deleted\n",
		"ren_old.txt": "rename me\nplease\n",
		"mode.sh":     "#!/bin/sh\necho mode\n",
		"keep.txt":    "untouched\n",
	})
	chmod(t, repo, "del.sh", 0o755)
	git(t, repo, "commit", "-q", "-am", "del.sh is executable")

	writeFile(t, repo, "mod.txt", "alpha\nBETA\ngamma\ndelta\n")
	remove(t, repo, "del.sh")
	writeFile(t, repo, "untracked.txt", "scratch\n")
	writeFile(t, repo, "newdir/a.txt", "nested a\n")
	writeFile(t, repo, "newdir/sub/b.txt", "nested b\n")
	writeFile(t, repo, "staged.txt", "staged new file\n")
	git(t, repo, "add", "staged.txt")
	git(t, repo, "mv", "ren_old.txt", "ren_new.txt")
	chmod(t, repo, "mode.sh", 0o755)

	e := startOps(t, repo)
	all := []string{"mod.txt", "del.sh", "untracked.txt", "newdir/a.txt", "newdir/sub/b.txt", "staged.txt", "ren_new.txt", "mode.sh"}
	st := e.m.Wait("8 changed files", func(st protocol.ChangesetState) bool {
		if !ready(st) || len(st.Files) != len(all) {
			return false
		}
		for _, rel := range all {
			if findFile(st, repo, rel) == nil {
				return false
			}
		}
		return true
	})
	if f := findFile(st, repo, "ren_new.txt"); f.Edit.Before == nil || f.Edit.Before.URI != e.id("ren_old.txt") {
		t.Fatalf("ren_new.txt is not shown as a rename of ren_old.txt: %+v", f.Edit)
	}
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)

	head := func(rel string) []byte { return gitOut(t, repo, "show", "HEAD:"+rel) }
	clean := func(paths ...string) {
		t.Helper()
		if out := e.git(append([]string{"status", "--porcelain", "--"}, paths...)...); out != "" {
			t.Errorf("git status -- %v after revert:\n%s", paths, out)
		}
		if out := e.git(append([]string{"diff", "--cached", "--name-only", "--"}, paths...)...); out != "" {
			t.Errorf("git diff --cached -- %v after revert:\n%s", paths, out)
		}
	}

	t.Run("modified", func(t *testing.T) {
		res := e.mustInvoke("revert", resTarget(e.id("mod.txt")), nil)
		if len(res.Message) == 0 {
			t.Errorf("revert returned no message")
		}
		if got := e.disk("mod.txt"); !bytes.Equal(got, head("mod.txt")) {
			t.Errorf("mod.txt = %q, want HEAD's %q", got, head("mod.txt"))
		}
		e.waitGone("mod.txt")
		clean("mod.txt")
	})
	t.Run("deleted", func(t *testing.T) {
		e.mustInvoke("revert", resTarget(e.id("del.sh")), nil)
		if got := e.disk("del.sh"); !bytes.Equal(got, head("del.sh")) {
			t.Errorf("del.sh = %q, want %q", got, head("del.sh"))
		}
		if p := e.perm("del.sh"); p != 0o755 {
			t.Errorf("del.sh restored with mode %o, want 755", p)
		}
		e.waitGone("del.sh")
		clean("del.sh")
	})
	t.Run("untracked", func(t *testing.T) {
		e.mustInvoke("revert", resTarget(e.id("untracked.txt")), nil)
		if !e.absent("untracked.txt") {
			t.Error("untracked.txt still exists")
		}
		e.waitGone("untracked.txt")
	})
	t.Run("untracked directory", func(t *testing.T) {
		e.mustInvoke("revert", resTarget(e.id("newdir")), nil)
		for _, rel := range []string{"newdir/a.txt", "newdir/sub/b.txt", "newdir"} {
			if !e.absent(rel) {
				t.Errorf("%s still exists", rel)
			}
		}
		e.m.Wait("newdir's files dropped", func(st protocol.ChangesetState) bool {
			return ready(st) && findFile(st, repo, "newdir/a.txt") == nil && findFile(st, repo, "newdir/sub/b.txt") == nil
		})
	})
	t.Run("rename", func(t *testing.T) {
		e.mustInvoke("revert", resTarget(e.id("ren_new.txt")), nil)
		if !e.absent("ren_new.txt") {
			t.Error("ren_new.txt still exists")
		}
		if got := e.disk("ren_old.txt"); !bytes.Equal(got, head("ren_old.txt")) {
			t.Errorf("ren_old.txt = %q, want %q", got, head("ren_old.txt"))
		}
		e.waitGone("ren_new.txt")
		e.waitGone("ren_old.txt")
		clean("ren_old.txt", "ren_new.txt")
	})
	t.Run("mode change", func(t *testing.T) {
		e.mustInvoke("revert", resTarget(e.id("mode.sh")), nil)
		if p := e.perm("mode.sh"); p != 0o644 {
			t.Errorf("mode.sh mode %o after revert, want 644", p)
		}
		if got := e.disk("mode.sh"); !bytes.Equal(got, head("mode.sh")) {
			t.Errorf("mode.sh = %q", got)
		}
		e.waitGone("mode.sh")
		clean("mode.sh")
	})
	t.Run("staged new file", func(t *testing.T) {
		e.mustInvoke("revert", resTarget(e.id("staged.txt")), nil)
		if !e.absent("staged.txt") {
			t.Error("staged.txt still exists")
		}
		e.waitGone("staged.txt")
		if out := e.git("diff", "--cached", "--name-only"); out != "" {
			t.Errorf("index still differs from HEAD:\n%s", out)
		}
		if out := e.git("status", "--porcelain"); out != "" {
			t.Errorf("working tree not clean after every revert:\n%s", out)
		}
	})
	e.m.Wait("empty changeset", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 0 })
	if got := e.disk("keep.txt"); string(got) != "untouched\n" {
		t.Errorf("keep.txt = %q", got)
	}
	if o := opIn(e.m.State(), "revert"); o == nil || o.Status != protocol.OpIdle {
		t.Errorf("revert operation after the reverts: %+v, want idle", o)
	}
}

func TestOperationRangeRevertOneHunk(t *testing.T) {
	t.Parallel()
	orig := numbered(40)
	// Hunk 1 inserts two lines after line 5, hunk 2 changes line 20,
	// hunk 3 deletes line 35.
	hunk1 := func(ls []string) []string {
		return slices.Concat(ls[:5], []string{"inserted A", "inserted B"}, ls[5:])
	}
	var mod []string
	for i, l := range orig {
		switch i + 1 {
		case 20:
			mod = append(mod, "line 20 changed")
		case 35:
		default:
			mod = append(mod, l)
		}
	}
	mod = hunk1(mod)
	var want []string
	for i, l := range orig {
		if i+1 != 35 {
			want = append(want, l)
		}
	}
	want = hunk1(want)

	repo := gitRepo(t, map[string]string{"long.txt": joinLines(orig)})
	writeFile(t, repo, "long.txt", joinLines(mod))
	e := startOps(t, repo)
	st := e.waitHas("long.txt")
	if got := diffCounts(findFile(st, repo, "long.txt")); got != "+3 -2" {
		t.Fatalf("long.txt before the range revert: %s, want +3 -2", got)
	}
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)

	// "line 20 changed" is 0-based line 21 of the after side (two lines
	// were inserted above it).
	if mod[21] != "line 20 changed" {
		t.Fatalf("test setup: line 21 is %q", mod[21])
	}
	e.mustInvoke("revert", lineTarget(e.id("long.txt"), 21, 21), nil)
	if got := string(e.disk("long.txt")); got != joinLines(want) {
		t.Errorf("long.txt after reverting the middle hunk:\n%s\nwant:\n%s", got, joinLines(want))
	}
	e.m.Wait("long.txt with hunks 1 and 3 (+2 -1)", func(st protocol.ChangesetState) bool {
		return ready(st) && diffCounts(findFile(st, repo, "long.txt")) == "+2 -1"
	})
	if o := opIn(e.m.State(), "revert"); o == nil || o.Status != protocol.OpIdle {
		t.Errorf("revert after the range revert: %+v", o)
	}
}

func TestOperationStageUnstage(t *testing.T) {
	t.Parallel()
	orig := numbered(20)
	mod := slices.Clone(orig)
	mod[1] = "line 02 changed"
	mod[17] = "line 18 changed"
	firstOnly := slices.Clone(orig)
	firstOnly[1] = "line 02 changed"

	repo := gitRepo(t, map[string]string{"s.txt": joinLines(orig), "other.txt": "other\n"})
	writeFile(t, repo, "s.txt", joinLines(mod))
	writeFile(t, repo, "new.txt", "brand new\n")
	e := startOps(t, repo)
	e.m.Wait("s.txt and new.txt", func(st protocol.ChangesetState) bool {
		return ready(st) && len(st.Files) == 2 && findFile(st, repo, "s.txt") != nil && findFile(st, repo, "new.txt") != nil
	})
	both := []string{protocol.ScopeResource, protocol.ScopeRange}
	e.waitOffered("stage", both...)
	e.waitOffered("unstage", both...)

	cached := func() string { return e.git("diff", "--cached", "--name-status") }
	e.mustInvoke("stage", resTarget(e.id("s.txt")), nil)
	if got := cached(); got != "M\ts.txt\n" {
		t.Errorf("after staging s.txt: %q", got)
	}
	e.mustInvoke("stage", resTarget(e.id("new.txt")), nil)
	if got := cached(); got != "A\tnew.txt\nM\ts.txt\n" {
		t.Errorf("after staging new.txt: %q", got)
	}
	if got := e.git("show", ":s.txt"); got != joinLines(mod) {
		t.Errorf("staged s.txt = %q", got)
	}
	e.mustInvoke("unstage", resTarget(e.id("s.txt")), nil)
	if got := cached(); got != "A\tnew.txt\n" {
		t.Errorf("after unstaging s.txt: %q", got)
	}
	e.mustInvoke("unstage", resTarget(e.id("new.txt")), nil)
	if got := cached(); got != "" {
		t.Errorf("after unstaging new.txt: %q", got)
	}
	if got := e.git("status", "--porcelain"); got != " M s.txt\n?? new.txt\n" {
		t.Errorf("status after unstaging everything: %q", got)
	}

	// Stage the first hunk only (0-based line 1 of the working tree).
	e.mustInvoke("stage", lineTarget(e.id("s.txt"), 1, 1), nil)
	if got := e.git("show", ":s.txt"); got != joinLines(firstOnly) {
		t.Errorf("index after staging the first hunk:\n%s\nwant:\n%s", got, joinLines(firstOnly))
	}
	if got := e.git("diff", "--name-only"); got != "s.txt\n" {
		t.Errorf("unstaged changes after staging one hunk: %q, want s.txt", got)
	}
	// Unstage it again (line 1 of the staged version).
	e.mustInvoke("unstage", lineTarget(e.id("s.txt"), 1, 1), nil)
	if got := e.git("show", ":s.txt"); got != joinLines(orig) {
		t.Errorf("index after unstaging the hunk:\n%s\nwant HEAD's bytes", got)
	}
	if got := cached(); got != "" {
		t.Errorf("index differs from HEAD after unstaging the hunk: %q", got)
	}
	if got := string(e.disk("s.txt")); got != joinLines(mod) {
		t.Errorf("stage/unstage touched the working tree: %q", got)
	}
	// The changeset (HEAD against the working tree) is unchanged throughout.
	st := e.m.Wait("ready", ready)
	if got := diffCounts(findFile(st, repo, "s.txt")); got != "+2 -2" {
		t.Errorf("s.txt in the changeset: %s, want +2 -2", got)
	}
}

func TestOperationCommit(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	git(t, repo, "config", "user.name", "Reviewer")
	git(t, repo, "config", "user.email", "reviewer@example.com")
	writeFile(t, repo, "a.txt", "a changed\n")
	writeFile(t, repo, "b.txt", "b changed\n")
	writeFile(t, repo, "c.txt", "c new\n")
	e := startOps(t, repo)
	e.m.Wait("3 files", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 3 })
	e.waitOffered("commit", protocol.ScopeChangeset)

	e.mustInvoke("stage", resTarget(e.id("a.txt")), nil)
	res := e.mustInvoke("commit", nil, map[string]any{"message": "Review: tidy"})
	if !strings.Contains(string(res.Message), "Review: tidy") {
		t.Errorf("commit result message = %s", res.Message)
	}
	if got := e.git("log", "-1", "--format=%s"); got != "Review: tidy\n" {
		t.Errorf("subject = %q", got)
	}
	stat := e.git("show", "--stat", "--format=", "HEAD")
	var listed []string
	for _, l := range strings.Split(stat, "\n") {
		if name, _, ok := strings.Cut(l, "|"); ok {
			listed = append(listed, strings.TrimSpace(name))
		}
	}
	if !slices.Equal(listed, []string{"a.txt"}) {
		t.Errorf("first commit lists %v, want [a.txt]:\n%s", listed, stat)
	}
	if got := e.git("status", "--porcelain"); got != " M b.txt\n?? c.txt\n" {
		t.Errorf("status after the first commit: %q", got)
	}
	st := e.m.Wait("b.txt and c.txt left", func(st protocol.ChangesetState) bool {
		return ready(st) && len(st.Files) == 2 && findFile(st, repo, "b.txt") != nil && findFile(st, repo, "c.txt") != nil
	})
	if b, c := diffCounts(findFile(st, repo, "b.txt")), diffCounts(findFile(st, repo, "c.txt")); b != "+1 -1" || c != "+1 -0" {
		t.Fatalf("b.txt %s c.txt %s", b, c)
	}

	// Nothing staged, no message: everything, with a built subject.
	e.mustInvoke("commit", nil, nil)
	if got := e.git("status", "--porcelain"); got != "" {
		t.Errorf("working tree not clean after committing everything:\n%s", got)
	}
	if got := e.git("log", "-1", "--format=%s"); got != "Update 2 file(s) (+2 -1)\n" {
		t.Errorf("built subject = %q, want %q", got, "Update 2 file(s) (+2 -1)")
	}
	if got := e.git("show", "--name-only", "--format=", "HEAD"); got != "b.txt\nc.txt\n" {
		t.Errorf("second commit has %q", got)
	}
	if got := e.git("rev-list", "--count", "HEAD"); got != "3\n" {
		t.Errorf("%s commits, want 3", strings.TrimSpace(got))
	}
	e.m.Wait("empty changeset", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 0 })
}

func TestOperationUndoRevert(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"u.txt": "one\ntwo\n"})
	edited := "one\nTWO\nthree\n"
	writeFile(t, repo, "u.txt", edited)
	e := startOps(t, repo)
	e.waitHas("u.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	if o := opIn(e.m.State(), "undo"); o != nil {
		t.Fatalf("undo offered before any revert: %+v", o)
	}
	noUndo := func(st protocol.ChangesetState) bool { return ready(st) && opIn(st, "undo") == nil }

	e.mustInvoke("revert", resTarget(e.id("u.txt")), nil)
	e.waitOffered("undo", protocol.ScopeChangeset)
	e.waitGone("u.txt")
	if got := string(e.disk("u.txt")); got != "one\ntwo\n" {
		t.Fatalf("u.txt after revert = %q", got)
	}
	e.mustInvoke("undo", nil, nil)
	if got := string(e.disk("u.txt")); got != edited {
		t.Errorf("u.txt after undo = %q, want %q", got, edited)
	}
	e.m.Wait("undo withdrawn after undoing", noUndo)
	e.waitHas("u.txt")

	// A revert followed by another edit cannot be undone.
	e.mustInvoke("revert", resTarget(e.id("u.txt")), nil)
	e.waitOffered("undo", protocol.ScopeChangeset)
	writeFile(t, repo, "u.txt", "edited again\n")
	e.m.Wait("undo withdrawn after an edit", noUndo)
	_, err := e.invoke("undo", nil, nil)
	if rpcCode(err) != protocol.CodeInvalidParams {
		t.Errorf("undo after an edit: %v, want -32602", err)
	}
	if got := string(e.disk("u.txt")); got != "edited again\n" {
		t.Errorf("u.txt = %q: the refused undo wrote", got)
	}
}

func TestOperationValidation(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "clean.txt": "clean\n", "sub/x.txt": "x\n"})
	writeFile(t, repo, "a.txt", "A\n")
	writeFile(t, repo, "sub/x.txt", "X\n")
	e := startOps(t, repo)
	e.m.Wait("a.txt and sub/x.txt", func(st protocol.ChangesetState) bool {
		return ready(st) && findFile(st, repo, "a.txt") != nil && findFile(st, repo, "sub/x.txt") != nil
	})
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	e.waitOffered("commit", protocol.ScopeChangeset)
	before := e.git("status", "--porcelain")

	expectCode := func(what string, code int64, err error, mention ...string) {
		t.Helper()
		if rpcCode(err) != code {
			t.Errorf("%s: %v, want %d", what, err, code)
			return
		}
		for _, m := range mention {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: message %q does not mention %q", what, err, m)
			}
		}
	}
	_, err := e.invoke("frobnicate", resTarget(e.id("a.txt")), nil)
	expectCode("unknown operation", protocol.CodeInvalidParams, err, "frobnicate", "revert", "stage", "unstage", "commit")
	_, err = e.invoke("commit", resTarget(e.id("a.txt")), nil)
	expectCode("commit with a resource target", protocol.CodeInvalidParams, err)
	_, err = e.invoke("revert", nil, nil)
	expectCode("revert without a target", protocol.CodeInvalidParams, err)
	_, err = e.invoke("revert", resTarget(e.id("clean.txt")), nil)
	expectCode("revert of a file not in the changeset", protocol.CodeInvalidParams, err)
	_, err = e.invoke("revert", resTarget(e.id("nope.txt")), nil)
	expectCode("revert of a missing file", protocol.CodeInvalidParams, err)
	_, err = e.invoke("revert", resTarget("file:///etc/passwd"), nil)
	expectCode("revert outside the workspace", protocol.CodePermissionDenied, err)
	_, err = e.invoke("revert", map[string]any{"kind": "range", "resource": e.id("a.txt"), "range": map[string]any{
		"start": map[string]any{"line": 3, "character": 0}, "end": map[string]any{"line": 1, "character": 0},
	}}, nil)
	expectCode("range ending before its start", protocol.CodeInvalidParams, err)
	_, err = e.invoke("revert", map[string]any{"kind": "range", "resource": e.id("a.txt")}, nil)
	expectCode("range target without a range", protocol.CodeInvalidParams, err)

	sessID := strings.TrimPrefix(e.sess, protocol.SessionScheme+"/")
	for _, uri := range []string{
		"ahp-changeset:/nosuchsession/changeset/uncommitted",
		expand(t, e.cat["turn"].URITemplate, uritemplate.Values{"turnId": "no-such-turn"}),
		"ahp-changeset:/" + sessID + "/changeset/bogus",
	} {
		_, err = invokeOn(t, e.c, uri, "revert", resTarget(e.id("a.txt")), nil)
		expectCode("invoke on "+uri, protocol.CodeNotFound, err)
	}
	if got := e.git("status", "--porcelain"); got != before {
		t.Errorf("refused invocations changed the tree:\n%s\nwas:\n%s", got, before)
	}
	if got := string(e.disk("a.txt")); got != "A\n" {
		t.Errorf("a.txt = %q", got)
	}

	// sub/ is replaced by a symlink to a directory outside the workspace.
	outside := t.TempDir()
	writeFile(t, outside, "x.txt", "outside x\n")
	writeFile(t, outside, "sentinel", "do not touch\n")
	snap := snapshotDir(t, outside)
	if err := os.Rename(filepath.Join(repo, "sub"), filepath.Join(t.TempDir(), "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(repo, "sub")); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		_, err := e.invoke("revert", resTarget(e.id("sub/x.txt")), nil)
		if err == nil {
			t.Errorf("revert through a symlinked parent (%s) succeeded", when)
		} else if rpcCode(err) != protocol.CodePermissionDenied {
			if s := statusOf(e.c, e.uri, "revert"); len(s) == 0 || !strings.HasPrefix(s[len(s)-1], "error") {
				t.Errorf("revert through a symlinked parent (%s): %v, want -32009 or an error status (statuses %v)", when, err, s)
			}
		}
		if got := snapshotDir(t, outside); !mapsEqual(got, snap) {
			t.Errorf("outside directory changed (%s):\n%v\nwas:\n%v", when, got, snap)
		}
	}
	check("before the changeset saw the symlink")
	e.m.Wait("the symlink seen", func(st protocol.ChangesetState) bool { return ready(st) && findFile(st, repo, "sub") != nil })
	check("after the changeset saw the symlink")
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestOperationOnUnsubscribedChangeset(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	git(t, repo, "config", "user.name", "Reviewer")
	git(t, repo, "config", "user.email", "reviewer@example.com")
	writeFile(t, repo, "a.txt", "A\n")
	e := startOps(t, repo)
	e.waitHas("a.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)

	// Never subscribed by anyone: there are no operations to invoke.
	branch := expand(t, e.cat["branch"].URITemplate, nil)
	if _, err := invokeOn(t, e.c, branch, "revert", resTarget(e.id("a.txt")), nil); err == nil {
		t.Errorf("revert on the never-subscribed branch changeset succeeded")
	} else if c := rpcCode(err); c != protocol.CodeNotFound && c != protocol.CodeInvalidParams {
		t.Errorf("revert on the never-subscribed branch changeset: %v, want -32008 (or -32602)", err)
	}

	// Subscribed, then unsubscribed: its state is no longer kept up to
	// date, so operating on it would act on what it last saw. Here a.txt
	// is committed meanwhile: the changeset as last seen still holds the
	// old HEAD's a.txt, and a revert would write that back.
	if err := e.c.Call(ctx(t), protocol.MethodUnsubscribe, map[string]any{"channel": e.uri}, nil); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "commit", "-q", "-am", "commit a.txt")
	_, err := e.invoke("revert", resTarget(e.id("a.txt")), nil)
	// Refused like a changeset never subscribed to: -32602 with "subscribe".
	if rpcCode(err) != protocol.CodeInvalidParams || !strings.Contains(err.Error(), "subscribe") {
		t.Errorf("revert on an unsubscribed changeset: %v, want -32602 asking to subscribe", err)
	}
	if got := string(e.disk("a.txt")); got != "A\n" {
		t.Errorf("a.txt = %q after a revert on a stale, unsubscribed changeset; the committed content was %q", got, "A\n")
	}
	if got := e.git("status", "--porcelain"); got != "" {
		t.Errorf("status after the refused revert: %q", got)
	}
}

func TestOperationIndexLocked(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"l.txt": "l\n"})
	writeFile(t, repo, "l.txt", "L\n")
	e := startOps(t, repo)
	e.waitHas("l.txt")
	e.waitOffered("stage", protocol.ScopeResource, protocol.ScopeRange)

	indexPath := filepath.Join(repo, ".git", "index")
	lock := indexPath + ".lock"
	indexBefore, err := os.ReadFile(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = e.invoke("stage", resTarget(e.id("l.txt")), nil)
	if rpcCode(err) != protocol.CodeConflict {
		t.Errorf("stage with index.lock held: %v, want -32011", err)
	}
	st := e.m.Wait("stage in error", func(st protocol.ChangesetState) bool {
		o := opIn(st, "stage")
		return o != nil && o.Status == protocol.OpError
	})
	if o := opIn(st, "stage"); o.Error == nil || !strings.Contains(o.Error.Message, "index.lock") || o.Error.ErrorType == "" {
		t.Errorf("stage error info = %+v, want a message mentioning index.lock", o.Error)
	}
	statuses := statusOf(e.c, e.uri, "stage")
	if len(statuses) < 2 || statuses[0] != protocol.OpRunning || !strings.HasPrefix(statuses[1], "error: ") || !strings.Contains(statuses[1], "index.lock") {
		t.Errorf("stage statuses = %q, want running then error mentioning index.lock", statuses)
	}
	if after, err := os.ReadFile(indexPath); err != nil || !bytes.Equal(after, indexBefore) {
		t.Errorf(".git/index changed while index.lock was held (err %v)", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the daemon removed a lock it does not own: %v", err)
	}

	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	e.mustInvoke("stage", resTarget(e.id("l.txt")), nil)
	e.m.Wait("stage idle again", func(st protocol.ChangesetState) bool {
		o := opIn(st, "stage")
		return o != nil && o.Status == protocol.OpIdle && o.Error == nil
	})
	if got := e.git("diff", "--cached", "--name-only"); got != "l.txt\n" {
		t.Errorf("staged after the lock went: %q", got)
	}
}

func TestOperationsDisabledDuringTurn(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "A\n")
	e := startOps(t, repo)
	e.waitHas("a.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	ids := func(st protocol.ChangesetState) []string {
		var out []string
		for _, o := range st.Operations {
			out = append(out, o.ID)
		}
		return out
	}
	want := ids(e.m.State())
	allStatus := func(status string) func(protocol.ChangesetState) bool {
		return func(st protocol.ChangesetState) bool {
			if !slices.Equal(ids(st), want) {
				return false
			}
			for _, o := range st.Operations {
				if o.Status != status {
					return false
				}
			}
			return true
		}
	}

	turnStart(t, e.c, e.sess, "busy")
	e.m.Wait("operations disabled during the turn", allStatus(protocol.OpDisabled))
	_, err := e.invoke("revert", resTarget(e.id("a.txt")), nil)
	if rpcCode(err) != protocol.CodeInvalidParams {
		t.Errorf("revert during a turn: %v, want -32602", err)
	}
	if got := string(e.disk("a.txt")); got != "A\n" {
		t.Errorf("a.txt = %q: revert ran during the turn", got)
	}
	turnEnd(t, e.c, e.sess)
	e.m.Wait("operations idle after the turn", allStatus(protocol.OpIdle))
	e.mustInvoke("revert", resTarget(e.id("a.txt")), nil)
	e.waitGone("a.txt")
}

func TestOperationStatusSeenByEverySubscriber(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "A\n")
	e := startOps(t, repo)
	other := e.d.client(t, "other-ide")
	mo := mirrorChangeset(t, other, e.uri)
	mo.Wait("a.txt", func(st protocol.ChangesetState) bool { return ready(st) && findFile(st, repo, "a.txt") != nil })
	e.waitOffered("stage", protocol.ScopeResource, protocol.ScopeRange)

	e.mustInvoke("stage", resTarget(e.id("a.txt")), nil)
	for name, c := range map[string]*fake.Client{"invoker": e.c, "other": other} {
		err := c.Wait(ctx(t), name+" sees running then idle", func() bool {
			return slices.Equal(statusOf(c, e.uri, "stage"), []string{protocol.OpRunning, protocol.OpIdle})
		})
		if err != nil {
			t.Errorf("%v; statuses %q", err, statusOf(c, e.uri, "stage"))
		}
	}
	if o := opIn(mo.State(), "stage"); o == nil || o.Status != protocol.OpIdle {
		t.Errorf("other client's stage operation: %+v", o)
	}
	if got := e.git("diff", "--cached", "--name-only"); got != "a.txt\n" {
		t.Errorf("staged = %q", got)
	}
}
