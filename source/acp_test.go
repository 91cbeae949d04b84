package source

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// acpSchema compiles ACP v2's ToolCallContent from the upstream schema
// kept unmodified in testdata/acp-schema.
func acpSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../testdata/acp-schema/v2/schema.json")
	must(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	must(t, err)
	c := jsonschema.NewCompiler()
	const url = "https://agentclientprotocol.com/schema/v2/schema.json"
	must(t, c.AddResource(url, doc))
	s, err := c.Compile(url + "#/$defs/ToolCallContent")
	must(t, err)
	return s
}

// acpBlocks is each changed file's acpDiff, by path, after checking it
// against the ACP v2 schema.
func acpBlocks(t *testing.T, w *gitWorkspace) map[string]protocol.Object {
	t.Helper()
	sch := acpSchema(t)
	list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(t, err)
	out := map[string]protocol.Object{}
	for _, f := range list.Files {
		block := f.ACP
		raw, err := json.Marshal(block)
		must(t, err)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		must(t, err)
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: acpDiff %s is not an ACP v2 ToolCallContent: %v", f.Path(), raw, err)
		}
		out[f.Path()] = block
	}
	return out
}

func acpPatch(b protocol.Object) string {
	p, _ := b["patch"].(protocol.Object)
	s, _ := p["text"].(string)
	return s
}

func acpChange(b protocol.Object) protocol.Object {
	return b["changes"].([]any)[0].(protocol.Object)
}

// TestACPDiffShapes: every kind of change gives an ACP v2 diff block that
// the upstream schema accepts, with the patch under "text", every path of
// the patch absolute (renames included), the block's own diffStats, and
// the decided shapes for an empty new file, a change of mode alone and
// a binary file.
func TestACPDiffShapes(t *testing.T) {
	dir := newRepo(t)
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...)
	must(t, os.WriteFile(filepath.Join(dir, "logo.png"), png, 0o644))
	writeFile(t, dir, "moved from.txt", "one\ntwo\nthree\nfour\nfive\nsix\n")
	writeFile(t, dir, "mode.sh", "echo\n")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "more")

	writeFile(t, dir, "a.txt", "alpha\nmore\n")                                 // modify
	must(t, os.Remove(filepath.Join(dir, "b.txt")))                             // delete
	writeFile(t, dir, "empty.txt", "")                                          // add, no hunks
	must(t, os.Chmod(filepath.Join(dir, "mode.sh"), 0o755))                     // mode only
	png[20] = 1                                                                 // binary modify
	must(t, os.WriteFile(filepath.Join(dir, "logo.png"), png, 0o644))           //
	must(t, os.Remove(filepath.Join(dir, "moved from.txt")))                    // rename with a space
	writeFile(t, dir, "dir/moved to.txt", "one\ntwo\nthree\nfour\nfive\nSIX\n") //
	must(t, os.Symlink("a.txt", filepath.Join(dir, "link")))                    // add symlink
	gitRun(t, dir, "add", "-A")

	blocks := acpBlocks(t, openGit(t, dir))
	abs := func(rel string) string { return filepath.ToSlash(filepath.Join(dir, rel)) }
	want := map[string]struct{ op, fileType string }{
		"a.txt": {"modify", "text"}, "b.txt": {"delete", "text"}, "empty.txt": {"add", "text"},
		"mode.sh": {"modify", "text"}, "logo.png": {"modify", "binary"},
		"dir/moved to.txt": {"move", "text"}, "link": {"add", "symlink"},
	}
	if len(blocks) != len(want) {
		t.Errorf("%d blocks, want %d: %v", len(blocks), len(want), blocks)
	}
	for rel, w := range want {
		b := blocks[rel]
		if b == nil {
			t.Errorf("no block for %s", rel)
			continue
		}
		ch := acpChange(b)
		if ch["operation"] != w.op || ch["fileType"] != w.fileType || ch["path"] != abs(rel) {
			t.Errorf("%s: change %v, want %s %s at %s", rel, ch, w.op, w.fileType, abs(rel))
		}
		p := acpPatch(b)
		if !strings.HasPrefix(p, "diff --git ") || strings.Contains(p, " a/") || strings.Contains(p, " b/") {
			t.Errorf("%s: patch is not a git_patch with absolute paths:\n%s", rel, p)
		}
		if _, ok := b["patch"].(protocol.Object)["diff"]; ok {
			t.Errorf("%s: patch still has the pre-v2 member diff", rel)
		}
	}

	mv := blocks["dir/moved to.txt"]
	if acpChange(mv)["oldPath"] != abs("moved from.txt") {
		t.Errorf("move oldPath %v", acpChange(mv)["oldPath"])
	}
	for _, l := range []string{"rename from " + abs("moved from.txt") + "\n", "rename to " + abs("dir/moved to.txt") + "\n"} {
		if !strings.Contains(acpPatch(mv), "\n"+l) {
			t.Errorf("move patch lacks %q:\n%s", l, acpPatch(mv))
		}
	}
	if got := acpPatch(blocks["empty.txt"]); !strings.Contains(got, "\nnew file mode 100644\n") || strings.Contains(got, "@@") {
		t.Errorf("empty new file: patch is not the header alone:\n%s", got)
	}
	if got := acpPatch(blocks["mode.sh"]); !strings.Contains(got, "\nold mode 100644\nnew mode 100755\n") || strings.Contains(got, "@@") {
		t.Errorf("mode change: patch is not the header alone:\n%s", got)
	}
	if ch := acpChange(blocks["logo.png"]); ch["mimeType"] != "image/png" {
		t.Errorf("binary: mimeType %v, want image/png", ch["mimeType"])
	}
	if got := acpPatch(blocks["logo.png"]); !strings.Contains(got, "GIT binary patch\n") {
		t.Errorf("binary: patch is not git's binary patch:\n%s", got)
	}
	for _, rel := range []string{"a.txt", "empty.txt", "mode.sh", "link"} {
		if _, ok := acpChange(blocks[rel])["mimeType"]; ok {
			t.Errorf("%s: a text file has a mimeType", rel)
		}
	}
	// The block's own line counts, equal to the file's, as a client reads
	// them.
	stats := func(b protocol.Object) any {
		raw, err := json.Marshal(b["_meta"])
		if err != nil {
			t.Fatal(err)
		}
		var m protocol.Object
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		jb, _ := m["jetbrains"].(protocol.Object)
		air, _ := jb["air"].(protocol.Object)
		return air["diffStats"]
	}
	if s, ok := stats(blocks["a.txt"]).(protocol.Object); !ok || s["added"] != 1.0 || s["removed"] != 0.0 {
		t.Errorf("a.txt: block diffStats %v, want added 1 removed 0", stats(blocks["a.txt"]))
	}
	if s := stats(blocks["logo.png"]); s != nil {
		t.Errorf("binary: block diffStats %v, want none", s)
	}
}

// TestACPRenameQuotedPaths: a rename whose paths git quotes keeps the
// quoting of its "diff --git" line in "rename from" and "rename to".
func TestACPRenameQuotedPaths(t *testing.T) {
	dir := newRepo(t)
	writeFile(t, dir, "tab\there.txt", "one\ntwo\nthree\n")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "tab")
	gitRun(t, dir, "mv", "tab\there.txt", "q\"uote.txt")
	p := acpPatch(acpBlocks(t, openGit(t, dir))["q\"uote.txt"])
	from := `"` + strings.ReplaceAll(dir, `\`, `\\`) + `/tab\there.txt"`
	to := `"` + dir + `/q\"uote.txt"`
	if !strings.HasPrefix(p, "diff --git "+from+" "+to+"\n") || !strings.Contains(p, "\nrename from "+from+"\n") || !strings.Contains(p, "\nrename to "+to+"\n") {
		t.Errorf("quoted rename patch:\n%s", p)
	}
}
