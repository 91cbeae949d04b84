package test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

var updatePatches = flag.Bool("update-patches", false, "rewrite testdata/patches.golden from what the daemon serves")

// TestFilePatchesGolden pins the exact bytes of every file's patch and
// ACP diff block, read through the URIs of the changeset state, for
// changes of every shape git distinguishes: an edit, a file added and
// one deleted, a rename with an edit, a mode change, a binary edit, a
// missing final newline, a name git quotes, a symbolic link and a file
// turned into one. testdata/patches.golden was written from the patches
// the state used to carry inline, so a client that read them there reads
// the same bytes now. The whole-changeset patch is the files' patches
// one after the other.
func TestFilePatchesGolden(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{
		"edit.txt":      lines(12, func(i int) string { return "line " + string(rune('a'+i)) + "\n" }),
		"gone.txt":      "bye\n",
		"old name.txt":  lines(20, func(i int) string { return "kept " + string(rune('a'+i)) + "\n" }),
		"run.sh":        "echo hi\n",
		"bin.dat":       binBytes(1, 600),
		"eol.txt":       "one\ntwo\n",
		"tab\tname.txt": "x\n",
		"became.txt":    "a file\n",
	})
	git(t, repo, "config", "core.quotePath", "true")
	writeFile(t, repo, "edit.txt", strings.Replace(lines(12, func(i int) string { return "line " + string(rune('a'+i)) + "\n" }), "line f\n", "line F\nline f2\n", 1))
	remove(t, repo, "gone.txt")
	if err := os.Rename(filepath.Join(repo, "old name.txt"), filepath.Join(repo, "new name.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "new name.txt", lines(20, func(i int) string { return "kept " + string(rune('a'+i)) + "\n" })+"added\n")
	if err := os.Chmod(filepath.Join(repo, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "bin.dat", binBytes(1, 400)+binBytes(2, 300))
	writeFile(t, repo, "eol.txt", "one\ntwo")
	writeFile(t, repo, "tab\tname.txt", "y\n")
	writeFile(t, repo, "added.txt", "new\n")
	remove(t, repo, "became.txt")
	if err := os.Symlink("edit.txt", filepath.Join(repo, "became.txt")); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "-N", "added.txt")

	m := subscribeUncommitted(t, startDaemon(t, repo))
	st := m.Wait("the nine changes", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 9 })

	var got, whole bytes.Buffer
	for _, f := range st.Files {
		own := func(k string) string { return metaString(f.Meta, "changesetd", k) }
		rel, _ := url.PathUnescape(strings.TrimPrefix(strings.TrimPrefix(f.ID, "file://"), repo+"/"))
		if own("patch") != "" || own("acpDiff") != "" {
			t.Errorf("%s: the state carries a patch inline", rel)
		}
		patch := filePatch(t, m.c, &f)
		acp, err := readResource(t, m.c, own("acpDiffUri"))
		if err != nil {
			t.Errorf("%s: its ACP diff block: %v", rel, err)
		}
		var pretty bytes.Buffer
		json.Indent(&pretty, acp, "", " ")
		got.WriteString("== " + rel + "\n" + patch + "-- acp\n" + strings.ReplaceAll(pretty.String(), repo, "/REPO") + "\n")
		whole.WriteString(patch)
	}
	golden := filepath.Join("testdata", "patches.golden")
	if *updatePatches {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update-patches to write it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("the patches read differ from %s:\n%s", golden, firstDifference(string(want), got.String()))
	}

	var meta struct {
		Changesetd struct {
			PatchResource struct{ URI string } `json:"patchResource"`
		} `json:"changesetd"`
	}
	raw, _ := json.Marshal(st.Meta)
	json.Unmarshal(raw, &meta)
	all, err := readResource(t, m.c, meta.Changesetd.PatchResource.URI)
	if err != nil || !bytes.Equal(all, whole.Bytes()) {
		t.Errorf("the whole-changeset patch (%v) is not the files' patches in order:\n%s", err, firstDifference(whole.String(), string(all)))
	}
}

// TestFilePatchVersions: a patch URI names one version of the file. Once
// the file changes, the state names a new one, which reads the new patch;
// the version just before stays readable for a while (a client one
// version behind is not starved), an older one is refused as a conflict;
// a changeset nobody is subscribed to says where its whole patch is.
func TestFilePatchVersions(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "one\n"})
	writeFile(t, repo, "a.txt", "two\n")
	m := subscribeUncommitted(t, startDaemon(t, repo))
	st := m.Wait("a.txt changed", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 1 })
	first := metaString(st.Files[0].Meta, "changesetd", "patchUri")
	if p := filePatch(t, m.c, &st.Files[0]); !strings.Contains(p, "-one\n+two\n") {
		t.Fatalf("the patch of a.txt: %q", p)
	}

	// Saved atomically: a truncate then write may be published half
	// done, a version between the two this test reads.
	replaceFile(t, repo, "a.txt", "three\n")
	st = m.Wait("a.txt changed again", func(st protocol.ChangesetState) bool {
		return len(st.Files) == 1 && metaString(st.Files[0].Meta, "changesetd", "patchUri") != first
	})
	if p := filePatch(t, m.c, &st.Files[0]); !strings.Contains(p, "-one\n+three\n") {
		t.Errorf("the new patch of a.txt: %q", p)
	}
	if old, err := readResource(t, m.c, first); err != nil || !strings.Contains(string(old), "-one\n+two\n") {
		t.Errorf("reading the version just before the change: %q, %v; want its patch", old, err)
	}
	second := metaString(st.Files[0].Meta, "changesetd", "patchUri")
	replaceFile(t, repo, "a.txt", "four\n")
	st = m.Wait("a.txt changed a third time", func(st protocol.ChangesetState) bool {
		return len(st.Files) == 1 && metaString(st.Files[0].Meta, "changesetd", "patchUri") != second
	})
	_, err := readResource(t, m.c, first)
	var re *fake.RPCError
	if !errors.As(err, &re) || re.Code != protocol.CodeConflict || !strings.Contains(fmt.Sprint(re.Data), protocol.ReasonFileChanged) {
		t.Errorf("reading the first version two changes later: %v, want -32011 fileChanged", err)
	}
	if _, err := readResource(t, m.c, strings.Replace(first, "?v=", "?w=", 1)); err == nil || !strings.Contains(err.Error(), "(v=…)") {
		t.Errorf("a patch URI without its version: %v", err)
	}

	uri := metaString(st.Files[0].Meta, "changesetd", "patchUri")
	other := strings.Replace(uri, "/patch/uncommitted?", "/patch/branch?", 1)
	if _, err := readResource(t, m.c, other); rpcCode(err) != protocol.CodeNotFound || !strings.Contains(err.Error(), "nobody is subscribed") || !strings.Contains(err.Error(), "/patch/branch") {
		t.Errorf("a file's patch of a changeset nobody is subscribed to: %v", err)
	}
}

// firstDifference shows where two texts part, with a few lines of each.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		if i >= len(w) || i >= len(g) || w[i] != g[i] {
			end := func(l []string) []string { return l[min(i, len(l)):min(i+4, len(l))] }
			return fmt.Sprintf("from line %d, want:\n%s\ngot:\n%s", i+1, strings.Join(end(w), "\n"), strings.Join(end(g), "\n"))
		}
	}
	return "(equal)"
}
