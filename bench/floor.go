package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// daemonFloor is the daemon's own peak RSS (VmHWM, KiB): what it peaks
// at serving a repository of one committed file (and the 5 untracked
// files every bench tree has) to one subscriber. The memory row of
// bench -scale counts what a tree costs above it.
func daemonFloor(c config, bin, work string) (int64, error) {
	dir := filepath.Join(work, "floor")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	defer func() {
		if !c.keep {
			os.RemoveAll(dir)
		}
	}()
	r, err := makeRepo(dir, 1, 1, 0)
	if err != nil {
		return 0, err
	}
	var peaks []int64
	for i := range max(c.runs, 1) {
		d, err := startDaemonOn(bin, r.dir, dir, c.logLevel, i, fmt.Sprintf("floor%d.stderr", i))
		if err != nil {
			return 0, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		_, cr, err := coldRun(ctx, d, r)
		cancel()
		if err != nil {
			d.kill()
			return 0, fmt.Errorf("floor: %w; daemon stderr:\n%s", err, tail(d.stderr))
		}
		peaks = append(peaks, cr.rss)
		if err := d.stop(); err != nil {
			return 0, err
		}
	}
	return medianInt(peaks), nil
}

// aboveFloor is a peak RSS row's cell: the daemon's peak above its own
// floor, against git's peak on the same tree.
func aboveFloor(rss, floor, git int64) string {
	above := max(rss-floor, 0)
	return fmt.Sprintf("%s − %s = %s / %s = **%.2f×**", fmtKiB(rss), fmtKiB(floor), fmtKiB(above), fmtKiB(git), float64(above)/float64(git))
}

// firstOnWire is the restart row's "last-known view" cell: process start
// → the first state of the changeset that lists every file, whatever its
// status, and that status.
func firstOnWire(d time.Duration, status string) string {
	if d == 0 {
		return "—"
	}
	return fmt.Sprintf("%s (%s)", fmtDur(d), status)
}

// profileArgs are the daemon's extra arguments for a CPU profile of its
// whole run, written to $BENCH_DAEMON_PROFILES/<logName>.cpu.prof when
// that variable names a directory (read with go tool pprof -top).
func profileArgs(logName string) []string {
	dir := os.Getenv("BENCH_DAEMON_PROFILES")
	if dir == "" {
		return nil
	}
	return []string{"--cpu-profile", filepath.Join(dir, logName+".cpu.prof")}
}
