package scm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedLikeCheckAttr resolves linguist-generated for paths that
// each rule source decides, and compares every answer with git check-attr:
// patterns in the root's and a directory's .gitattributes, a later line
// overriding an earlier one, unset and "false" values, a macro, a
// negation ("!attr") and info/attributes over everything.
func TestGeneratedLikeCheckAttr(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, dir, ".gitattributes", strings.Join([]string{
		"[attr]made linguist-generated",
		"*.pb.go linguist-generated",
		"gen/** linguist-generated=true",
		"gen/keep.go -linguist-generated",
		"docs/*.md linguist-generated=false",
		"*.min.js made",
		"vendor/** linguist-generated",
		"vendor/own.go !linguist-generated",
		"info.txt linguist-generated",
	}, "\n")+"\n")
	writeFile(t, dir, "sub/.gitattributes", "*.txt linguist-generated\nhand.txt -linguist-generated\n")
	if err := os.MkdirAll(filepath.Join(dir, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ".git/info/attributes", "info.txt -linguist-generated\n")
	paths := []string{
		"api.pb.go", "main.go", "gen/a.go", "gen/keep.go", "gen/deep/b.go", "docs/x.md",
		"app.min.js", "vendor/lib.go", "vendor/own.go", "info.txt", "sub/a.txt", "sub/hand.txt", "sub/a.go",
	}
	got := openRepo(t, dir).Generated(paths)
	out := gitRun(t, dir, append([]string{"check-attr", "-z", "linguist-generated", "--"}, paths...)...)
	f := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	if len(f) != 3*len(paths) {
		t.Fatalf("git check-attr printed %q", out)
	}
	for i := 0; i < len(f); i += 3 {
		p, v := f[i], f[i+2]
		want, specified := false, true
		switch v {
		case "unspecified":
			specified = false
		case "set":
			want = true
		case "unset", "false":
		default:
			want = true
		}
		g, ok := got[p]
		if ok != specified || g != want {
			t.Errorf("%s: Generated says %v (specified %v), git check-attr %q", p, g, ok, v)
		}
	}
	// The oracle must have seen each kind of answer.
	for _, v := range []string{": set", ": unset", ": unspecified", ": true", ": false"} {
		if !strings.Contains(strings.ReplaceAll(out, "\x00", ": "), "linguist-generated"+v) {
			t.Errorf("git check-attr gave no %q answer: the cases do not cover it\n%q", v, out)
		}
	}
}

// BenchmarkGenerated resolves the attribute of 1,500 files in 100
// directories, a .gitattributes in every tenth: what each computation of
// a large changeset adds.
func BenchmarkGenerated(b *testing.B) {
	dir := newGitRepo(b)
	writeFile(b, dir, ".gitattributes", "*.pb.go linguist-generated\n")
	var paths []string
	for d := 0; d < 100; d++ {
		if d%10 == 0 {
			writeFile(b, dir, fmt.Sprintf("d%d/.gitattributes", d), "gen_* linguist-generated\n")
		}
		for f := 0; f < 15; f++ {
			paths = append(paths, fmt.Sprintf("d%d/f%d.go", d, f))
		}
	}
	r := openRepo(b, dir)
	b.ResetTimer()
	for range b.N {
		r.Generated(paths)
	}
}
