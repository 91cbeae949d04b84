package scm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// benchFiles is the size of the generated repository.
const benchFiles = 20000

// makeBenchRepo commits benchFiles files in 200 directories of two levels,
// then edits a few, adds a few untracked files and an ignored tree.
func makeBenchRepo(b *testing.B) string {
	b.Helper()
	dir := newGitRepo(b)
	for i := range benchFiles {
		rel := fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%20, (i/20)%10, i)
		writeFile(b, dir, rel, fmt.Sprintf("package p\n\n// file %d\nfunc F%d() int { return %d }\n", i, i, i))
	}
	writeFile(b, dir, ".gitignore", "node_modules/\n*.o\n")
	ageAll(b, dir)
	gitRun(b, dir, "add", "-A")
	gitRun(b, dir, "commit", "-q", "-m", "bench")
	for i := range 10 {
		writeFile(b, dir, fmt.Sprintf("pkg%02d/sub0/file%04d.go", i, i), "edited\n")
		writeFile(b, dir, fmt.Sprintf("pkg%02d/new%d.go", i, i), "new\n")
	}
	for i := range 2000 {
		writeFile(b, dir, fmt.Sprintf("node_modules/m%d/index.js", i), "x\n")
	}
	// Let git refresh the index once, as a user's shell prompt would.
	gitRun(b, dir, "status", "--porcelain")
	return dir
}

// BenchmarkStatus times a warm Status (stat cache filled) on a 20,000-file
// repository and reports `git status --porcelain` on the same tree, plus
// the ratio ours/git and a cold scan (fresh Repo: index decode, HEAD tree
// flattening, no stat cache).
func BenchmarkStatus(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git binary not available")
	}
	dir := makeBenchRepo(b)
	ctx := context.Background()

	const gitRuns = 10
	start := time.Now()
	for range gitRuns {
		cmd := exec.Command("git", "status", "--porcelain")
		cmd.Dir = dir
		if out, err := cmd.Output(); err != nil || len(strings.Split(strings.TrimSpace(string(out)), "\n")) != 20 {
			b.Fatalf("git status: %v\n%s", err, out)
		}
	}
	gitPer := time.Since(start) / gitRuns

	start = time.Now()
	cold := openRepo(b, dir)
	if st, err := cold.Status(ctx); err != nil || len(st.Changes) != 20 {
		b.Fatalf("cold status: %v, %d changes", err, len(st.Changes))
	}
	coldDur := time.Since(start)

	r := openRepo(b, dir)
	if st, err := r.Status(ctx); err != nil || len(st.Changes) != 20 {
		b.Fatalf("status: %v", err)
	}
	n := 0
	start = time.Now()
	for b.Loop() {
		if _, err := r.Status(ctx); err != nil {
			b.Fatal(err)
		}
		n++
	}
	ours := time.Since(start) / time.Duration(n)
	b.ReportMetric(float64(gitPer.Microseconds())/1000, "git-ms/op")
	b.ReportMetric(float64(ours.Microseconds())/1000, "ours-ms/op")
	b.ReportMetric(float64(ours)/float64(gitPer), "ours/git")
	b.ReportMetric(float64(coldDur.Microseconds())/1000, "cold-ms")
}

// BenchmarkStatusPaths re-checks one edited file and one directory in the
// same repository, the watcher's hot path.
func BenchmarkStatusPaths(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git binary not available")
	}
	dir := makeBenchRepo(b)
	r := openRepo(b, dir)
	ctx := context.Background()
	if _, err := r.Status(ctx); err != nil {
		b.Fatal(err)
	}
	paths := []string{"pkg03/sub0/file0003.go", "pkg07"}
	for b.Loop() {
		got, err := r.StatusPaths(ctx, paths)
		if err != nil || len(got) != 3 {
			b.Fatalf("%v %d", err, len(got))
		}
	}
}

// BenchmarkStatusOneFile re-checks one saved file, what a save costs the
// scan: its allocations must not grow with the tree.
func BenchmarkStatusOneFile(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git binary not available")
	}
	dir := makeBenchRepo(b)
	r := openRepo(b, dir)
	ctx := context.Background()
	if _, err := r.Status(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		got, err := r.StatusPaths(ctx, []string{"pkg03/sub0/file0003.go"})
		if err != nil || len(got) != 1 {
			b.Fatalf("%v %d", err, len(got))
		}
	}
}

// BenchmarkIndexDecode times decoding a 100,000-entry index (version 2
// and 4) with our decoder and with go-git's, which it replaced, and
// into the resident index through either of our two readers.
func BenchmarkIndexDecode(b *testing.B) {
	dir := newGitRepo(b)
	var sb strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&sb, "100644 %s 0\tpkg%02d/sub%d/file%05d.go\n", blobID(fmt.Sprint(i)), i%20, (i/20)%10, i)
	}
	cmd := exec.Command("git", "update-index", "--index-info")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(sb.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("update-index: %v\n%s", err, out)
	}
	for _, v := range []string{"2", "4"} {
		gitRun(b, dir, "update-index", "--index-version", v)
		raw, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run("ours/v"+v, func(b *testing.B) {
			for b.Loop() {
				if _, err := decodeIndex(raw, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The resident index as a status reads it: through go-git's
		// entries, then compact (full), or straight (compact).
		b.Run("snapshot-full/v"+v, func(b *testing.B) {
			for b.Loop() {
				if _, err := (&Repo{}).fullSnapshot(raw, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("snapshot-compact/v"+v, func(b *testing.B) {
			for b.Loop() {
				if _, ok, err := compactSnapshot(raw); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
		b.Run("go-git/v"+v, func(b *testing.B) {
			for b.Loop() {
				var idx index.Index
				if err := index.NewDecoder(bytes.NewReader(raw)).Decode(&idx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
