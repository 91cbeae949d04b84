package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// monitor samples the daemon (goroutines, RSS, CPU, connections) and the
// load program every 10 s.
type monitor struct {
	d *daemonProc
	r *loadRun

	start, lastAt   time.Time
	lastLive        int64
	cpuStart        float64 // daemon process_cpu_seconds_total at start
	lastCPU         float64
	selfStart       time.Duration // load program CPU at start
	loadStart       string
	peakGoroutines  float64
	peakRSS         int64 // kB
	peakRate        float64
	final           daemonSample
	finalSelf       time.Duration
	finalAt         time.Time
	finalLoad       string
	metricsFailures int
}

// daemonSample is what /metrics and /proc say about the daemon.
type daemonSample struct {
	goroutines  float64
	conns       float64
	slowDropped float64
	cpu         float64 // seconds
	reviews     float64 // review actions committed
	rssKB       int64
	ok          bool
}

func newMonitor(d *daemonProc, r *loadRun) *monitor {
	m := &monitor{d: d, r: r, start: time.Now(), loadStart: loadAvg(), selfStart: selfCPU()}
	s := m.read()
	m.cpuStart, m.lastCPU, m.lastAt = s.cpu, s.cpu, m.start
	return m
}

func (m *monitor) read() daemonSample {
	var s daemonSample
	s.rssKB = vmRSS(m.d.pid)
	resp, err := metricsClient.Get("http://" + m.d.addr + "/metrics")
	if err != nil {
		m.metricsFailures++
		return s
	}
	defer resp.Body.Close()
	vals := parseMetrics(resp.Body)
	s.goroutines = vals["go_goroutines"]
	s.conns = vals["changesetd_connections"]
	s.slowDropped = vals["changesetd_slow_clients_dropped_total"]
	s.cpu = vals["process_cpu_seconds_total"]
	s.reviews = vals[`changesetd_actions_total{type="changeset/filesReviewChanged"}`]
	s.ok = true
	return s
}

func (m *monitor) loop(stop <-chan struct{}) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			m.sample(false)
		}
	}
}

// sample takes one sample and prints its line.
func (m *monitor) sample(final bool) {
	now := time.Now()
	s := m.read()
	live := m.r.live.Load()
	dt := now.Sub(m.lastAt).Seconds()
	rate := float64(live-m.lastLive) / dt
	cpu := 100 * (s.cpu - m.lastCPU) / dt
	m.lastAt, m.lastLive, m.lastCPU = now, live, s.cpu
	m.peakGoroutines = max(m.peakGoroutines, s.goroutines)
	m.peakRSS = max(m.peakRSS, s.rssKB)
	if !final {
		m.peakRate = max(m.peakRate, rate)
	}
	label := fmt.Sprintf("%4.0fs", now.Sub(m.start).Seconds())
	if final {
		label = "final"
		m.final, m.finalSelf, m.finalAt, m.finalLoad = s, selfCPU(), now, loadAvg()
	}
	fmt.Printf("[%s %s] daemon: goroutines %5.0f rss %6.1f MiB cpu %4.0f%% conns %4.0f slow-dropped %.0f | reviews: dispatched %6d committed %6.0f echoed %6d | clients: connected %4d deliveries/s %6.0f reconnects %5d daemon-closed %4d | loadavg %s\n",
		label, now.Format("15:04:05"), s.goroutines, float64(s.rssKB)/1024, cpu, s.conns, s.slowDropped,
		m.r.dispatched.Load(), s.reviews, m.r.echoed.Load(),
		m.r.connected.Load(), rate, m.r.reconnReplay.Load()+m.r.reconnSnapshot.Load(), m.r.serverCloses.Load(), loadAvg())
}

func parseMetrics(r io.Reader) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		name, val := line[:i], line[i+1:]
		if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = f
		}
	}
	return out
}

// vmRSS reads VmRSS (kB) from /proc/<pid>/status; 0 when unavailable.
func vmRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// result is everything the final report shows.
type result struct {
	subscribers    int
	elapsed        time.Duration
	writes         int64
	dispatched     int64
	echoes         int64
	refEnvelopes   int
	refTypes       map[string]int64
	driverRejected int64
	driverDisorder int64

	live, replayed  int64
	liveInRun       int64 // live deliveries before the run ended (excludes settling)
	lost            int64
	lostClients     int
	lostExamples    []string
	snapshotCovered int64
	dupes           int64
	outOfOrder      int64
	unexpected      int64
	rejected        int64
	otherChan       int64

	churned, replays, snapshots, failures, serverCloses int64
	events                                              map[string]int64

	notConnected int   // subscribers not connected when the run settled
	undelivered  int64 // reference envelopes after their last seen serverSeq

	lat []int32 // µs, sorted

	mon      *monitor
	stopTook time.Duration
	stopErr  error
	log      *logWatcher
}

// analyze compares every subscriber with the reference stream up to
// refLast. Call it only after every subscriber goroutine has ended.
func analyze(r *loadRun, drv *driver, subs []*subscriber, refLast int64) *result {
	drv.mu.Lock()
	ref := slices.Clone(drv.ref[1:]) // ref[0] is the driver's snapshot fromSeq
	res := &result{
		subscribers: len(subs), dispatched: r.dispatched.Load(), echoes: drv.echoes,
		refTypes: maps.Clone(drv.types), driverRejected: drv.rejected, driverDisorder: drv.disorder,
	}
	drv.mu.Unlock()
	if i, _ := searchInt64(ref, refLast+1); i < len(ref) {
		ref = ref[:i]
	}
	res.refEnvelopes = len(ref)
	res.live, res.replayed = r.live.Load(), r.replayed.Load()
	res.churned, res.failures, res.serverCloses = r.churnPlanned.Load(), r.reconnFailed.Load(), r.serverCloses.Load()
	res.replays, res.snapshots = r.reconnReplay.Load(), r.reconnSnapshot.Load()
	r.evMu.Lock()
	res.events = maps.Clone(r.events)
	r.evMu.Unlock()

	for _, s := range subs {
		res.dupes += s.dupes
		res.outOfOrder += s.outOfOrder
		res.rejected += s.rejected
		res.otherChan += s.otherChan
		res.lat = append(res.lat, s.latencies...)
		// A client connected at the end must hold everything up to refLast;
		// one that is not, everything up to what it saw last.
		end := refLast
		if !s.activeAtEnd {
			end = min(refLast, s.seen.Load())
			res.notConnected++
			k, _ := searchInt64(ref, end+1)
			res.undelivered += int64(len(ref) - k)
		}
		lost := int64(0)
		var missing []int64
		i, _ := searchInt64(ref, s.start+1)
		j, g := 0, 0
		for ; i < len(ref) && ref[i] <= end; i++ {
			x := ref[i]
			for g < len(s.gaps) && s.gaps[g].to < x {
				g++
			}
			if g < len(s.gaps) && x > s.gaps[g].from {
				res.snapshotCovered++
				continue
			}
			for j < len(s.received) && s.received[j] < x {
				j++
			}
			if j < len(s.received) && s.received[j] == x {
				continue
			}
			lost++
			if len(missing) < 5 {
				missing = append(missing, x)
			}
		}
		for _, x := range s.received {
			if x > refLast {
				break
			}
			if _, ok := searchInt64(ref, x); !ok {
				res.unexpected++
			}
		}
		if lost > 0 {
			res.lost += lost
			res.lostClients++
			if len(res.lostExamples) < 10 {
				res.lostExamples = append(res.lostExamples, fmt.Sprintf("%s lost %d (e.g. serverSeq %v; start %d, last seen %d, %d replays, %d snapshots)",
					s.clientID, lost, missing, s.start, s.seen.Load(), s.replays, s.snapshots))
			}
		}
	}
	slices.Sort(res.lat)
	return res
}

func pct(xs []int32, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	i := min(len(xs)-1, int(p*float64(len(xs))))
	return time.Duration(xs[i]) * time.Microsecond
}

func ms(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= 100*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
}

// logWatcher copies the daemon's stderr to a file and keeps a summary:
// lines by level, WARN and ERROR records by message (the first few printed
// as they happen), and lines that are not slog records (panics, traces).
type logWatcher struct {
	r    *loadRun
	path string
	done chan struct{}

	mu       sync.Mutex
	lines    int
	levels   map[string]int
	messages map[string]int    // "LEVEL msg" for WARN and ERROR
	first    map[string]string // a full example line per message
	other    []string
}

var slogLine = regexp.MustCompile(`^time=\S+ level=(\w+) msg=("(?:[^"\\]|\\.)*"|\S+)`)

func newLogWatcher(r *loadRun, path string) *logWatcher {
	return &logWatcher{r: r, path: path, done: make(chan struct{}), levels: map[string]int{}, messages: map[string]int{}, first: map[string]string{}}
}

// copy reads src to its end, writing every line to the file.
func (lw *logWatcher) copy(src io.Reader, file io.Writer) {
	defer close(lw.done)
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(file, line)
		lw.add(line)
	}
}

func (lw *logWatcher) add(line string) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.lines++
	m := slogLine.FindStringSubmatch(line)
	if m == nil {
		if len(lw.other) < 20 {
			lw.other = append(lw.other, line)
		}
		if lw.r != nil {
			lw.r.event("daemon stderr (not a log record)", "daemon: %s", line)
		}
		return
	}
	lw.levels[m[1]]++
	if m[1] != "WARN" && m[1] != "ERROR" {
		return
	}
	msg, err := strconv.Unquote(m[2])
	if err != nil {
		msg = m[2]
	}
	key := m[1] + " " + msg
	if lw.messages[key] == 0 {
		lw.first[key] = line
	}
	lw.messages[key]++
	if lw.r != nil {
		lw.r.event("daemon log: "+key, "daemon: %s", line)
	}
}

func (lw *logWatcher) print() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	fmt.Printf("daemon log %s: %d lines", lw.path, lw.lines)
	for _, lvl := range []string{"DEBUG", "INFO", "WARN", "ERROR"} {
		if n := lw.levels[lvl]; n > 0 {
			fmt.Printf(", %s %d", lvl, n)
		}
	}
	fmt.Println()
	keys := make([]string, 0, len(lw.messages))
	for k := range lw.messages {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lw.messages[keys[i]] > lw.messages[keys[j]] })
	for _, k := range keys {
		fmt.Printf("  %6d × %s\n         e.g. %s\n", lw.messages[k], k, lw.first[k])
	}
	for _, l := range lw.other {
		fmt.Printf("  other: %s\n", l)
	}
}

// printReport prints the report and returns the verdict: PASS, FAIL or
// INCOMPLETE.
func printReport(cfg config, res *result) string {
	m := res.mon
	secs := res.elapsed.Seconds()
	fmt.Println()
	fmt.Println("== delivery")
	types := make([]string, 0, len(res.refTypes))
	for k := range res.refTypes {
		types = append(types, fmt.Sprintf("%s %d", strings.TrimPrefix(k, "changeset/"), res.refTypes[k]))
	}
	sort.Strings(types)
	fmt.Printf("reference stream (driver): %d envelopes (%s)\n", res.refEnvelopes, strings.Join(types, ", "))
	fmt.Printf("driver: dispatched %d (%.1f/s), echoed %d, rejected %d, out of order %d; file writes %d (%.1f/s)\n",
		res.dispatched, float64(res.dispatched)/secs, res.echoes, res.driverRejected, res.driverDisorder, res.writes, float64(res.writes)/secs)
	fmt.Printf("deliveries: %d live + %d replayed = %d (live %.0f/s over the %v run, peak 10 s window %.0f/s)\n",
		res.live, res.replayed, res.live+res.replayed, float64(res.liveInRun)/secs, res.elapsed.Round(time.Second), m.peakRate)
	fmt.Printf("lost: %d (clients affected %d); covered by a reconnect snapshot instead: %d\n", res.lost, res.lostClients, res.snapshotCovered)
	for _, e := range res.lostExamples {
		fmt.Println("  ", e)
	}
	fmt.Printf("duplicates: %d, out of order: %d, not in the reference stream: %d, rejections seen: %d, other channels: %d\n",
		res.dupes, res.outOfOrder, res.unexpected, res.rejected, res.otherChan)
	fmt.Printf("reconnects: %d (replay %d, snapshot %d) after %d planned disconnects and %d closes by the daemon; %d failed attempts\n",
		res.replays+res.snapshots, res.replays, res.snapshots, res.churned, res.serverCloses, res.failures)
	if res.notConnected > 0 {
		fmt.Printf("not connected at the end (reconnect still failing): %d subscribers, %d reference envelopes after their last seen serverSeq (not counted as lost)\n", res.notConnected, res.undelivered)
	}
	kinds := make([]string, 0, len(res.events))
	for k := range res.events {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Printf("   event %6d × %s\n", res.events[k], k)
	}
	fmt.Printf("latency dispatch → subscriber (%d samples): p50 %s, p90 %s, p99 %s, p99.9 %s, max %s\n", len(res.lat),
		ms(pct(res.lat, 0.50)), ms(pct(res.lat, 0.90)), ms(pct(res.lat, 0.99)), ms(pct(res.lat, 0.999)), ms(pct(res.lat, 1)))

	fmt.Println("== daemon")
	dcpu := 100 * (m.final.cpu - m.cpuStart) / m.finalAt.Sub(m.start).Seconds()
	selfcpu := 100 * (m.finalSelf - m.selfStart).Seconds() / m.finalAt.Sub(m.start).Seconds()
	fmt.Printf("peak goroutines %.0f, peak RSS %.1f MiB, final goroutines %.0f / RSS %.1f MiB, avg CPU %.0f%% (load program %.0f%%), slow clients dropped %.0f\n",
		m.peakGoroutines, float64(m.peakRSS)/1024, m.final.goroutines, float64(m.final.rssKB)/1024, dcpu, selfcpu, m.final.slowDropped)
	stopped := "cleanly"
	if res.stopErr != nil {
		stopped = "with " + res.stopErr.Error()
	}
	fmt.Printf("SIGTERM → exit %s in %v; metrics scrape failures %d\n", stopped, res.stopTook.Round(time.Millisecond), m.metricsFailures)
	res.log.print()
	fmt.Printf("machine: %d CPUs, loadavg at start %s, at end %s\n", runtime.NumCPU(), m.loadStart, m.finalLoad)

	verdict := "PASS"
	switch {
	case res.lost > 0 || res.dupes > 0 || res.outOfOrder > 0:
		verdict = "FAIL"
	case res.notConnected > 0 || res.echoes != res.dispatched:
		verdict = "INCOMPLETE"
		fmt.Printf("INCOMPLETE: %d subscribers not connected at the end; %d of %d dispatches echoed to the driver\n", res.notConnected, res.echoes, res.dispatched)
	}
	fmt.Println()
	fmt.Println("| subscribers | reviews/s | writes/s | churn/s | duration | deliveries | deliveries/s | lost | dup / out-of-order | reconnects (replay / snapshot) | daemon closes | latency p50 / p99 | daemon peak goroutines / RSS | daemon CPU | result |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	fmt.Printf("| %d | %.0f | %.0f | %.0f | %v | %d | %.0f | %d | %d / %d | %d / %d | %d | %s / %s | %.0f / %.0f MiB | %.0f%% | %s |\n",
		res.subscribers, cfg.rate, cfg.writes, cfg.churn, cfg.duration, res.live+res.replayed, float64(res.liveInRun)/secs,
		res.lost, res.dupes, res.outOfOrder, res.replays, res.snapshots, res.serverCloses,
		ms(pct(res.lat, 0.50)), ms(pct(res.lat, 0.99)), m.peakGoroutines, float64(m.peakRSS)/1024, dcpu, verdict)
	return verdict
}
