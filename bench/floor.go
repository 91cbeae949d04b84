package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// whole run and a heap profile of what it held when stopped, written to
// $BENCH_DAEMON_PROFILES/<work>-<logName>.{cpu,heap}.prof when that
// variable (or -cpu-profiles) names a directory (read with go tool pprof
// -top). work is the daemon's working directory, named after the tree's
// size in a -scale run: the sizes' daemons share their logs' names.
func profileArgs(work, logName string) []string {
	dir := cpuProfiles
	if dir == "" {
		dir = os.Getenv("BENCH_DAEMON_PROFILES")
	}
	if dir == "" {
		return nil
	}
	name := filepath.Join(dir, filepath.Base(work)+"-"+strings.TrimSuffix(logName, ".stderr"))
	return []string{"--cpu-profile", name + ".cpu.prof", "--heap-profile", name + ".heap.prof"}
}

// gitPairCPU is the CPU time (user + system) of the git pair the first
// view is measured against, the least of runs: on a shared machine the
// processor time a result costs holds where wall times swing with the
// load.
func gitPairCPU(dir string, runs int) (time.Duration, error) {
	var best time.Duration
	for i := range max(runs, 1) {
		var sum time.Duration
		for _, args := range [][]string{{"diff", "HEAD", "--numstat"}, {"ls-files", "--others", "--exclude-standard"}} {
			cmd := gitCmd(dir, args...)
			if err := cmd.Run(); err != nil {
				return 0, fmt.Errorf("git %v: %w", args, err)
			}
			sum += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		if i == 0 || sum < best {
			best = sum
		}
	}
	return best, nil
}

// processCPU is the CPU time (user + system) process pid has used so
// far, from /proc/<pid>/stat (in clock ticks of 10 ms).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields resume after
	// its closing parenthesis, with utime and stime the 14th and 15th.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// cpuVs is a CPU-time row's cell.
func cpuVs(ours, git time.Duration) string {
	if ours == 0 || git == 0 {
		return "—"
	}
	return fmt.Sprintf("%s / %s = **%.2f×**", fmtDur(ours), fmtDur(git), ratio(ours, git))
}
