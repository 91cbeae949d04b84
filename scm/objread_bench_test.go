package scm

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/changesetd/changesetd/scm/internal/gitobj"
)

// makeBlobPack makes a repository whose one commit holds n files, all
// versions of one text differing by a line, written by git fast-import and
// packed by git repack -adf (so most are OFS_DELTAs). It returns the
// repository and the blob ids.
func makeBlobPack(b *testing.B, n int) (string, []plumbing.Hash) {
	b.Helper()
	dir := newGitRepo(b)
	var base strings.Builder
	for i := range 300 {
		fmt.Fprintf(&base, "func F%d() int { return %d } // a line of a generated Go file\n", i, i)
	}
	var in bytes.Buffer
	for i := range n {
		s := strings.Replace(base.String(), fmt.Sprintf("return %d }", i%300), fmt.Sprintf("return %d }", -i), 1)
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(s), s)
	}
	fmt.Fprintf(&in, "commit refs/heads/main\ncommitter T <t@example.com> 0 +0000\ndata 5\nblobs\n")
	for i := range n {
		fmt.Fprintf(&in, "M 100644 :%d pkg%02d/file%04d.go\n", i+1, i%20, i)
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v\n%s", err, out)
	}
	gitRun(b, dir, "repack", "-q", "-adf")
	var ids []plumbing.Hash
	for line := range strings.SplitSeq(strings.TrimSpace(gitRun(b, dir, "ls-tree", "-r", "main")), "\n") {
		f := strings.Fields(line)
		ids = append(ids, plumbing.NewHash(f[2]))
	}
	if len(ids) != n {
		b.Fatalf("%d blobs, want %d", len(ids), n)
	}
	return dir, ids
}

// BenchmarkReadBlobs reads 1,000 blobs from a fresh handle per op, as a
// cold start does: through go-git (the old path) and through gitobj.
func BenchmarkReadBlobs(b *testing.B) {
	needGit(b)
	dir, ids := makeBlobPack(b, 1000)
	gitDir := filepath.Join(dir, ".git")
	b.Run("go-git", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			repo, err := openGit(dir, gitDir, gitDir, &lazyObjects{closed: true}) // go-git alone
			if err != nil {
				b.Fatal(err)
			}
			for _, h := range ids {
				if _, err := readBlobGit(repo, h); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("gitobj", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			o := gitobj.Open(filepath.Join(gitDir, "objects"))
			for _, h := range ids {
				if t, _, err := o.Read(h); err != nil || t != plumbing.BlobObject {
					b.Fatal(t, err)
				}
			}
			o.Close()
		}
	})
}
