package scm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSmudgeLikeGitCheckout: for each blob and attribute, under each
// core.autocrlf and core.eol, Smudge gives exactly the bytes git checkout
// writes.
func TestSmudgeLikeGitCheckout(t *testing.T) {
	dir := newGitRepo(t)
	attrs := strings.Join([]string{
		"text.txt text",
		"crlf.txt text eol=crlf",
		"lf.txt eol=lf",
		"eolcrlf.txt eol=crlf",
		"auto.txt text=auto",
		"autocrlf.txt text=auto eol=crlf",
		"autobin.txt text=auto eol=crlf",
		"input.txt text=input",
		"legacy.txt crlf",
		"bin.dat -text",
		"id.c ident",
		"u16.txt working-tree-encoding=UTF-16",
		"u32.txt working-tree-encoding=UTF-32",
		"u16lebom.txt working-tree-encoding=UTF-16LE-BOM",
		"u16be.txt working-tree-encoding=UTF-16BE text eol=crlf",
		"latin.txt working-tree-encoding=ISO-8859-1",
		"",
	}, "\n")
	blobs := map[string]string{
		".gitattributes": attrs,
		"plain.txt":      "one\ntwo\n",
		"mixed.txt":      "one\r\ntwo\n",
		"text.txt":       "one\ntwo\nno end",
		"crlf.txt":       "one\ntwo\n",
		"lf.txt":         "one\r\ntwo\n",
		"eolcrlf.txt":    "one\ntwo\n",
		"auto.txt":       "one\ntwo\n",
		"autocrlf.txt":   "one\ntwo\n",
		"autobin.txt":    "one\x00\ntwo\n",
		"input.txt":      "one\ntwo\n",
		"legacy.txt":     "one\ntwo\n",
		"bin.dat":        "one\ntwo\n",
		"id.c":           "/* $Id$ */\n$Id: old $\nx\n",
		"u16.txt":        "héllo\nwörld\n",
		"u32.txt":        "héllo\n",
		"u16lebom.txt":   "héllo\n",
		"u16be.txt":      "héllo\nwörld\n",
		"latin.txt":      "café\n",
	}
	oids := map[string]string{}
	for path, content := range blobs {
		cmd := exec.Command("git", "hash-object", "-w", "--no-filters", "--stdin")
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(content)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		oids[path] = strings.TrimSpace(string(out))
		gitRun(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+oids[path]+","+path)
	}
	gitRun(t, dir, "commit", "-qm", "blobs")
	gitRun(t, dir, "checkout", "--", ".gitattributes")
	for _, cfg := range []struct{ autocrlf, eol string }{{"false", ""}, {"true", ""}, {"input", ""}, {"false", "crlf"}, {"false", "lf"}} {
		gitRun(t, dir, "config", "core.autocrlf", cfg.autocrlf)
		if cfg.eol != "" {
			gitRun(t, dir, "config", "core.eol", cfg.eol)
		} else {
			exec.Command("git", "-C", dir, "config", "--unset", "core.eol").Run()
		}
		r := openRepo(t, dir)
		for path, content := range blobs {
			if path == ".gitattributes" {
				continue
			}
			if err := os.Remove(filepath.Join(dir, path)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			gitRun(t, dir, "checkout", "--", path)
			want, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Smudge(path, []byte(content), oids[path])
			if err != nil {
				t.Errorf("autocrlf=%s eol=%s %s: %v", cfg.autocrlf, cfg.eol, path, err)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("autocrlf=%s eol=%s %s: Smudge gives %q, git checkout writes %q", cfg.autocrlf, cfg.eol, path, got, want)
			}
		}
		r.Close()
	}
}
