// Package gittest holds what the tests of scm and the packages under it
// share about real repositories: every object as git itself reads it,
// and a history whose files git stores as deltas. It is for tests only.
package gittest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// Object is one object as git reports it.
type Object struct {
	ID   plumbing.Hash
	Type plumbing.ObjectType
	Data []byte
}

// AllObjects returns every object of the repository at dir (alternates
// included) with its content, as `git cat-file --batch` prints them; a
// repository without any fails the test.
func AllObjects(t testing.TB, dir string) []Object {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "--batch-all-objects", "--batch")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file --batch-all-objects: %v", err)
	}
	var objs []Object
	br := bufio.NewReader(bytes.NewReader(out))
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("cat-file line %q", line)
		}
		typ, err := plumbing.ParseObjectType(f[1])
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, n+1)
		if _, err := io.ReadFull(br, data); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, Object{ID: plumbing.NewHash(f[0]), Type: typ, Data: data[:n]})
	}
	if len(objs) == 0 {
		t.Fatal("no objects")
	}
	return objs
}

// VersionText is version v of a file long enough for git to store its
// other versions as deltas against it: 200 lines, one of them marked v.
func VersionText(v int) string {
	var base strings.Builder
	for i := range 200 {
		if i == v%200 {
			fmt.Fprintf(&base, "line %d version %d of a file long enough to be worth a delta\n", i, v)
			continue
		}
		fmt.Fprintf(&base, "line %d of a file long enough to be worth a delta\n", i)
	}
	return base.String()
}

// MakeHistory commits, with the git binary, n versions of three files in
// dir (d0/file0.txt, d1/file1.txt, d0/file2.txt) that differ by a line
// and a tail, so that git stores most of them as deltas once packed.
func MakeHistory(t testing.TB, dir string, n int) {
	t.Helper()
	for v := range n {
		for f := range 3 {
			p := filepath.Join(dir, fmt.Sprintf("d%d", f%2), fmt.Sprintf("file%d.txt", f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			s := VersionText(v) + strings.Repeat(fmt.Sprintf("tail %d\n", v), v%5)
			if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git(t, dir, "add", "-A")
		git(t, dir, "commit", "-q", "-m", fmt.Sprintf("version %d", v))
	}
}

func git(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
