package snapstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"
)

// The benchmark's base: a 100,000-file tree (1,000 directories of 100
// files), built once per test binary because it takes seconds.
const benchDirs, benchFilesPerDir = 1000, 100

var bench struct {
	once      sync.Once
	dir       string // temporary directory holding everything
	objects   string // the objects dir holding the base (a repo's or a store's)
	base      string // base tree id
	gitStatus time.Duration
	err       error
}

func cleanupBench() {
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
}

func setupBench() error {
	bench.once.Do(func() { bench.err = buildBench() })
	return bench.err
}

func buildBench() error {
	dir, err := os.MkdirTemp("", "snapstore-bench-")
	if err != nil {
		return err
	}
	bench.dir = dir
	if _, err := exec.LookPath("git"); err != nil {
		// No git: build the base with Overlay itself, in a store the
		// benchmark's store borrows from.
		s, err := Open(filepath.Join(dir, "base.git"))
		if err != nil {
			return err
		}
		defer s.Close()
		changes := make([]Change, 0, benchDirs*benchFilesPerDir)
		for d := range benchDirs {
			for f := range benchFilesPerDir {
				p := fmt.Sprintf("dir%04d/file%03d.txt", d, f)
				changes = append(changes, Change{Path: p, Content: []byte(p + "\n")})
			}
		}
		bench.base, err = s.Overlay(context.Background(), "", changes)
		bench.objects = filepath.Join(s.Dir(), "objects")
		return err
	}
	repo := filepath.Join(dir, "repo")
	for d := range benchDirs {
		sub := filepath.Join(repo, fmt.Sprintf("dir%04d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		for f := range benchFilesPerDir {
			p := fmt.Sprintf("dir%04d/file%03d.txt", d, f)
			if err := os.WriteFile(filepath.Join(repo, p), []byte(p+"\n"), 0o644); err != nil {
				return err
			}
		}
	}
	run := func(args ...string) (string, error) { return gitErr(repo, nil, "", args...) }
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "-m", "base"},
	} {
		if _, err := run(args...); err != nil {
			return err
		}
	}
	if bench.base, err = run("rev-parse", "HEAD^{tree}"); err != nil {
		return err
	}
	bench.objects = filepath.Join(repo, ".git", "objects")
	// git status on a clean checkout: one warm-up run (which refreshes the
	// index), then the median of five.
	if _, err := run("status", "--porcelain"); err != nil {
		return err
	}
	var times []time.Duration
	for range 5 {
		start := time.Now()
		if _, err := run("status", "--porcelain"); err != nil {
			return err
		}
		times = append(times, time.Since(start))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	bench.gitStatus = times[len(times)/2]
	return nil
}

// BenchmarkOverlay snapshots a turn that changed 10 files in 10 different
// directories of a 100,000-file project whose HEAD tree is reached through
// an alternate. Each iteration writes 10 new blobs and 11 new trees.
func BenchmarkOverlay(b *testing.B) {
	if err := setupBench(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, err := Open(filepath.Join(b.TempDir(), "snapshots.git"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.AddAlternate(bench.objects); err != nil {
		b.Fatal(err)
	}
	changesFor := func(i int) []Change {
		var cs []Change
		for j := range 10 {
			d := (i*7919 + j*97) % benchDirs
			cs = append(cs, Change{
				Path:    fmt.Sprintf("dir%04d/file%03d.txt", d, j),
				Content: fmt.Appendf(nil, "turn %d change %d\n", i, j),
			})
		}
		return cs
	}
	// The first snapshot reads the trees on its paths from the alternate.
	start := time.Now()
	if _, err := s.Overlay(ctx, bench.base, changesFor(-1)); err != nil {
		b.Fatal(err)
	}
	cold := time.Since(start)

	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Overlay(ctx, bench.base, changesFor(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(float64(cold.Nanoseconds()), "cold-ns")
	if bench.gitStatus > 0 {
		b.ReportMetric(float64(bench.gitStatus.Nanoseconds()), "git-status-ns")
		b.ReportMetric(float64(bench.gitStatus.Nanoseconds())/perOp, "git-status/overlay")
	}
}
