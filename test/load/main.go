// Command load drives a real changesetd with many WebSocket subscribers
// and checks that every one of them receives every action of the
// changeset it subscribed to, once and in order, across disconnects.
//
//	go run ./test/load -subscribers 1000 -rate 100 -duration 60s
//
// It builds the daemon (or uses -daemon), creates a git repository with a
// few hundred files in a temp dir, starts "changesetd serve" on it and
// connects -subscribers clients to the session's uncommitted changeset. A
// driver client dispatches changeset/filesReviewChanged at -rate per
// second, a writer modifies files on disk at -writes per second, and
// -churn clients per second disconnect and come back with reconnect.
//
// The driver also subscribes; what it receives is the reference stream. At
// the end every client must hold every reference envelope after its first
// snapshot, except ranges a reconnect snapshot stood in for (counted
// separately). The program exits 1 when an action was lost, duplicated or
// delivered out of order, 2 when the run could not be set up, and 3 when it
// could not verify everything: subscribers still disconnected at the end,
// or review dispatches never echoed to the driver.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type config struct {
	subscribers  int
	rate         float64
	writes       float64
	churn        float64
	churnPause   time.Duration
	duration     time.Duration
	daemon       string
	daemonArgs   string
	sendQueue    int
	replayBuffer int
	files        int
	dirty        int
	logLevel     string
	logFile      string
	clientPing   time.Duration
	settle       time.Duration
	connectPar   int
	keep         bool
}

func parseFlags() config {
	var c config
	flag.IntVar(&c.subscribers, "subscribers", 1000, "subscriber clients")
	flag.Float64Var(&c.rate, "rate", 100, "review actions dispatched per second by the driver")
	flag.Float64Var(&c.writes, "writes", 5, "file modifications on disk per second")
	flag.Float64Var(&c.churn, "churn", 10, "clients per second that disconnect and reconnect (0: none)")
	flag.DurationVar(&c.churnPause, "churn-pause", 500*time.Millisecond, "mean time a churned client stays away")
	flag.DurationVar(&c.duration, "duration", 60*time.Second, "length of the measured run")
	flag.StringVar(&c.daemon, "daemon", "", "use this changesetd binary instead of building ./cmd/changesetd")
	flag.StringVar(&c.daemonArgs, "daemon-args", "", "extra arguments for changesetd serve, space separated")
	flag.IntVar(&c.sendQueue, "send-queue", 16384, "the daemon's --send-queue")
	flag.IntVar(&c.replayBuffer, "replay-buffer", 0, "the daemon's --replay-buffer (0: its default)")
	flag.IntVar(&c.files, "files", 300, "files in the generated repository")
	flag.IntVar(&c.dirty, "dirty", 60, "files modified before the daemon starts (the changeset)")
	flag.StringVar(&c.logLevel, "log-level", "info", "the daemon's --log-level")
	flag.StringVar(&c.logFile, "log", "", "write the daemon's stderr here (default $TMPDIR/cs-loadlogs/daemon-<time>.log)")
	flag.DurationVar(&c.settle, "settle", time.Minute, "after the run, how long to wait for the stream to go quiet, and then for every subscriber to catch up")
	flag.DurationVar(&c.clientPing, "client-ping", 0, "subscribers send a JSON-RPC ping this often (0: never; they only listen)")
	flag.IntVar(&c.connectPar, "connect-parallel", 32, "subscribers connecting at once during setup")
	flag.BoolVar(&c.keep, "keep", false, "keep the temp dir (repository, state, binary)")
	flag.DurationVar(&callTimeout, "call-timeout", callTimeout, "how long a client waits for a response (initialize, subscribe, reconnect)")
	flag.Parse()
	if c.subscribers < 1 || c.rate <= 0 || c.duration <= 0 || c.files < 1 || c.dirty < 1 || c.dirty > c.files {
		fmt.Fprintln(os.Stderr, "load: need subscribers >= 1, rate > 0, duration > 0, 1 <= dirty <= files")
		os.Exit(2)
	}
	return c
}

// loadRun is the state shared by every goroutine of one run.
type loadRun struct {
	cfg      config
	url      string
	uri      string
	driverID string
	t0       time.Time      // the clock for latencies; never changes
	sent     []atomic.Int64 // by clientSeq: dispatch time since t0, ns

	live, replayed                           atomic.Int64
	connected                                atomic.Int64
	reconnReplay, reconnSnapshot             atomic.Int64
	reconnFailed, serverCloses, churnPlanned atomic.Int64
	dispatched                               atomic.Int64 // review actions sent by the driver
	stopping                                 atomic.Bool

	echoed atomic.Int64 // the driver's own dispatches echoed back to it

	evMu   sync.Mutex
	events map[string]int64 // by kind
}

// maxPrintedEvents is how many events of one kind are printed; the rest
// are only counted.
const maxPrintedEvents = 5

// event prints a notable occurrence with the wall-clock time (to match the
// daemon's log) and counts it under kind.
func (r *loadRun) event(kind, format string, args ...any) {
	r.evMu.Lock()
	defer r.evMu.Unlock()
	r.events[kind]++
	switch n := r.events[kind]; {
	case n <= maxPrintedEvents:
		fmt.Printf("  ! %s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	case n == maxPrintedEvents+1:
		fmt.Printf("  ! %s further %q events are counted, not printed\n", time.Now().Format("15:04:05.000"), kind)
	}
}

func (r *loadRun) unexpectedClose(client string, err error) {
	r.serverCloses.Add(1)
	r.event("closed by the daemon: "+errClass(err), "%s: connection closed by the daemon: %s", client, describeClose(err))
}

func (r *loadRun) markSent(seq int64) {
	if seq < int64(len(r.sent)) {
		r.sent[seq].Store(int64(time.Since(r.t0)))
	}
}

func (r *loadRun) sentAt(seq int64) int64 {
	if seq <= 0 || seq >= int64(len(r.sent)) {
		return 0
	}
	return r.sent[seq].Load()
}

func main() { os.Exit(run()) }

func run() int {
	cfg := parseFlags()
	raiseFDLimit(uint64(cfg.subscribers)*2 + 512)

	work, err := os.MkdirTemp("", "changesetd-load-")
	if err != nil {
		return fail(err)
	}
	if real, err := filepath.EvalSymlinks(work); err == nil {
		work = real
	}
	if cfg.keep {
		fmt.Println("work dir:", work)
	} else {
		defer os.RemoveAll(work)
	}

	bin := cfg.daemon
	if bin == "" {
		if bin, err = buildDaemon(work); err != nil {
			return fail(err)
		}
	}
	repo := filepath.Join(work, "repo")
	dirty, err := makeRepo(repo, cfg.files, cfg.dirty)
	if err != nil {
		return fail(err)
	}
	r := &loadRun{cfg: cfg, driverID: "load-driver", t0: time.Now(), events: map[string]int64{}}
	d, err := startDaemon(r, bin, work, repo, cfg)
	if err != nil {
		return fail(err)
	}
	defer d.stop()
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		d.stop()
		fmt.Println("interrupted; daemon log:", d.logPath)
		os.Exit(130)
	}()
	fmt.Printf("daemon pid %d at %s, log %s\n", d.pid, d.addr, d.logPath)

	r.url = d.url
	r.sent = make([]atomic.Int64, int(cfg.rate*cfg.duration.Seconds()*1.5)+1024)
	drv, err := newDriver(r)
	if err != nil {
		return fail(fmt.Errorf("driver: %w", err))
	}
	if err := drv.waitReady(2 * time.Minute); err != nil {
		return fail(err)
	}
	fmt.Printf("changeset %s ready with %d files\n", r.uri, len(drv.files))

	subs, wg, err := connectAll(r)
	if err != nil {
		fmt.Println("setup failed:", err)
		r.stopping.Store(true)
		closeAll(subs, wg)
		d.stop()
		d.log.print()
		return 2
	}

	// The driver pings now and then so that it stays connected while it is
	// idle (after the run); subscribers only with -client-ping.
	quit := make(chan struct{})
	defer close(quit)
	go pingLoop(20*time.Second, func() []*wsConn { return []*wsConn{drv.conn} }, quit)
	if cfg.clientPing > 0 {
		go pingLoop(cfg.clientPing, func() []*wsConn { return activeConns(subs) }, quit)
	}

	// The measured run.
	stop := make(chan struct{})
	var writes atomic.Int64
	var bg sync.WaitGroup
	mon := newMonitor(d, r)
	fmt.Printf("running %v: %d subscribers, %.0f reviews/s, %.1f writes/s, churn %.1f/s (load avg %s)\n",
		cfg.duration, cfg.subscribers, cfg.rate, cfg.writes, cfg.churn, loadAvg())
	for _, f := range []func(){
		func() { drv.dispatchLoop(stop) },
		func() { writeLoop(r, repo, dirty, stop, &writes) },
		func() { churnLoop(r, subs, stop) },
	} {
		bg.Add(1)
		go func() { defer bg.Done(); f() }()
	}
	statsDone := make(chan struct{})
	runStart := time.Now()
	go func() { mon.loop(stop); close(statsDone) }()
	time.Sleep(cfg.duration)
	close(stop)
	bg.Wait()
	<-statsDone
	elapsed := time.Since(runStart)
	liveInRun := r.live.Load()

	// Let the last actions arrive everywhere.
	refLast := settle(r, drv, subs)
	for _, s := range subs {
		s.activeAtEnd = s.active.Load()
	}
	mon.sample(true)
	r.stopping.Store(true)
	closeAll(subs, wg)
	drv.conn.Shutdown(time.Second)
	defer drv.conn.Close()

	res := analyze(r, drv, subs, refLast)
	res.elapsed, res.liveInRun = elapsed, liveInRun
	res.writes = writes.Load()
	res.mon = mon
	stopStart := time.Now()
	stopErr := d.stop()
	res.stopTook, res.stopErr = time.Since(stopStart), stopErr
	res.log = d.log
	switch printReport(cfg, res) {
	case "FAIL":
		return 1
	case "INCOMPLETE":
		return 3
	}
	return 0
}

func activeConns(subs []*subscriber) []*wsConn {
	var out []*wsConn
	for _, s := range subs {
		s.mu.Lock()
		if s.conn != nil {
			out = append(out, s.conn)
		}
		s.mu.Unlock()
	}
	return out
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "load:", err)
	return 2
}

// connectAll connects every subscriber, a few at a time, and starts its
// goroutine.
func connectAll(r *loadRun) ([]*subscriber, *sync.WaitGroup, error) {
	subs := make([]*subscriber, r.cfg.subscribers)
	wg := &sync.WaitGroup{}
	sem := make(chan struct{}, r.cfg.connectPar)
	var mu sync.Mutex
	var errs []string
	failed := 0
	var setup sync.WaitGroup
	start := time.Now()
	for i := range subs {
		s := &subscriber{r: r, clientID: fmt.Sprintf("load-%04d", i)}
		subs[i] = s
		setup.Add(1)
		sem <- struct{}{}
		go func() {
			defer setup.Done()
			defer func() { <-sem }()
			if err := s.connect(true); err != nil {
				mu.Lock()
				failed++
				if len(errs) < 5 {
					errs = append(errs, fmt.Sprintf("%s: %v", s.clientID, err))
				}
				mu.Unlock()
				return
			}
			wg.Add(1)
			go s.run(wg.Done)
		}()
	}
	setup.Wait()
	if failed > 0 {
		return subs, wg, fmt.Errorf("%d of %d subscribers could not connect; first errors:\n  %s",
			failed, len(subs), strings.Join(errs, "\n  "))
	}
	fmt.Printf("%d subscribers connected and subscribed in %v\n", len(subs), time.Since(start).Round(time.Millisecond))
	return subs, wg, nil
}

// closeAll ends every subscriber; r.stopping must be set.
func closeAll(subs []*subscriber, wg *sync.WaitGroup) {
	for _, s := range subs {
		if s != nil {
			s.closeNow()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		fmt.Println("  ! some subscribers did not finish within 30s of closing")
	}
}

// churnLoop disconnects random connected clients at the configured rate.
func churnLoop(r *loadRun, subs []*subscriber, stop <-chan struct{}) {
	if r.cfg.churn <= 0 {
		return
	}
	paced(r.cfg.churn, stop, func(int64) bool {
		for range 5 { // a few tries to find a connected client
			if subs[rand.IntN(len(subs))].disconnect() {
				r.churnPlanned.Add(1)
				break
			}
		}
		return true
	})
}

// settle waits until the reference stream is quiet, then until every
// subscriber is connected and has caught up with it. It returns the last
// reference serverSeq.
func settle(r *loadRun, drv *driver, subs []*subscriber) int64 {
	last, quietSince := drv.lastSeq(), time.Now()
	for deadline := time.Now().Add(r.cfg.settle); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if s := drv.lastSeq(); s != last {
			last, quietSince = s, time.Now()
		} else if time.Since(quietSince) >= 2*time.Second {
			break
		}
	}
	behind := 0
	for deadline := time.Now().Add(r.cfg.settle); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		behind = 0
		for _, s := range subs {
			if !s.active.Load() || s.seen.Load() < last {
				behind++
			}
		}
		if behind == 0 {
			break
		}
	}
	if behind > 0 {
		fmt.Printf("  ! %d subscribers not connected or not caught up with serverSeq %d %v after the run went quiet\n", behind, last, r.cfg.settle)
	}
	return last
}

// buildDaemon builds ./cmd/changesetd of the enclosing module into dir.
func buildDaemon(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not inside the changesetd module (%v)", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "changesetd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/changesetd")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build daemon: %w", err)
	}
	fmt.Printf("built %s in %v\n", bin, time.Since(start).Round(time.Millisecond))
	return bin, nil
}

// makeRepo creates a repository with n committed files and modifies dirty
// of them, spread over the tree. It returns the modified paths.
func makeRepo(dir string, n, dirty int) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := git(dir, "init", "-q", "-b", "main"); err != nil {
		return nil, err
	}
	var names []string
	for i := range n {
		name := fmt.Sprintf("pkg%02d/file%03d.go", i%20, i)
		var b strings.Builder
		fmt.Fprintf(&b, "package pkg%02d\n\n", i%20)
		for l := range 40 {
			fmt.Fprintf(&b, "// line %d of file %d: the quick brown fox jumps over the lazy dog\n", l, i)
		}
		if err := writeFile(dir, name, b.String()); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	if err := git(dir, "add", "-A"); err != nil {
		return nil, err
	}
	if err := git(dir, "commit", "-q", "-m", "initial"); err != nil {
		return nil, err
	}
	var modified []string
	step := n / dirty
	for i := 0; i < n && len(modified) < dirty; i += step {
		name := names[i]
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		text := strings.Replace(string(data), "// line 3 ", "// LINE THREE, edited ", 1) + "// appended before the daemon started\n"
		if err := writeFile(dir, name, text); err != nil {
			return nil, err
		}
		modified = append(modified, name)
	}
	return modified, nil
}

func git(dir string, args ...string) error {
	cmd := exec.Command("git", append([]string{"-c", "user.name=Load", "-c", "user.email=load@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func writeFile(dir, name, content string) error {
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

// daemonProc is the running changesetd.
type daemonProc struct {
	cmd     *exec.Cmd
	pid     int
	url     string // ws://host:port/ahp?token=...
	addr    string
	logPath string
	log     *logWatcher
	exited  chan error

	stopOnce sync.Once
	stopErr  error
}

func startDaemon(r *loadRun, bin, work, repo string, cfg config) (*daemonProc, error) {
	logPath := cfg.logFile
	if logPath == "" {
		logPath = filepath.Join(os.TempDir(), "cs-loadlogs", time.Now().Format("daemon-20060102-150405.log"))
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--listen", "127.0.0.1:0", "--state-dir", filepath.Join(work, "state"),
		"--send-queue", fmt.Sprint(cfg.sendQueue), "--log-level", cfg.logLevel}
	if cfg.replayBuffer > 0 {
		args = append(args, "--replay-buffer", fmt.Sprint(cfg.replayBuffer))
	}
	args = append(args, strings.Fields(cfg.daemonArgs)...)
	args = append(args, repo)
	cmd := exec.Command(bin, args...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	fmt.Println("started", bin, strings.Join(args, " "))
	d := &daemonProc{cmd: cmd, pid: cmd.Process.Pid, logPath: logPath, log: newLogWatcher(r, logPath), exited: make(chan error, 1)}
	go d.log.copy(errPipe, logf)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	go func() {
		<-d.log.done // Wait closes the pipe: read it to the end first
		d.exited <- cmd.Wait()
		logf.Close()
	}()
	timeout := time.After(time.Minute)
	for d.url == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				return nil, fmt.Errorf("daemon exited before it was ready; see %s", d.logPath)
			}
			if u, ok := strings.CutPrefix(l, "connect: "); ok {
				d.url = u
			}
		case <-timeout:
			d.stop()
			return nil, fmt.Errorf("daemon not ready within a minute; see %s", d.logPath)
		}
	}
	rest := strings.TrimPrefix(d.url, "ws://")
	d.addr = rest[:strings.Index(rest, "/")]
	return d, nil
}

// stop sends SIGTERM and waits for the exit (SIGKILL after 30s).
func (d *daemonProc) stop() error {
	d.stopOnce.Do(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-d.exited:
			d.stopErr = err
		case <-time.After(30 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.exited
			d.stopErr = fmt.Errorf("did not exit within 30s of SIGTERM; killed")
		}
	})
	return d.stopErr
}

// raiseFDLimit lifts the soft RLIMIT_NOFILE towards need (up to the hard
// limit); the daemon, started later, inherits it.
func raiseFDLimit(need uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if lim.Cur >= need {
		return
	}
	lim.Cur = min(need, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "load: raising RLIMIT_NOFILE:", err)
	}
	if lim.Cur < need {
		fmt.Fprintf(os.Stderr, "load: RLIMIT_NOFILE is %d (hard limit), %d wanted\n", lim.Cur, need)
	}
}
