package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// checkoutResult is the daemon's memory over a series of checkouts.
type checkoutResult struct {
	files, differ, rounds int
	first, last           int64 // VmRSS (KiB), idle, after the first round trip and the last
}

// idleWait is how long the daemon is left alone before its RSS is read:
// long enough for its last refresh's garbage to be collected and the
// runtime to return idle memory.
const idleWait = 5 * time.Second

// measureCheckouts makes a tree of files with a branch that changes
// differ of them, and checks the branch's files out into the working tree
// and back rounds times, one subscriber watching the uncommitted
// changeset converge each time (differ files, then none). It reads the
// daemon's RSS, idle, after the first round trip and after the last: a
// daemon whose memory is bounded in bytes holds the same after both.
func measureCheckouts(c config, bin, work string, files, differ, rounds int) (*checkoutResult, error) {
	dir := filepath.Join(work, "checkouts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r, err := makeRepo(dir, files, max(files/100, 1), 0)
	if err != nil {
		return nil, err
	}
	// The untracked files makeRepo adds stay; the branch changes tracked
	// files only, so checking main's out again undoes it.
	if _, err := git(r.dir, "checkout", "-q", "-b", "other"); err != nil {
		return nil, err
	}
	for _, p := range burstPaths(r, differ) {
		f, err := os.OpenFile(filepath.Join(r.dir, filepath.FromSlash(p)), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		_, err = f.WriteString("// other\n")
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if _, err := git(r.dir, "commit", "-q", "-a", "-m", "other"); err != nil {
		return nil, err
	}
	if _, err := git(r.dir, "checkout", "-q", "main"); err != nil {
		return nil, err
	}
	d, err := startDaemonOn(bin, r.dir, dir, c.logLevel, 0, "checkouts.stderr")
	if err != nil {
		return nil, err
	}
	defer d.kill()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	mm, _, err := coldRun(ctx, d, r)
	if err != nil {
		return nil, fmt.Errorf("first view: %w; daemon stderr:\n%s", err, tail(d.stderr))
	}
	mirrors, closeAll, err := burstSubscribers(ctx, d, mm.uri, 1)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	m := mirrors[0]
	m.mu.Lock()
	base := len(m.files)
	m.mu.Unlock()
	step := func(branch string, want int) error {
		if _, err := git(r.dir, "checkout", "-q", branch, "--", "."); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout) // each step, not the series
		defer cancel()
		return m.c.Wait(ctx, fmt.Sprintf("%d files after checking out %s's", want, branch), func() bool {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.status == protocol.StatusReady && len(m.files) == want
		})
	}
	res := &checkoutResult{files: files, differ: differ, rounds: rounds}
	for i := range rounds {
		if err := step("other", base+differ); err != nil {
			return nil, err
		}
		if err := step("main", base); err != nil {
			return nil, err
		}
		if i == 0 || i == rounds-1 {
			time.Sleep(idleWait) // idle, as the measure says; nothing is timed
			rss, err := procStatus(d.cmd.Process.Pid, "VmRSS")
			if err != nil {
				return nil, err
			}
			if i == 0 {
				res.first = rss
				fmt.Printf("checkouts: after the first round trip, daemon RSS %s\n", fmtKiB(rss))
			}
			res.last = rss
		}
		if (i+1)%10 == 0 {
			rss, _ := procStatus(d.cmd.Process.Pid, "VmRSS")
			fmt.Printf("checkouts: %d of %d round trips, daemon RSS %s\n", i+1, rounds, fmtKiB(rss))
		}
	}
	return res, d.stop()
}
