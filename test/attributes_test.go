package test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

// utf16LE is s in UTF-16, little-endian, with a byte-order mark.
func utf16LE(s string) string {
	b := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

// porcelainPaths is the set of paths git status --porcelain lists (every
// untracked file one by one).
func porcelainPaths(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, rec := range strings.Split(git(t, dir, "status", "--porcelain", "-z", "--untracked-files=all", "--no-renames"), "\x00") {
		if len(rec) > 3 {
			out = append(out, rec[3:])
		}
	}
	slices.Sort(out)
	return out
}

func keysSorted(m map[string]numstat) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestCleanAttributesEndToEnd: files under ident, working-tree-encoding
// and a clean filter are compared as git compares them with HEAD. A real
// edit shows with git diff HEAD --numstat's counts, the set of files is
// git status --porcelain's, and a file rewritten with the same content
// (the id expanded, another byte order) shows nothing; both on the first
// full status and on the watcher's incremental path.
func TestCleanAttributesEndToEnd(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{
		".gitattributes": "*.c ident\n*.txt working-tree-encoding=UTF-16\n*.sec filter=rot\n",
		"a.c":            "/* $Id$ */\nint a;\nint b;\n",
		"b.c":            "/* $Id$ */\nint c;\n",
		"same.c":         "/* $Id$ */\nint same;\n",
		"x.sec":          "s1\ns2\n",
	})
	// git stores these in UTF-8; the working tree holds UTF-16.
	writeFile(t, repo, "u.txt", utf16LE("one\ntwo\nthree\n"))
	writeFile(t, repo, "same.txt", utf16LE("héllo\n"))
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "utf-16")
	// A clean filter git runs and this daemon cannot ("cat" keeps the
	// counts comparable with git's).
	git(t, repo, "config", "filter.rot.clean", "cat")
	git(t, repo, "config", "filter.rot.smudge", "cat")
	// Check out again: git expands $Id$.
	for _, p := range []string{"a.c", "b.c", "same.c"} {
		if err := os.Remove(filepath.Join(repo, p)); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "checkout", "--", ".")
	if b := diskContent(t, repo, "a.c"); !strings.Contains(string(b), "$Id: ") {
		t.Fatalf("git did not expand the id: %q", b)
	}
	// Real edits, and rewrites that change nothing for git.
	writeFile(t, repo, "a.c", strings.Replace(string(diskContent(t, repo, "a.c")), "int b;", "int b2;", 1))
	writeFile(t, repo, "u.txt", utf16LE("one\nTWO\nthree\nfour\n"))
	writeFile(t, repo, "same.c", string(diskContent(t, repo, "same.c")))
	writeFile(t, repo, "same.txt", utf16LE("héllo\n"))
	writeFile(t, repo, "x.sec", "s1\nS2\n")

	check := func(m *changesetMirror) {
		t.Helper()
		want := gitExpect(t, repo, "")
		if got, porcelain := keysSorted(want), porcelainPaths(t, repo); !slices.Equal(got, porcelain) {
			t.Fatalf("git diff HEAD %v, git status %v", got, porcelain)
		}
		st := waitFiles(m, repo, want)
		checkCounts(t, repo, st, want)
	}
	if want := []string{"a.c", "u.txt", "x.sec"}; !slices.Equal(porcelainPaths(t, repo), want) {
		t.Fatalf("git status: %v, want %v", porcelainPaths(t, repo), want)
	}
	d := startDaemon(t, repo)
	c := d.client(t, "ide")
	sum := onlySession(t, c)
	m, _ := subscribeKind(t, c, catalogue(t, c, sum.Resource), "uncommitted")
	check(m)

	// Through the watcher: more edits, more rewrites that change nothing.
	writeFile(t, repo, "b.c", strings.Replace(string(diskContent(t, repo, "b.c")), "int c;", "int c;\nint d;", 1))
	writeFile(t, repo, "x.sec", "s1\nS2\ns3\n")
	writeFile(t, repo, "u.txt", utf16LE("one\ntwo\nthree\n")) // back to HEAD's text
	check(m)
}
