package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/protocol"
)

// budgetRow is the daemon's peak RSS under one input that grows without
// bound, with what became of the input.
type budgetRow struct {
	input string
	peak  int64 // VmHWM, KiB
	note  string
}

// runBudgets measures the daemon's peak RSS under each input, each on a
// fresh daemon serving a small repository: resourceReads of a large file
// pipelined by connections that take no reply, many 1 MiB drafts, edit
// events naming many paths, a hundred large modified files in the live
// view and in four whole-patch reads at once, and a revert of a 3 GiB
// file.
func runBudgets(c config) error {
	load0 := loadavg()
	work, bin, done, err := setUp(c, "changesetd-bench-budgets-")
	if err != nil {
		return err
	}
	defer done()
	var rows []budgetRow
	all := []func(ctx context.Context, d *daemon, m *mirror, sessionURI, dir string) (budgetRow, error){budgetReads, budgetDrafts, budgetEdits, budgetLargeView, budgetWholePatch, budgetHugeRevert}
	for i, measure := range all {
		if c.budgetRows != "" && !slices.Contains(strings.Split(c.budgetRows, ","), strconv.Itoa(i+1)) {
			continue
		}
		dir := filepath.Join(work, fmt.Sprintf("budget%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		r, err := makeRepo(dir, 10, 1, 0)
		if err != nil {
			return err
		}
		d, err := startDaemonOn(bin, r.dir, dir, c.logLevel, 0, "budget.stderr")
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		row, err := func() (budgetRow, error) {
			m, _, err := coldRun(ctx, d, r)
			if err != nil {
				return budgetRow{}, err
			}
			var list protocol.ListSessionsResult
			if err := d.client.Call(ctx, protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &list); err != nil {
				return budgetRow{}, err
			}
			row, err := measure(ctx, d, m, list.Items[0].Resource, r.dir)
			if err != nil {
				return row, err
			}
			row.peak, err = peakRSS(d.cmd.Process.Pid)
			return row, err
		}()
		cancel()
		d.kill()
		if err != nil {
			return fmt.Errorf("budget %d: %w; daemon stderr:\n%s", i, err, tail(d.stderr))
		}
		fmt.Printf("%s: peak RSS %s (%s)\n", row.input, fmtKiB(row.peak), row.note)
		rows = append(rows, row)
	}
	fmt.Println()
	fmt.Println("| Input | daemon peak RSS (VmHWM) | what became of it | target |")
	fmt.Println("|---|---:|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | ≤ 512 MiB |\n", r.input, fmtKiB(r.peak), r.note)
	}
	fmt.Printf("\nMachine: %d CPUs, load average %s at start, %s at end.\n", runtime.NumCPU(), load0, loadavg())
	fmt.Printf("Command: `go run ./bench%s`\n", quoteArgs(os.Args[1:]))
	return nil
}

// budgetReads: 16 connections each pipeline 8 resourceReads of a 60 MB
// file and take none of the replies, for 12 s.
func budgetReads(ctx context.Context, d *daemon, _ *mirror, sessionURI, dir string) (budgetRow, error) {
	const conns, reads, size, hold = 16, 8, 60 << 20, 12 * time.Second
	big := filepath.Join(dir, "big.txt")
	// Ignored, so that only the reads load it.
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("big.txt\n"), 0o644); err != nil {
		return budgetRow{}, err
	}
	if err := os.WriteFile(big, bytes.Repeat([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"), size/64), 0o644); err != nil {
		return budgetRow{}, err
	}
	var subs []*rawSub
	defer func() {
		for _, s := range subs {
			s.Close()
		}
	}()
	for i := range conns {
		s, err := dialRaw(ctx, d.url)
		if err != nil {
			return budgetRow{}, err
		}
		subs = append(subs, s)
		if _, err := s.call(1, protocol.MethodInitialize, map[string]any{
			"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": fmt.Sprintf("bench-reader-%d", i),
		}); err != nil {
			return budgetRow{}, err
		}
		for k := range reads {
			req, _ := json.Marshal(protocol.NewRequest(int64(100+k), protocol.MethodResourceRead, map[string]any{"channel": protocol.RootURI, "uri": "file://" + big}))
			if err := s.ws.WriteMessage(websocket.TextMessage, req); err != nil {
				return budgetRow{}, err
			}
		}
	}
	time.Sleep(hold) // what the daemon holds for them meanwhile is the measure
	return budgetRow{
		input: fmt.Sprintf("%d connections × %d pipelined resourceReads of a %d MiB file, no reply read, %s", conns, reads, size>>20, hold),
		note:  "each connection's reads wait while two replies are unwritten",
	}, nil
}

// budgetDrafts: 1,200 drafts of 1 MiB of different files, one after the
// other.
func budgetDrafts(ctx context.Context, d *daemon, _ *mirror, sessionURI, dir string) (budgetRow, error) {
	const drafts = 1200
	text := string(bytes.Repeat([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"), (1<<20)/64))
	refused := 0
	for i := range drafts {
		var res map[string]any
		err := d.client.Call(ctx, protocol.MethodDraft, map[string]any{"channel": sessionURI, "resource": fmt.Sprintf("file://%s/draft%04d.txt", dir, i), "text": text}, &res)
		if protocol.CodeOf(err) == protocol.CodeInvalidParams {
			refused++
		} else if err != nil {
			return budgetRow{}, err
		}
	}
	return budgetRow{
		input: fmt.Sprintf("%d drafts of 1 MiB of different files", drafts),
		note:  fmt.Sprintf("%d refused past the session's 64 drafts / 16 MiB", refused),
	}, nil
}

// budgetEdits: 40,000 paths in edit events, in requests of 1,000.
func budgetEdits(ctx context.Context, d *daemon, _ *mirror, sessionURI, dir string) (budgetRow, error) {
	const paths, per = 40000, 1000
	var first, last time.Duration
	for r := 0; r < paths/per; r++ {
		evs := make([]json.RawMessage, per)
		for i := range evs {
			evs[i], _ = json.Marshal(map[string]any{"type": "edit", "path": fmt.Sprintf("gen/p%05d.txt", r*per+i), "mode": "replace"})
		}
		start := time.Now()
		var res map[string]any
		if err := d.client.Call(ctx, protocol.MethodEditEvents, map[string]any{"channel": sessionURI, "events": evs}, &res); err != nil {
			return budgetRow{}, err
		}
		took := time.Since(start)
		if r == 0 {
			first = took
		}
		last = took
	}
	var db int64
	if fi, err := os.Stat(filepath.Join(filepath.Dir(dir), "state0", "state.db")); err == nil {
		db = fi.Size()
	}
	return budgetRow{
		input: fmt.Sprintf("edit events naming %d paths, in requests of %d", paths, per),
		note:  fmt.Sprintf("first request %s, last %s; state.db %.1f MiB", fmtDur(first), fmtDur(last), float64(db)/(1<<20)),
	}, nil
}
