package test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

// diffCLI runs "changesetd diff ..." against the daemon and returns the
// patch it prints.
func (d *daemon) diffCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"diff"}, append(args, "--state-dir", d.StateDir)...)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("changesetd diff %v: %v\n%s", args, err, stderr)
	}
	return string(out)
}

// snapshotTree copies the working tree of repo, without .git, to a fresh
// directory outside any repository.
func snapshotTree(t *testing.T, repo string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "tree")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	// Everything but .git, where the running daemon's watcher barriers
	// create and remove marker files: cp -a fails on one that vanishes.
	ents, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-a"}
	for _, e := range ents {
		if e.Name() != ".git" {
			args = append(args, filepath.Join(repo, e.Name()))
		}
	}
	if len(args) == 1 {
		return dst
	}
	if out, err := exec.Command("cp", append(args, dst)...).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	return dst
}

// checkPatchTurns applies patch with git apply (--check first) to a copy
// of the before tree and compares the result with the after tree.
func checkPatchTurns(t *testing.T, name, patch, before, after string) {
	t.Helper()
	work := snapshotTree(t, before)
	pf := filepath.Join(t.TempDir(), "changes.patch")
	if err := os.WriteFile(pf, []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"apply", "--check", pf}, {"apply", pf}} {
		if patch == "" {
			break // git apply refuses an empty patch; nothing to apply
		}
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: git %s: %v\n%s\npatch:\n%s", name, strings.Join(args, " "), err, out, patch)
		}
	}
	got, want := worktree(t, work, nil), worktree(t, after, nil)
	if !maps.Equal(got, want) {
		var diffs []string
		for _, p := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
			for k := range got {
				yield(k, true)
			}
			for k := range want {
				yield(k, true)
			}
		}))) {
			if got[p] != want[p] {
				diffs = append(diffs, fmt.Sprintf("%s: got %s %d bytes, want %s %d bytes", p, got[p].kind, len(got[p].content), want[p].kind, len(want[p].content)))
			}
		}
		t.Errorf("%s: git apply of the patch does not give the after tree:\n%s", name, strings.Join(diffs, "\n"))
	}
}

func binBytes(seed, n int) string {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	b[0] = 0
	return string(b)
}

// TestWholeChangesetPatch: the whole patch of every changeset kind, as
// "changesetd diff" prints it and resourceRead returns it, applies with
// git apply to that changeset's before tree and gives its after tree: a
// binary file, a rename, a mode change and a deletion included.
func TestWholeChangesetPatch(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{
		"text.txt": lines(20, func(i int) string { return fmt.Sprintf("line %d\n", i) }),
		"old.txt":  lines(30, func(i int) string { return fmt.Sprintf("old %d\n", i) }),
		"run.sh":   "echo hi\n",
		"gone.txt": "bye\n",
		"bin.dat":  binBytes(1, 5000),
	})
	git(t, repo, "checkout", "-q", "-b", "feature")
	d := startDaemon(t, repo)
	c := d.client(t, "panel")
	sum := onlySession(t, c)
	base := snapshotTree(t, repo)

	turnA := d.turnCLI(t, "start", "--dir", repo)
	writeFile(t, repo, "text.txt", lines(20, func(i int) string { return fmt.Sprintf("line %d edited\n", i*(i%3)) }))
	if err := os.Rename(filepath.Join(repo, "old.txt"), filepath.Join(repo, "new.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "new.txt", lines(30, func(i int) string { return fmt.Sprintf("old %d\n", i) })+"one more\n")
	if err := os.Chmod(filepath.Join(repo, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	remove(t, repo, "gone.txt")
	writeFile(t, repo, "bin.dat", binBytes(1, 4000)+binBytes(2, 1500))
	writeFile(t, repo, "add.bin", binBytes(3, 700))
	d.turnCLI(t, "end", "--dir", repo, "--id", turnA)
	afterA := snapshotTree(t, repo)

	turnB := d.turnCLI(t, "start", "--dir", repo)
	writeFile(t, repo, "text.txt", "rewritten\n")
	writeFile(t, repo, "bin.dat", binBytes(4, 100))
	remove(t, repo, "add.bin")
	d.turnCLI(t, "end", "--dir", repo, "--id", turnB)
	afterB := snapshotTree(t, repo)

	turnC := d.turnCLI(t, "start", "--dir", repo)
	d.turnCLI(t, "end", "--dir", repo, "--id", turnC)

	cases := []struct {
		name          string
		args          []string
		kind          string
		vars          map[string]string
		before, after string
	}{
		{"uncommitted", nil, protocol.KindUncommitted, nil, base, afterB},
		{"branch", []string{"--branch"}, protocol.KindBranch, nil, base, afterB},
		{"session", []string{"--baseline"}, protocol.KindSession, nil, base, afterB},
		{"turn A", []string{"--turn", turnA}, protocol.KindTurn, map[string]string{"turnId": turnA}, base, afterA},
		{"turn B", []string{"--turn", turnB}, protocol.KindTurn, map[string]string{"turnId": turnB}, afterA, afterB},
		{"empty turn", []string{"--turn", turnC}, protocol.KindTurn, map[string]string{"turnId": turnC}, afterB, afterB},
		{"compare A B", []string{"--compare", turnA, turnB}, protocol.KindCompareTurns, map[string]string{"originalTurnId": turnA, "modifiedTurnId": turnB}, afterA, afterB},
	}
	cat := catalogue(t, c, sum.Resource)
	for _, k := range cases {
		patch := d.diffCLI(t, append([]string{"--dir", repo}, k.args...)...)
		checkPatchTurns(t, k.name, patch, k.before, k.after)
		if k.name == "turn A" {
			for _, s := range []string{"GIT binary patch", "rename from old.txt\nrename to new.txt", "old mode 100644\nnew mode 100755", "deleted file mode 100644"} {
				if !strings.Contains(patch, s) {
					t.Errorf("turn A's patch lacks %q", s)
				}
			}
		}
		if k.name == "empty turn" && patch != "" {
			t.Errorf("an empty turn's patch is %q", patch)
		}

		// The same patch through the URI in the changeset state's _meta.
		uri := expand(t, cat[k.kind].URITemplate, k.vars)
		st := mirrorChangeset(t, c, uri).Wait("ready", ready)
		pu := metaString(st.Meta, "changesetd", "patchResource", "uri")
		if maxBytes, ok := metaInt(st.Meta, "changesetd", "patchResource", "maxBytes"); !ok || maxBytes <= 0 {
			t.Errorf("%s: _meta.changesetd.patchResource.maxBytes = %v", k.name, st.Meta)
		}
		got, err := readResource(t, c, pu)
		if err != nil {
			t.Fatalf("%s: resourceRead %q: %v", k.name, pu, err)
		}
		if string(got) != patch {
			t.Errorf("%s: resourceRead of %s differs from changesetd diff", k.name, pu)
		}
		if k.name == "turn A" {
			checkACPDiffs(t, c, repo, st)
		}
		c.Call(ctx(t), protocol.MethodUnsubscribe, map[string]any{"channel": uri}, nil)
	}
}

// checkACPDiffs checks each file's ACP diff block, read at its
// _meta.changesetd.acpDiffUri, against the
// ACP v2 diff shape: {type: "diff", changes: [{operation, path, oldPath
// for a move, fileType}], patch: {format: "git_patch", text}} with
// absolute paths and no a/ b/ prefixes in the patch, valid against ACP's
// v2 schema.
func checkACPDiffs(t *testing.T, c *fake.Client, repo string, st protocol.ChangesetState) {
	t.Helper()
	want := map[string]string{ // path → operation
		"text.txt": "modify", "new.txt": "move", "run.sh": "modify",
		"gone.txt": "delete", "bin.dat": "modify", "add.bin": "add",
	}
	if len(st.Files) != len(want) {
		t.Errorf("turn A has %d files, want %d", len(st.Files), len(want))
	}
	sch := acpDiffSchema(t)
	for _, f := range st.Files {
		raw, err := readResource(t, c, metaString(f.Meta, "changesetd", "acpDiffUri"))
		if err != nil {
			t.Errorf("%s: reading its ACP diff block: %v", f.ID, err)
			continue
		}
		if err := validateJSON(sch, raw); err != nil {
			t.Errorf("%s: acpDiff %s is not an ACP v2 ToolCallContent: %v", f.ID, raw, err)
		}
		var d struct {
			Type    string `json:"type"`
			Changes []struct {
				Operation string `json:"operation"`
				Path      string `json:"path"`
				OldPath   string `json:"oldPath"`
				FileType  string `json:"fileType"`
			} `json:"changes"`
			Patch *struct {
				Format string `json:"format"`
				Text   string `json:"text"`
			} `json:"patch"`
		}
		if err := json.Unmarshal(raw, &d); err != nil || d.Type != "diff" || len(d.Changes) != 1 || d.Patch == nil {
			t.Errorf("%s: acpDiff %s is not an ACP v2 diff with one change and a patch", f.ID, raw)
			continue
		}
		ch := d.Changes[0]
		rel := strings.TrimPrefix(ch.Path, repo+"/")
		if !filepath.IsAbs(ch.Path) || want[rel] == "" {
			t.Errorf("%s: acpDiff path %q is not an absolute path of a changed file", f.ID, ch.Path)
			continue
		}
		if ch.Operation != want[rel] {
			t.Errorf("%s: operation %q, want %q", rel, ch.Operation, want[rel])
		}
		if (ch.Operation == "move") != (ch.OldPath == filepath.Join(repo, "old.txt")) {
			t.Errorf("%s: oldPath %q for a %s", rel, ch.OldPath, ch.Operation)
		}
		if wantType := map[bool]string{true: "binary", false: "text"}[strings.HasSuffix(rel, ".bin") || strings.HasSuffix(rel, ".dat")]; ch.FileType != wantType {
			t.Errorf("%s: fileType %q, want %q", rel, ch.FileType, wantType)
		}
		from := ch.Path
		if ch.OldPath != "" {
			from = ch.OldPath
		}
		header := "diff --git " + from + " " + ch.Path + "\n"
		if d.Patch.Format != "git_patch" || !strings.HasPrefix(d.Patch.Text, header) || strings.Contains(d.Patch.Text, " a/") || strings.Contains(d.Patch.Text, " b/") {
			t.Errorf("%s: patch %q is not a git_patch starting %q without a/ b/ prefixes", rel, d.Patch.Text, header)
		}
		if ch.Operation == "modify" && ch.FileType == "text" && !strings.Contains(d.Patch.Text, "\n--- "+ch.Path+"\n+++ "+ch.Path+"\n") && rel != "run.sh" {
			t.Errorf("%s: patch lacks absolute ---/+++ lines:\n%s", rel, d.Patch.Text)
		}
	}
}

// TestWholeChangesetPatchUnbornBranch: a repository without a commit has
// a patch that creates every file.
func TestWholeChangesetPatchUnbornBranch(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if real, err := filepath.EvalSymlinks(repo); err == nil {
		repo = real
	}
	git(t, repo, "init", "-q", "-b", "main")
	d := startDaemon(t, repo)
	empty := snapshotTree(t, repo)
	if patch := d.diffCLI(t, "--dir", repo); patch != "" {
		t.Errorf("an empty unborn repository has the patch %q", patch)
	}
	writeFile(t, repo, "a.txt", "a\n")
	writeFile(t, repo, "b.bin", binBytes(5, 300))
	if err := os.Symlink("a.txt", filepath.Join(repo, "link")); err != nil {
		t.Fatal(err)
	}
	checkPatchTurns(t, "unborn", d.diffCLI(t, "--dir", repo), empty, repo)
}
