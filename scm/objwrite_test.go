package scm

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fullDisk is a writer that fails with ENOSPC once n bytes went through.
type fullDisk struct {
	w io.Writer
	n int
}

func (d *fullDisk) Write(b []byte) (int, error) {
	if len(b) > d.n {
		k, _ := d.w.Write(b[:d.n])
		d.n = 0
		return k, syscall.ENOSPC
	}
	d.n -= len(b)
	return d.w.Write(b)
}

// objectTemps lists temp files under objects/ (and objects/pack).
func objectTemps(t *testing.T, dir string) []string {
	var out []string
	for _, pat := range []string{"tmp_*", "*/tmp_*"} {
		m, err := filepath.Glob(filepath.Join(dir, ".git", "objects", pat))
		must(t, err)
		out = append(out, m...)
	}
	return out
}

// TestFailedObjectWriteLeavesNoTemp: when the disk fills while an object
// is written (a staged blob, small or streamed, or a commit's trees and
// commit), the write fails with the disk's error, no temp file stays in
// objects/ or objects/pack, no object is left half written, and the
// index is untouched.
func TestFailedObjectWriteLeavesNoTemp(t *testing.T) {
	big := strings.Repeat("large content ", streamBlobMin/14+1)
	cases := []struct {
		name string
		run  func(r *Repo, dir string) error
	}{
		{"stage content", func(r *Repo, dir string) error {
			return r.StageContent(context.Background(), "a.txt", []byte("new content\n"), 0o100644)
		}},
		{"stage a file", func(r *Repo, dir string) error {
			writeFile(t, dir, "a.txt", "changed\n")
			return r.StagePath(context.Background(), "a.txt")
		}},
		{"stage a large file", func(r *Repo, dir string) error {
			writeFile(t, dir, "big.bin", big)
			return r.StagePath(context.Background(), "big.bin")
		}},
		{"commit", func(r *Repo, dir string) error {
			gitRun(t, dir, "rm", "-q", "--cached", "d/b.txt")
			_, err := r.Commit(context.Background(), "message")
			return err
		}},
	}
	for _, c := range cases {
		// Small objects compress to a few dozen bytes: the disk fills
		// at once, or just after the zlib header.
		for _, after := range []int{0, 5} {
			dir := newGitRepo(t)
			writeFile(t, dir, "a.txt", "a\n")
			writeFile(t, dir, "d/b.txt", "b\n")
			gitRun(t, dir, "add", "-A")
			gitRun(t, dir, "commit", "-q", "-m", "files")
			before := gitRun(t, dir, "count-objects", "-v")
			index, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
			must(t, err)
			r := openRepo(t, dir)
			r.objectSink = func(w io.Writer) io.Writer { return &fullDisk{w: w, n: after} }
			err = c.run(r, dir)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("%s, full after %d bytes: %v, want ENOSPC", c.name, after, err)
			}
			if tmp := objectTemps(t, dir); len(tmp) != 0 {
				t.Errorf("%s, full after %d bytes: temp files left: %v", c.name, after, tmp)
			}
			if got := gitRun(t, dir, "count-objects", "-v"); got != before {
				t.Errorf("%s, full after %d bytes: objects\n%s\nwant\n%s", c.name, after, got, before)
			}
			now, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
			must(t, err)
			if string(now) != string(index) && c.name != "commit" {
				t.Errorf("%s: index changed by a failed write", c.name)
			}
			if out, err := runGit(dir, "fsck", "--no-dangling"); err != nil {
				t.Errorf("%s: git fsck: %v\n%s", c.name, err, out)
			}
			r.Close()
		}
	}
}
