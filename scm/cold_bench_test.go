package scm

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// coldBenchRepo returns a repository of n files in n/100 directories,
// committed through git fast-import, with 1% of the files edited and 5
// untracked. SCM_BENCH_DIR keeps it between runs (it is built once
// there), since building 100,000 files takes longer than scanning them.
func coldBenchRepo(b *testing.B, n int) string {
	b.Helper()
	needGit(b)
	keep := os.Getenv("SCM_BENCH_DIR")
	var dir string
	if keep != "" {
		dir = filepath.Join(keep, "cold-"+strconv.Itoa(n))
		if _, err := os.Stat(filepath.Join(dir, ".git", "bench-done")); err == nil {
			return dir
		}
		os.RemoveAll(dir)
	} else {
		dir = b.TempDir()
	}
	must(b, os.MkdirAll(dir, 0o755))
	gitRun(b, dir, "init", "-q", "-b", "main")
	dirs := max(n/100, 1)
	path := func(i int) string {
		d := i % dirs
		return fmt.Sprintf("mod%02d/pkg%04d/file%06d.go", d%10, d, i)
	}
	content := func(i int) string {
		return fmt.Sprintf("package p\n\n// file %d\nfunc F%d() int { return %d }\n", i, i, i)
	}
	cmd := exec.Command("git", "fast-import", "--quiet", "--done")
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	must(b, err)
	must(b, cmd.Start())
	w := bufio.NewWriterSize(in, 1<<20)
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter B <b@example.com> 1700000000 +0000\ndata 4\ninit\n")
	for d := range dirs {
		must(b, os.MkdirAll(filepath.Join(dir, filepath.Dir(path(d))), 0o755))
	}
	for i := range n {
		c := content(i)
		must(b, os.WriteFile(filepath.Join(dir, path(i)), []byte(c), 0o644))
		fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", path(i), len(c), c)
	}
	fmt.Fprintf(w, "done\n")
	must(b, w.Flush())
	in.Close()
	must(b, cmd.Wait())
	// Keep file timestamps out of the index's second (racily clean).
	time.Sleep(1100 * time.Millisecond)
	// read-tree writes the cache-tree a clone or a commit would leave;
	// reset then records the stat data.
	gitRun(b, dir, "read-tree", "HEAD")
	gitRun(b, dir, "reset", "-q")
	for i := 0; i < n; i += 100 {
		must(b, os.WriteFile(filepath.Join(dir, path(i)), []byte(content(i)+"// edited\n"), 0o644))
	}
	for k := range 5 {
		writeFile(b, dir, fmt.Sprintf("new/u%d.go", k), "package u\n")
	}
	gitRun(b, dir, "status", "--porcelain") // refresh the index, as a shell prompt would
	if keep != "" {
		must(b, os.WriteFile(filepath.Join(dir, ".git", "bench-done"), nil, 0o644))
	}
	return dir
}

// BenchmarkColdStatus is the first Status of a fresh Repo (index decode,
// HEAD comparison, the untracked walk, no stat cache) on 100,000 files.
// Profile it with -cpuprofile; SCM_BENCH_FILES changes the size.
func BenchmarkColdStatus(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("SCM_BENCH_FILES")); err == nil {
		n = v
	}
	dir := coldBenchRepo(b, n)
	ctx := context.Background()
	want := n/100 + 5
	for b.Loop() {
		r := openRepo(b, dir)
		st, err := r.Status(ctx)
		if err != nil || len(st.Changes) != want {
			b.Fatalf("status: %v, %d changes, want %d", err, len(st.Changes), want)
		}
	}
}

// BenchmarkColdView is BenchmarkColdStatus plus what a first view reads
// next: the base blob of every changed file.
func BenchmarkColdView(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("SCM_BENCH_FILES")); err == nil {
		n = v
	}
	dir := coldBenchRepo(b, n)
	ctx := context.Background()
	for b.Loop() {
		r := openRepo(b, dir)
		st, err := r.Status(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range st.Changes {
			if c.Head != nil {
				if _, err := r.ReadBlob(c.Head.OID); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// BenchmarkWarmStatus is a Status after a first one on the same Repo
// (index, HEAD's tree and the stat cache in hand), as the daemon runs
// when it opens a workspace and again for the first view.
func BenchmarkWarmStatus(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("SCM_BENCH_FILES")); err == nil {
		n = v
	}
	dir := coldBenchRepo(b, n)
	ctx := context.Background()
	r := openRepo(b, dir)
	if _, err := r.Status(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := r.Status(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
