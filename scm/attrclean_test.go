package scm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

func utf16le(s string, bom bool) string {
	var b []byte
	if bom {
		b = append(b, 0xff, 0xfe)
	}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

func utf16be(s string, bom bool) string {
	var b []byte
	if bom {
		b = append(b, 0xfe, 0xff)
	}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return string(b)
}

// TestCleanAttributesHashLikeGit hashes files under ident and
// working-tree-encoding as git hash-object does (it applies the same
// clean conversion), including content git cannot decode, which it hashes
// as it is.
func TestCleanAttributesHashLikeGit(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, dir, ".gitattributes", strings.Join([]string{
		"*.id ident",
		"*.u16 working-tree-encoding=UTF-16",
		"*.u16le working-tree-encoding=UTF-16LE",
		"*.u16bom working-tree-encoding=UTF-16LE-BOM",
		"*.u16be working-tree-encoding=utf16be",
		"*.lat working-tree-encoding=ISO-8859-1",
		"*.sjis working-tree-encoding=SHIFT-JIS",
		"*.u8 working-tree-encoding=UTF-8",
		"*.crlf working-tree-encoding=UTF-16 text eol=crlf ident",
	}, "\n")+"\n")
	files := map[string]string{
		"a.id":            "x\n$Id: 0123456789abcdef $\ny\n",
		"b.id":            "$Id$ and $Id: one $ and $Id: two $\n",
		"c.id":            "$Id: broken\nline $\n$Id:$ $Id: $",
		"d.id":            "$Id",
		"e.id":            "$Id:",
		"f.id":            "no keyword at all\n",
		"g.id":            "$$Id: x $$",
		"le.u16":          utf16le("héllo\nwörld\n", true),
		"be.u16":          utf16be("héllo\n", true),
		"nobom.u16":       utf16le("no mark\n", false),
		"le.u16le":        utf16le("plain LE ✓\n", false),
		"bom.u16le":       utf16le("a mark is prohibited\n", true),
		"odd.u16le":       utf16le("odd", false) + "x",
		"surrogate.u16le": string([]byte{0x00, 0xd8, 'a', 0}),
		"x.u16bom":        utf16le("LE with a mark\n", true),
		"x.u16be":         utf16be("big\n", false),
		"x.lat":           "caf\xe9\n",
		"x.sjis":          "\x82\xa0\x82\xa2\n",
		"x.u8":            "\xef\xbb\xbfkept as it is \xff\n",
		"x.crlf":          utf16le("$Id: deadbeef $\r\nline\r\n", true),
		"empty.u16":       "",
	}
	for p, c := range files {
		writeFile(t, dir, p, c)
	}
	r := openRepo(t, dir)
	ctx := context.Background()
	for p := range files {
		got, err := r.HashWorktree(ctx, p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if want := strings.TrimSpace(gitRun(t, dir, "hash-object", "--", p)); got != want {
			b, _, _, _ := r.ReadWorktreeCanonical(p)
			t.Errorf("%s: hash %s, git hash-object %s (ours reads %q)", p, got, want, b)
		}
	}
	// What git cannot decode is shown as it is, with a warning.
	b, _, warns, err := r.ReadWorktreeCanonical("nobom.u16")
	if err != nil || string(b) != files["nobom.u16"] || len(warns) != 1 || !strings.Contains(warns[0], "BOM is required") {
		t.Errorf("nobom.u16: %q %q %v", b, warns, err)
	}
	b, _, warns, err = r.ReadWorktreeCanonical("le.u16")
	if err != nil || string(b) != "héllo\nwörld\n" || len(warns) != 0 {
		t.Errorf("le.u16: %q %q %v", b, warns, err)
	}
	// git add refuses what it cannot decode; so does staging here.
	if err := r.StagePath(ctx, "nobom.u16"); err == nil || !strings.Contains(err.Error(), "BOM is required") {
		t.Errorf("staged a UTF-16 file without its mark: %v", err)
	}
	must(t, r.StagePath(ctx, "le.u16"))
	if got, want := strings.TrimSpace(gitRun(t, dir, "rev-parse", ":le.u16")), strings.TrimSpace(gitRun(t, dir, "hash-object", "--", "le.u16")); got != want {
		t.Errorf("staged le.u16 as %s, git would store %s", got, want)
	}
}

// TestCleanAttributesStatus: a file checked out with ident expanded or in
// UTF-16 is unchanged for git when only its stat changed, and a real edit
// shows, with git's blob id.
func TestCleanAttributesStatus(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, dir, ".gitattributes", "*.c ident\n*.txt working-tree-encoding=UTF-16\n")
	writeFile(t, dir, "a.c", "/* $Id$ */\nint a;\n")
	writeFile(t, dir, "b.c", "/* $Id$ */\nint b;\n")
	writeFile(t, dir, "u.txt", utf16le("one\ntwo\n", true))
	writeFile(t, dir, "v.txt", utf16le("same\n", true))
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "init")
	// Check out again: git expands $Id$ and writes UTF-16 (in its own byte
	// order, with a mark).
	for _, p := range []string{"a.c", "b.c", "u.txt", "v.txt"} {
		must(t, removeFile(dir, p))
	}
	gitRun(t, dir, "checkout", "--", ".")
	ageAll(t, dir)
	r := openRepo(t, dir)
	st := status(t, r)
	checkAgainstGit(t, dir, st, "")
	if len(st.Changes) != 0 || len(st.Warnings) != 0 {
		t.Errorf("fresh checkout: %v %q", ourView(st.Changes), st.Warnings)
	}
	c, _, _, _ := r.ReadWorktreeCanonical("a.c")
	if string(c) != "/* $Id$ */\nint a;\n" {
		t.Errorf("a.c reads %q", c)
	}
	writeFile(t, dir, "a.c", strings.Replace(string(mustRead(t, dir, "a.c")), "int a;", "int a2;", 1))
	writeFile(t, dir, "u.txt", utf16le("one\nTWO\n", true))
	writeFile(t, dir, "b.c", string(mustRead(t, dir, "b.c"))) // rewritten, same bytes
	writeFile(t, dir, "v.txt", utf16le("same\n", true))       // other byte order, same text
	st = status(t, r)
	checkAgainstGit(t, dir, st, "")
	if v := ourView(st.Changes); strings.Join(v, ",") != "M a.c,M u.txt" || len(st.Warnings) != 0 {
		t.Errorf("after edits: %v %q", v, st.Warnings)
	}
}

func removeFile(dir, rel string) error { return os.Remove(filepath.Join(dir, filepath.FromSlash(rel))) }

func mustRead(t *testing.T, dir, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	must(t, err)
	return b
}
