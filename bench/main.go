// Command bench measures changesetd against the git binary on a synthetic
// repository: cold subscribe to a ready uncommitted changeset, one save to
// its fileSet, a 200,000-line file diff and peak memory. It prints a
// markdown table for the README.
//
//	go run ./bench                     # 100,000 files, 1,000 modified
//	go run ./bench -files 5000 -dirs 50 -modified 50 -runs 1 -saves 5
//	go run ./bench -page               # the review page in Chromium (page.go)
//	go run ./bench -scale -runs 1      # 20k, 100k, 300k and 1M files, one table (scale.go)
//
// It is run by hand, not by go test. It needs git and Linux (/proc).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

type config struct {
	files, dirs, modified, runs, saves, lines int
	turns, dirty                              int
	timeout                                   time.Duration
	budgetRows                                string
	logLevel, daemon                          string
	keep                                      bool
	profiles                                  string // directory for each daemon's CPU profile, "" for none
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == childRSSFlag {
		childRSS(os.Args[2], os.Args[3:])
		return
	}
	var c config
	flag.IntVar(&c.files, "files", 100000, "tracked files in the synthetic repository")
	flag.IntVar(&c.dirs, "dirs", 1000, "directories they are spread over")
	flag.IntVar(&c.modified, "modified", 1000, "tracked files edited before measuring")
	flag.IntVar(&c.runs, "runs", 3, "runs per measurement (medians are reported)")
	flag.IntVar(&c.saves, "saves", 20, "saves timed in the save → fileSet test")
	flag.IntVar(&c.turns, "turns", 10, "turns timed in the turn-boundary test (0: skip it)")
	flag.IntVar(&c.dirty, "dirty", 10, "dirty files during the turn-boundary test")
	flag.IntVar(&c.lines, "lines", 200000, "lines of the large-file diff")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "limit for each wait on the daemon")
	flag.StringVar(&c.logLevel, "log-level", "info", "daemon --log-level")
	flag.StringVar(&c.daemon, "daemon", "", "use this changesetd binary instead of building ./cmd/changesetd")
	flag.BoolVar(&c.keep, "keep", false, "keep the temp dir (repository, daemon logs)")
	flag.StringVar(&c.profiles, "cpu-profiles", "", "write each daemon's CPU and heap profiles, named after its tree's size and its log (20000-restart0.cpu.prof), to this directory (go tool pprof)")
	flag.StringVar(&burstProfiles, "burst-profiles", "", "with -scale: write the bench's own CPU profile over each burst, its subscribers' reading, to this directory")
	page := flag.Bool("page", false, "measure the review page in headless Chromium instead (see page.go)")
	var pc pageConfig
	flag.IntVar(&pc.changed, "page-files", 1500, "with -page: changed files")
	flag.IntVar(&pc.presses, "page-presses", 50, "with -page: j presses timed")
	flag.IntVar(&pc.burst, "page-burst", 1000, "with -page: files saved at once in the burst")
	flag.IntVar(&pc.bursts, "page-bursts", 3, "with -page: bursts timed on each page, in turn")
	flag.IntVar(&pc.lines, "page-lines", 30000, "with -page: lines of the long diff")
	flag.IntVar(&pc.runs, "page-runs", 5, "with -page: navigations timed")
	flag.StringVar(&pc.chromium, "chromium", "", "with -page: the Chromium binary (default: chromium on PATH)")
	scale := flag.Bool("scale", false, "measure at several tree sizes instead, one table (see scale.go)")
	sizes := flag.String("scale-sizes", "20k,100k,300k,1M", "with -scale: the tree sizes ('' for none: the checkouts alone)")
	var sc scaleConfig
	flag.IntVar(&sc.burstFiles, "burst-files", 10000, "with -scale: files changed at once in the burst")
	flag.IntVar(&sc.burstSubs, "burst-subs", 100, "with -scale: subscribers during the burst (0: skip it)")
	flag.IntVar(&sc.burstMaxRow, "burst-max", 300000, "with -scale: the largest tree the burst runs on")
	flag.IntVar(&sc.checkouts, "checkouts", 100, "with -scale: round trips between two branches for the RSS measure (0: skip it)")
	flag.IntVar(&sc.checkoutFiles, "checkout-files", 10000, "with -scale: tracked files of the checkouts' tree")
	flag.IntVar(&sc.checkoutDiffer, "checkout-differ", 5000, "with -scale: files the two branches differ in")
	flag.IntVar(&sc.catchUpSaves, "catchup-saves", 100, "with -scale: saves timed in the second session with the first idle, and as many while a slow reader of the first is caught up, alternating in rounds of 20")
	flag.Int64Var(&sc.catchUpRate, "catchup-rate", 8<<20, "with -scale: bytes a second the catch-up row's slow reader takes in")
	flag.StringVar(&c.budgetRows, "budget-rows", "", "with -budgets: only these rows, numbered from 1, comma-separated")
	saveLogPath := flag.String("save-log", "", "append each timed save's start (Unix ms), duration (ms) and what it measured to this file, to lay beside the daemon's GODEBUG=gctrace=1 output")
	budgets := flag.Bool("budgets", false, "measure the daemon's peak RSS under inputs that grow without bound instead (see budgets.go)")
	flag.Parse()
	cpuProfiles = c.profiles
	if *saveLogPath != "" {
		f, err := os.OpenFile(*saveLogPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		defer f.Close()
		saveLog = f
	}
	if *budgets {
		if err := runBudgets(c); err != nil {
			fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
			os.Exit(1)
		}
		return
	}
	if *scale {
		var err error
		if *sizes == "" {
			err = runScale(c, sc) // -scale-sizes '': the checkouts alone
		} else if sc.sizes, err = parseSizes(*sizes); err == nil {
			err = runScale(c, sc)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
			os.Exit(1)
		}
		return
	}
	if *page {
		if err := runPage(c, pc); err != nil {
			fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
			os.Exit(1)
		}
		return
	}
	if c.runs < 1 || c.saves < 1 || c.lines < 100 {
		fmt.Fprintln(os.Stderr, "bench: -runs and -saves must be >= 1, -lines >= 100")
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
		os.Exit(1)
	}
}

// setUp makes the bench's work dir, which done removes unless -keep,
// and the daemon binary it runs: -daemon, or ./cmd/changesetd built.
func setUp(c config, prefix string) (work, bin string, done func(), err error) {
	if work, err = os.MkdirTemp("", prefix); err != nil {
		return "", "", nil, err
	}
	done = func() { os.RemoveAll(work) }
	if c.keep {
		fmt.Println("work dir (kept):", work)
		done = func() {}
	}
	if bin = c.daemon; bin == "" {
		if bin, err = buildDaemon(work); err != nil {
			done()
			return "", "", nil, err
		}
	}
	return work, bin, done, nil
}

func run(c config) error {
	load0 := loadavg()
	work, bin, done, err := setUp(c, "changesetd-bench-")
	if err != nil {
		return err
	}
	defer done()
	r, err := makeRepo(work, c.files, c.dirs, c.modified)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}

	fmt.Println("timing git …")
	g, err := measureGit(r, c.runs)
	if err != nil {
		return err
	}

	var cold []coldResult
	var last *daemon
	var m *mirror
	var logs []string
	defer func() {
		if last != nil {
			last.kill()
		}
	}()
	for i := range c.runs {
		fmt.Printf("cold run %d/%d …\n", i+1, c.runs)
		d, err := startDaemon(bin, r.dir, work, c.logLevel, i)
		if err != nil {
			return err
		}
		last = d
		logs = append(logs, d.stderr)
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		mm, res, err := coldRun(ctx, d, r)
		cancel()
		if err != nil {
			return fmt.Errorf("cold run %d: %w; daemon stderr in %s:\n%s", i+1, err, d.stderr, tail(d.stderr))
		}
		if len(res.files) != len(r.expected()) {
			return fmt.Errorf("cold run %d: changeset has %d files, want %d", i+1, len(res.files), len(r.expected()))
		}
		cold = append(cold, res)
		m = mm
		if i < c.runs-1 {
			if err := d.stop(); err != nil {
				return err
			}
			last = nil
		}
	}
	agree, mismatches := checkStats(r, cold[len(cold)-1].files, g.numstat)

	// Restart on the unchanged tree, on the state the last cold run left:
	// what a container pays on every start after the first.
	fmt.Println("restart on the unchanged tree …")
	if err := last.stop(); err != nil {
		return err
	}
	last = nil
	var restarts []time.Duration
	for i := range c.runs {
		d, err := startDaemonOn(bin, r.dir, work, c.logLevel, c.runs-1, fmt.Sprintf("restart%d.stderr", i))
		if err != nil {
			return err
		}
		last = d
		logs = append(logs, d.stderr)
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		mm, res, err := coldRun(ctx, d, r)
		cancel()
		if err != nil {
			return fmt.Errorf("restart %d: %w; daemon stderr in %s:\n%s", i+1, err, d.stderr, tail(d.stderr))
		}
		restarts = append(restarts, res.startToReady)
		m = mm
		if i < c.runs-1 {
			if err := d.stop(); err != nil {
				return err
			}
			last = nil
		}
	}

	fmt.Println("later subscribers from Node …")
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	node, skipped, err := measureNode(ctx, last, m.uri, len(r.expected()), 5)
	cancel()
	if err != nil {
		return err
	}

	fmt.Printf("saves (%d) …\n", c.saves)
	ctx, cancel = context.WithTimeout(context.Background(), c.timeout)
	saves, err := measureSaves(ctx, m, r, c.saves)
	cancel()
	if err != nil {
		return fmt.Errorf("saves: %w; daemon stderr in %s:\n%s", err, last.stderr, tail(last.stderr))
	}
	rssAfterSaves, err := peakRSS(last.cmd.Process.Pid)
	if err != nil {
		return err
	}
	if err := last.stop(); err != nil {
		return err
	}
	last = nil

	fmt.Printf("%d-line diff …\n", c.lines)
	big, err := measureBigDiff(work, c.lines, c.runs)
	if err != nil {
		return err
	}

	var turns *turnResult
	if c.turns > 0 {
		fmt.Printf("turn boundaries (%d turns, %d dirty files) …\n", c.turns, c.dirty)
		turns, err = measureTurns(bin, r, work, c.logLevel, c.dirty, c.turns, c.runs)
		if err != nil {
			return fmt.Errorf("turns: %w", err)
		}
	}

	report(c, r, g, cold, restarts, node, skipped, saves, rssAfterSaves, big, agree, mismatches, load0)
	if turns != nil {
		sm := median(turns.status)
		fmt.Printf("\n| Turn boundary (%d dirty files, %d boundaries) | changesetd | git status --porcelain | ours/git |\n|---|---:|---:|---:|\n", turns.dirty, len(turns.boundaries))
		fmt.Printf("| median | %s | %s | %.2f× |\n", fmtDur(median(turns.boundaries)), fmtDur(sm), ratio(median(turns.boundaries), sm))
		fmt.Printf("| p90 | %s | %s | %.2f× |\n", fmtDur(percentile(turns.boundaries, 90)), fmtDur(sm), ratio(percentile(turns.boundaries, 90), sm))
		fmt.Printf("Raw: boundaries %s; git status %s.\n", fmtDurs(turns.boundaries), fmtDurs(turns.status))
	}
	return reportLogs(logs)
}

func buildDaemon(work string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(work, "changesetd")
	start := time.Now()
	build := exec.Command("go", "build", "-o", bin, "./cmd/changesetd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/changesetd: %v\n%s", err, out)
	}
	fmt.Printf("built daemon in %s\n", fmtDur(time.Since(start)))
	return bin, nil
}

// moduleRoot is the changesetd module's directory, which bench must run in.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run bench inside the changesetd module (go env GOMOD: %q, %v)", mod, err)
	}
	return filepath.Dir(mod), nil
}

// ---- output ----

func report(c config, r *repo, g *gitTimes, cold []coldResult, restarts []time.Duration, node *nodeResult, nodeSkipped string, saves []time.Duration, rssAfterSaves int64, big *bigResult, agree int, mismatches []string, load0 string) {
	pick := func(f func(coldResult) time.Duration) []time.Duration {
		var out []time.Duration
		for _, x := range cold {
			out = append(out, f(x))
		}
		return out
	}
	var rss, rssFile []int64
	for _, x := range cold {
		rss = append(rss, x.rss)
		rssFile = append(rssFile, x.rssFile)
	}
	sub := median(pick(func(x coldResult) time.Duration { return x.subscribeToReady }))
	proc := median(pick(func(x coldResult) time.Duration { return x.startToReady }))
	st, dpo := median(g.status), median(g.diffPlusOthers)
	sm, s90 := median(saves), percentile(saves, 90)
	bo, bg := median(big.ours), median(big.git)
	ours, gits := medianInt(rss), medianInt(g.diffRSS)

	fmt.Println()
	fmt.Printf("Repository: %d tracked files (%.0f MB) in %d dirs, %d modified (4 lines each), %d untracked. Medians of %d runs; saves: %d.\n\n",
		r.tracked, float64(r.bytes)/1e6, c.dirs, len(r.modified), len(r.untracked), c.runs, len(saves))
	fmt.Println("| Measurement | changesetd | git | ours/git |")
	fmt.Println("|---|---:|---:|---:|")
	row := func(name, ours, git string, ratio float64) {
		rs := "—"
		if ratio > 0 {
			rs = fmt.Sprintf("%.2f×", ratio)
		}
		fmt.Printf("| %s | %s | %s | %s |\n", name, ours, git, rs)
	}
	row("Cold: subscribe → ready (its frame in), vs `git diff HEAD --numstat` + `git ls-files --others --exclude-standard`", fmtDur(sub), fmtDur(dpo), ratio(sub, dpo))
	row("Cold: subscribe → ready (its frame in), vs `git status --porcelain`", fmtDur(sub), fmtDur(st), ratio(sub, st))
	row("Cold: process start → session catalogue", fmtDur(median(pick(func(x coldResult) time.Duration { return x.startToCatalogue }))), "—", 0)
	row("Cold: process start → uncommitted changeset ready (its frame in), vs the same git pair", fmtDur(proc), fmtDur(dpo), ratio(proc, dpo))
	second := median(pick(func(x coldResult) time.Duration { return x.second }))
	row("Warm: a second subscriber's subscribe → ready, vs the same git pair", fmtDur(second), fmtDur(dpo), ratio(second, dpo))
	later := median(pick(func(x coldResult) time.Duration { return x.later }))
	row("Warm: a third to fifth subscriber's subscribe → ready (median), vs the same git pair", fmtDur(later), fmtDur(dpo), ratio(later, dpo))
	if node != nil {
		var total []time.Duration
		for i := range node.receive {
			total = append(total, node.receive[i]+node.parse[i])
		}
		t := median(total)
		row(fmt.Sprintf("Warm: a later subscriber from Node (`ws`, `JSON.parse` of %.1f MB): subscribe → parsed (median of %d), vs the same git pair", float64(node.bytes)/1e6, len(total)), fmtDur(t), fmtDur(dpo), ratio(t, dpo))
		row("… of which receiving the reply / parsing it", fmt.Sprintf("%s / %s", fmtDur(median(node.receive)), fmtDur(median(node.parse))), "—", 0)
	} else {
		row("Warm: a later subscriber from Node", "skipped: "+nodeSkipped, "—", 0)
	}
	row("Restart on the unchanged tree: process start → ready, vs the same git pair", fmtDur(median(restarts)), fmtDur(dpo), ratio(median(restarts), dpo))
	row("One save → `fileSet` delivered, median, vs `git status --porcelain`", fmtDur(sm), fmtDur(st), ratio(sm, st))
	row("One save → `fileSet` delivered, p90", fmtDur(s90), fmtDur(st), ratio(s90, st))
	row(fmt.Sprintf("%d-line file, 1%% of lines changed: `changeset.Compare` vs `git diff --no-index --numstat`", c.lines), fmtDur(bo), fmtDur(bg), ratio(bo, bg))
	row("… its allocations per Compare", fmt.Sprintf("%d allocs, %.1f MB", big.allocs, float64(big.allocBytes)/1e6), "—", 0)
	row("… its numstat", fmt.Sprintf("+%d −%d", big.oursStat[0], big.oursStat[1]), fmt.Sprintf("+%d −%d", big.gitStat[0], big.gitStat[1]), 0)
	row("Peak RSS after cold ready (VmHWM) vs `git diff HEAD --numstat` (maxrss)", fmtKiB(ours), fmtKiB(gits), float64(ours)/float64(gits))
	row("… of which mapped files (pack files, the binary) at ready (RssFile)", fmtKiB(medianInt(rssFile)), "—", 0)
	row("Peak RSS after the saves", fmtKiB(rssAfterSaves), "—", 0)
	fmt.Println()
	fmt.Printf("Per-file counts equal to `git diff --numstat`: %d of %d modified files.", agree, len(r.modified))
	if big.fallback || !big.precise {
		fmt.Printf(" Large diff: fallback=%v precise=%v.", big.fallback, big.precise)
	}
	fmt.Println()
	for _, s := range mismatches {
		fmt.Println("  mismatch:", s)
	}
	fmt.Println()
	fmt.Printf("Machine: %d CPUs (runtime.NumCPU), %s, %s, %s, load average %s at start, %s at end.\n",
		runtime.NumCPU(), uname(), strings.TrimSpace(gitVersion()), runtime.Version(), load0, loadavg())
	fmt.Printf("Command: `go run ./bench%s`\n", quoteArgs(os.Args[1:]))
	fmt.Printf("Raw: cold subscribe→ready %s; git status %s; saves %s.\n", fmtDurs(pick(func(x coldResult) time.Duration { return x.subscribeToReady })), fmtDurs(g.status), fmtDurs(saves))
}

// reportLogs prints the daemon's warnings and errors; an ERROR fails the run.
func reportLogs(logs []string) error {
	var errs int
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var shown int
		for _, l := range strings.Split(string(b), "\n") {
			isErr := strings.Contains(l, "level=ERROR") || strings.Contains(l, `"level":"ERROR"`) || strings.Contains(l, "panic")
			if !isErr && !strings.Contains(l, "level=WARN") && !strings.Contains(l, `"level":"WARN"`) {
				continue
			}
			if isErr {
				errs++
			}
			if shown++; shown <= 10 {
				fmt.Printf("daemon %s: %s\n", filepath.Base(p), l)
			}
		}
	}
	if errs > 0 {
		return fmt.Errorf("the daemon logged %d errors", errs)
	}
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(d))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile is the nearest-rank percentile.
func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Sorted(slices.Values(d))
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

func medianInt(v []int64) int64 {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func fmtDurs(d []time.Duration) string {
	var s []string
	for _, x := range d {
		s = append(s, fmt.Sprintf("%.1f", float64(x)/1e6))
	}
	return "[" + strings.Join(s, " ") + "] ms"
}

func fmtKiB(k int64) string { return fmt.Sprintf("%.1f MiB", float64(k)/1024) }

func quoteArgs(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteByte(' ')
		if a == "" || strings.ContainsAny(a, " \t'\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		b.WriteString(a)
	}
	return b.String()
}

func uname() string {
	out, err := exec.Command("uname", "-srm").Output()
	if err != nil {
		return runtime.GOOS + "/" + runtime.GOARCH
	}
	return strings.TrimSpace(string(out))
}

func gitVersion() string {
	out, _ := exec.Command("git", "--version").Output()
	return string(out)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
