package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// throttledRate is what the burst's throttled subscriber reads a second:
// a remote IDE through a tunnel.
const throttledRate = 300_000

// scaleConfig is what bench -scale measures.
type scaleConfig struct {
	sizes       []int // tracked files of each tree
	burstFiles  int   // files changed at once in the burst
	burstSubs   int   // subscribers during the burst
	burstMaxRow int   // the largest tree the burst runs on
	// catchUpSaves is how many saves in the second session are timed in
	// each condition of the catch-up row: its p99 is the second slowest
	// of 100, where of 10 it would be the slowest, one scheduler
	// hiccup on a shared machine.
	catchUpSaves int
	// catchUpRate is the bytes a second the catch-up row's slow reader
	// takes in.
	catchUpRate int64
	// checkouts round trips between two branches differing in
	// checkoutDiffer of checkoutFiles files, for the daemon's RSS.
	checkouts, checkoutFiles, checkoutDiffer int
}

// scaleResult is one tree size's row of figures, each with git's.
type scaleResult struct {
	files, modified  int
	gitPair, gitStat time.Duration
	gitRSS           int64
	start, subscribe time.Duration // process start → ready; subscribe → ready (on the wire: coldResult)
	startDecoded     time.Duration // process start → ready, decoded by the bench
	second, later    time.Duration
	laterRaw         time.Duration
	restart          time.Duration
	restartListed    time.Duration // restart → first state listing every file
	restartStatus    string        // … and its status
	rss, floor       int64
	// CPU time (user + system): the daemon's at ready, least of the
	// runs, and the git pair's.
	startCPU, restartCPU, gitCPU time.Duration
	saveP50, saveP99             time.Duration
	burst                        *burstResult
	burst1                       *burstResult // the same files again, one subscriber
	catchUp                      *catchUpResult
}

type burstResult struct {
	files, subs  int
	all, slowest time.Duration // the last fast subscriber converged; the slow one
	// throttled is when the subscriber reading throttledRate bytes a
	// second converged (0 if it did not: throttledClosed).
	throttled       time.Duration
	throttledClosed bool
	gitStatus       time.Duration // git status --porcelain on the tree after the burst
	disconnected    int
	bytesPerSub     int64         // the most a fast subscriber received
	encoded         int64         // the encoded size of the files that changed
	daemonCPU       time.Duration // the daemon's CPU time (user + system) from the burst's start to the last convergence
	benchCPU        time.Duration // the bench's own, its subscribers' reading and scanning, over the same time
	load            string        // the load average when the burst converged
}

// runScale measures the first view, later subscribers, a restart, memory,
// saves and a burst at each tree size, side by side with git on the same
// tree, and prints one table.
func runScale(c config, sc scaleConfig) error {
	load0 := loadavg()
	work, bin, done, err := setUp(c, "changesetd-bench-scale-")
	if err != nil {
		return err
	}
	defer done()
	fmt.Println("the daemon's floor: a one-file repository …")
	floor, err := daemonFloor(c, bin, work)
	if err != nil {
		return err
	}
	var rows []scaleResult
	for _, n := range sc.sizes {
		fmt.Printf("== %d files\n", n)
		dir := filepath.Join(work, strconv.Itoa(n))
		res, err := measureScale(c, sc, bin, dir, n)
		if err != nil {
			return fmt.Errorf("%d files: %w", n, err)
		}
		res.floor = floor
		rows = append(rows, *res)
		if !c.keep {
			os.RemoveAll(dir)
		}
	}
	var co *checkoutResult
	if sc.checkouts > 0 {
		fmt.Printf("== checkouts: %d round trips, %d of %d files\n", sc.checkouts, sc.checkoutDiffer, sc.checkoutFiles)
		if co, err = measureCheckouts(c, bin, work, sc.checkoutFiles, sc.checkoutDiffer, sc.checkouts); err != nil {
			return fmt.Errorf("checkouts: %w", err)
		}
	}
	reportScale(c, sc, rows, co, load0)
	return nil
}

func measureScale(c config, sc scaleConfig, bin, dir string, n int) (*scaleResult, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r, err := makeRepo(dir, n, max(n/100, 1), c.modified)
	if err != nil {
		return nil, err
	}
	g, err := measureGit(r, c.runs)
	if err != nil {
		return nil, err
	}
	res := &scaleResult{files: n, modified: len(r.modified), gitPair: median(g.diffPlusOthers), gitStat: median(g.status), gitRSS: medianInt(g.diffRSS)}
	if res.gitCPU, err = gitPairCPU(r.dir, c.runs); err != nil {
		return nil, err
	}

	var cold []coldResult
	var d *daemon
	var m *mirror
	defer func() {
		if d != nil {
			d.kill()
		}
	}()
	for i := range c.runs {
		fmt.Printf("cold run %d/%d …\n", i+1, c.runs)
		if d, err = startDaemon(bin, r.dir, dir, c.logLevel, i); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		mm, cr, err := coldRun(ctx, d, r)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("cold run: %w; daemon stderr:\n%s", err, tail(d.stderr))
		}
		cold = append(cold, cr)
		if res.startCPU == 0 || cr.cpuToReady < res.startCPU {
			res.startCPU = cr.cpuToReady
		}
		m = mm
		if i < c.runs-1 {
			if err := d.stop(); err != nil {
				return nil, err
			}
			d = nil
		}
	}
	pick := func(f func(coldResult) time.Duration) time.Duration {
		var out []time.Duration
		for _, x := range cold {
			out = append(out, f(x))
		}
		return median(out)
	}
	res.start = pick(func(x coldResult) time.Duration { return x.startToReady })
	res.startDecoded = pick(func(x coldResult) time.Duration { return x.startToReadyDecoded })
	res.subscribe = pick(func(x coldResult) time.Duration { return x.subscribeToReady })
	res.second = pick(func(x coldResult) time.Duration { return x.second })
	res.later = pick(func(x coldResult) time.Duration { return x.later })
	res.laterRaw = pick(func(x coldResult) time.Duration { return x.laterRaw })
	var rss []int64
	for _, x := range cold {
		rss = append(rss, x.rss)
	}
	res.rss = medianInt(rss)

	fmt.Printf("saves (%d) …\n", c.saves)
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	saves, err := measureSaves(ctx, m, r, c.saves)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("saves: %w", err)
	}
	res.saveP50, res.saveP99 = median(saves), percentile(saves, 99)

	fmt.Println("restart on the unchanged tree …")
	if err := d.stop(); err != nil {
		return nil, err
	}
	d = nil
	var restarts []time.Duration
	var uri string
	for i := range c.runs {
		if d, err = startDaemonOn(bin, r.dir, dir, c.logLevel, c.runs-1, fmt.Sprintf("restart%d.stderr", i)); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		mm, cr, err := coldRun(ctx, d, r)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("restart: %w; daemon stderr:\n%s", err, tail(d.stderr))
		}
		uri = mm.uri
		restarts = append(restarts, cr.startToReady)
		if res.restartCPU == 0 || cr.cpuToReady < res.restartCPU {
			res.restartCPU = cr.cpuToReady
		}
		if i == 0 || cr.startToListed < res.restartListed {
			res.restartListed, res.restartStatus = cr.startToListed, cr.firstStatus
		}
		if i < c.runs-1 {
			if err := d.stop(); err != nil {
				return nil, err
			}
			d = nil
		}
	}
	res.restart = median(restarts)

	if sc.burstSubs > 0 && n <= sc.burstMaxRow && sc.burstFiles < n-len(r.modified) {
		fmt.Printf("burst: %d files at once, %d subscribers …\n", sc.burstFiles, sc.burstSubs)
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		paths := burstPaths(r, sc.burstFiles)
		res.burst, err = measureBurst(ctx, d, r, uri, paths, sc.burstSubs, true, "// burst\n")
		cancel()
		if err != nil {
			return nil, fmt.Errorf("burst: %w; daemon stderr:\n%s", err, tail(d.stderr))
		}
		fmt.Printf("burst: converged in %s (the slow reader %s), %d disconnected, %.1f MB per subscriber for %.1f MB of files, daemon CPU %s\n",
			fmtDur(res.burst.all), fmtDur(res.burst.slowest), res.burst.disconnected, float64(res.burst.bytesPerSub)/1e6, float64(res.burst.encoded)/1e6, fmtDur(res.burst.daemonCPU))
		fmt.Printf("burst: the same %d files once more, 1 subscriber …\n", len(paths))
		ctx, cancel = context.WithTimeout(context.Background(), c.timeout)
		res.burst1, err = measureBurst(ctx, d, r, uri, paths, 1, false, "// again\n")
		cancel()
		if err != nil {
			return nil, fmt.Errorf("burst, 1 subscriber: %w; daemon stderr:\n%s", err, tail(d.stderr))
		}
		fmt.Printf("burst, 1 subscriber: converged in %s, %d disconnected, daemon CPU %s\n", fmtDur(res.burst1.all), res.burst1.disconnected, fmtDur(res.burst1.daemonCPU))
		fmt.Printf("catch-up: saves in another session while a slow reader of this one's changeset is caught up again and again …\n")
		ctx, cancel = context.WithTimeout(context.Background(), c.timeout)
		res.catchUp, err = measureCatchUp(ctx, bin, c.logLevel, dir, r, len(r.modified)+len(paths), sc.catchUpSaves, sc.catchUpRate)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("catch-up: %w; its daemon's stderr:\n%s", err, tail(filepath.Join(dir, "catchup.stderr")))
		}
		fmt.Printf("catch-up: B's save p99 %s with A idle, %s during %d catch-ups of A's reader\n", fmtDur(res.catchUp.idleP99), fmtDur(res.catchUp.busyP99), res.catchUp.catchUps)
	}
	return res, d.stop()
}

// burstMirror is a subscriber's view during the burst, kept by the
// client's reading goroutine as each action arrives: a hundred clients
// polling recorded notifications would measure the bench, not the daemon.
// It keeps, by file id, only the file's content nonce and encoded size,
// and decodes no more of an action than that: a hundred mirrors of the
// whole state would make the bench's own heap and decoding the measure.
type burstMirror struct {
	c      *rawSub
	mu     sync.Mutex
	files  map[string]mirrorFile
	status string
	last   int64
	// From the burst's start: the content each file had then, the files
	// whose content has changed since, and the bytes of the action
	// notifications received.
	start   map[string]string
	changed map[string]bool
	bytes   int64
	want    int           // changed files once converged; 0 until the burst starts
	done    chan struct{} // closed once converged
	at      time.Time
	scanErr error // the first frame scanned otherwise than decoded in full
}

// checkEvery is how often a frame scanned by scanFrame (a distinct
// frame: frameCache) is decoded in full as well, and the two compared:
// the scan is checked as it goes.
const checkEvery = 64

type mirrorFile struct {
	nonce string // of the after side; "" when deleted
	size  int    // encoded bytes
}

// fileHead is the part of a file a burstMirror decodes.
type fileHead struct {
	ID   string `json:"id"`
	Edit struct {
		After *struct {
			Content struct {
				Nonce string `json:"nonce"`
			} `json:"content"`
		} `json:"after"`
	} `json:"edit"`
}

func decodeFile(raw json.RawMessage) (string, mirrorFile, error) {
	var h fileHead
	if err := json.Unmarshal(raw, &h); err != nil {
		return "", mirrorFile{}, err
	}
	f := mirrorFile{size: len(raw)}
	if h.Edit.After != nil {
		f.nonce = h.Edit.After.Content.Nonce
	}
	return h.ID, f, nil
}

// notifyOverhead is what an action notification adds to its params.
var notifyOverhead = int64(len(`{"jsonrpc":"2.0","method":"action","params":}`))

// take applies a frame, scanned (scanFrame) when it can be, else
// decoded in full. The scan is made once for every mirror that received
// the same bytes (frameCache).
func (m *burstMirror) take(uri string, fs *frameScan) {
	frame := fs.data
	if !fs.ok {
		var n struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(frame, &n) == nil && n.Method == protocol.NotifyAction {
			m.apply(uri, n.Params)
		}
		return
	}
	h, heads := fs.head, fs.heads
	if fs.err != nil {
		m.mu.Lock()
		if m.scanErr == nil {
			m.scanErr = fs.err
		}
		m.mu.Unlock()
	}
	if h.channel != uri || h.rejected {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.start != nil {
		m.bytes += int64(len(frame))
	}
	if h.serverSeq <= m.last {
		return
	}
	m.last = h.serverSeq
	switch h.typ {
	case "changeset/fileSet":
		m.files[heads[0].id] = heads[0].f
		m.mark(heads[0].id, heads[0].f)
	case "changeset/fileRemoved":
		delete(m.files, h.fileID)
		delete(m.changed, h.fileID)
	case "changeset/contentChanged":
		m.files = make(map[string]mirrorFile, len(heads))
		if m.changed != nil {
			m.changed = map[string]bool{}
		}
		for _, fh := range heads {
			m.files[fh.id] = fh.f
			m.mark(fh.id, fh.f)
		}
	case "changeset/statusChanged":
		m.status = h.status
	case "changeset/cleared":
		clear(m.files)
		clear(m.changed)
	}
	m.check()
}

type fileHeadScan struct {
	id string
	f  mirrorFile
}

// checkScan decodes frame in full and compares it with what scanFrame
// and scanFile read of it.
func checkScan(frame []byte, h frameHead, heads []fileHeadScan) error {
	var n struct {
		Params struct {
			Channel         string `json:"channel"`
			ServerSeq       int64  `json:"serverSeq"`
			RejectionReason string `json:"rejectionReason"`
			Action          struct {
				Type   string            `json:"type"`
				File   json.RawMessage   `json:"file"`
				FileID string            `json:"fileId"`
				Files  []json.RawMessage `json:"files"`
				Status string            `json:"status"`
			} `json:"action"`
		} `json:"params"`
	}
	if err := json.Unmarshal(frame, &n); err != nil {
		return fmt.Errorf("a scanned frame does not decode: %w", err)
	}
	p := n.Params
	files := p.Action.Files
	if p.Action.File != nil {
		files = []json.RawMessage{p.Action.File}
	}
	same := p.Channel == h.channel && p.ServerSeq == h.serverSeq && (p.RejectionReason != "") == h.rejected &&
		p.Action.Type == h.typ && p.Action.FileID == h.fileID && p.Action.Status == h.status && len(files) == len(heads)
	for i := 0; same && i < len(files); i++ {
		id, f, err := decodeFile(files[i])
		same = err == nil && id == heads[i].id && f == heads[i].f
	}
	if !same {
		return fmt.Errorf("frame scanned otherwise than decoded: %.300s", frame)
	}
	return nil
}

func (m *burstMirror) apply(uri string, params json.RawMessage) {
	var e struct {
		Channel         string `json:"channel"`
		ServerSeq       int64  `json:"serverSeq"`
		RejectionReason string `json:"rejectionReason"`
		Action          struct {
			Type   string            `json:"type"`
			File   json.RawMessage   `json:"file"`
			FileID string            `json:"fileId"`
			Files  []json.RawMessage `json:"files"`
			Status string            `json:"status"`
		} `json:"action"`
	}
	if json.Unmarshal(params, &e) != nil || e.Channel != uri || e.RejectionReason != "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.start != nil {
		m.bytes += int64(len(params)) + notifyOverhead
	}
	if e.ServerSeq <= m.last {
		return
	}
	m.last = e.ServerSeq
	a := e.Action
	switch a.Type {
	case "changeset/fileSet":
		if id, f, err := decodeFile(a.File); err == nil {
			m.files[id] = f
			m.mark(id, f)
		}
	case "changeset/fileRemoved":
		delete(m.files, a.FileID)
		delete(m.changed, a.FileID)
	case "changeset/contentChanged":
		m.files = make(map[string]mirrorFile, len(a.Files))
		if m.changed != nil {
			m.changed = map[string]bool{}
		}
		for _, raw := range a.Files {
			if id, f, err := decodeFile(raw); err == nil {
				m.files[id] = f
				m.mark(id, f)
			}
		}
	case "changeset/statusChanged":
		m.status = a.Status
	case "changeset/cleared":
		clear(m.files)
		clear(m.changed)
	}
	m.check()
}

// mark notes whether f's content differs from the burst's start. m.mu held.
func (m *burstMirror) mark(id string, f mirrorFile) {
	if m.start == nil {
		return
	}
	if f.nonce != m.start[id] {
		m.changed[id] = true
	} else {
		delete(m.changed, id)
	}
}

// begin starts counting a burst of want files. m.mu held.
func (m *burstMirror) begin(want int) {
	m.start = make(map[string]string, len(m.files))
	for id, f := range m.files {
		m.start[id] = f.nonce
	}
	m.changed, m.bytes, m.want = map[string]bool{}, 0, want
	m.done, m.at = make(chan struct{}), time.Time{}
}

// check notes the moment the view has every changed file and is ready.
// m.mu held.
func (m *burstMirror) check() {
	if m.want > 0 && m.at.IsZero() && m.status == protocol.StatusReady && len(m.changed) == m.want {
		m.at = time.Now()
		close(m.done)
	}
}

// encodedChanged is the encoded size of the changed files: what a burst
// must send at the least.
func (m *burstMirror) encodedChanged() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for id := range m.changed {
		n += int64(m.files[id].size)
	}
	return n
}

// burstSubscribers connects subs clients to the changeset uri.
func burstSubscribers(ctx context.Context, d *daemon, uri string, subs int) ([]*burstMirror, func(), error) {
	return burstSubscribersAt(ctx, d, uri, subs, 0)
}

// burstSubscribersAt is burstSubscribers whose last subscriber's
// connection takes in at most rate bytes a second (0: none limited).
func burstSubscribersAt(ctx context.Context, d *daemon, uri string, subs int, rate int64) ([]*burstMirror, func(), error) {
	var mirrors []*burstMirror
	scans := newFrameCache()
	closeAll := func() {
		for _, m := range mirrors {
			m.c.Close()
		}
	}
	for i := range subs {
		var limit int64
		if i == subs-1 {
			limit = rate
		}
		c, err := dialRawAt(ctx, d.url, limit)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		m := &burstMirror{c: c, done: make(chan struct{})}
		mirrors = append(mirrors, m)
		if _, err := c.call(1, protocol.MethodInitialize, map[string]any{
			"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": fmt.Sprintf("bench-burst-%d", i),
		}); err != nil {
			closeAll()
			return nil, nil, err
		}
		raw, err := c.call(2, protocol.MethodSubscribe, map[string]any{"channel": uri})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		var res struct {
			Snapshot struct {
				FromSeq int64 `json:"fromSeq"`
				State   struct {
					Status string            `json:"status"`
					Files  []json.RawMessage `json:"files"`
				} `json:"state"`
			} `json:"snapshot"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			closeAll()
			return nil, nil, err
		}
		snap, st := res.Snapshot, res.Snapshot.State
		if i == 0 {
			// The scan reads the daemon's files as a full decode does.
			for _, raw := range st.Files {
				id, f, err := decodeFile(raw)
				sid, sf, ok := scanFile(raw)
				if err != nil || !ok || id != sid || f != sf {
					closeAll()
					return nil, nil, fmt.Errorf("a file scanned otherwise than decoded: %.300s", raw)
				}
			}
		}
		m.mu.Lock()
		m.last, m.status = snap.FromSeq, st.Status
		m.files = make(map[string]mirrorFile, len(st.Files))
		for _, raw := range st.Files {
			if id, f, err := decodeFile(raw); err == nil {
				m.files[id] = f
			}
		}
		m.mu.Unlock()
		// The last subscriber reads slowly (throttled, or 2 ms late):
		// the others must not wait for its reading to compare theirs.
		fr := &frameReader{c: scans, lead: i < subs-2}
		c.listen(fr, func(fs *frameScan) { m.take(uri, fs) })
	}
	return mirrors, closeAll, nil
}

// burstPaths are files tracked files that were unchanged.
func burstPaths(r *repo, files int) []string {
	modified := map[string]bool{}
	for _, p := range r.modified {
		modified[p] = true
	}
	var paths []string
	for i := 0; len(paths) < files && i < r.tracked; i++ {
		if p := filePath(i, max(r.tracked/100, 1)); !modified[p] && p != r.saveFile {
			paths = append(paths, p)
		}
	}
	return paths
}

// measureBurst subscribes subs clients to the uncommitted changeset, the
// last of them, when slow, reading each frame 2 ms late (far slower than
// the daemon writes a burst), then appends line to every one of paths at
// once, and times until every subscriber's view has each of them changed
// and is ready. It also counts the bytes each subscriber received against
// the encoded size of the changed files.
func measureBurst(ctx context.Context, d *daemon, r *repo, uri string, paths []string, subs int, slow bool, line string) (*burstResult, error) {
	fast := subs // the subscribers that read as fast as they can
	all := subs
	if slow && subs > 1 {
		fast = subs - 1
		all = subs + 1 // and one reading throttledRate bytes a second, last
	}
	var rate int64
	if all > subs {
		rate = throttledRate
	}
	mirrors, closeAll, err := burstSubscribersAt(ctx, d, uri, all, rate)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	if slow {
		mirrors[subs-1].c.SetReadDelay(2 * time.Millisecond)
	}
	subs = all
	// A refresh may still be running (the git status that timed the
	// burst before this one touched the index): start from ready.
	for i, m := range mirrors {
		if err := m.c.Wait(ctx, fmt.Sprintf("subscriber %d ready", i), func() bool {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.status == protocol.StatusReady
		}); err != nil {
			return nil, err
		}
	}
	base := -1
	for i, m := range mirrors {
		m.mu.Lock()
		n, st := len(m.files), m.status
		m.mu.Unlock()
		if base < 0 {
			base = n
		}
		if st != protocol.StatusReady || n != base {
			return nil, fmt.Errorf("subscriber %d starts from %d files (%s), the first from %d", i, n, st, base)
		}
	}
	for _, m := range mirrors {
		m.mu.Lock()
		m.begin(len(paths))
		m.mu.Unlock()
	}
	stopProfile, err := profileBurst(d, subs)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	cpu0, _ := cpuTime(d.cmd.Process.Pid)
	self0, _ := cpuTime(os.Getpid())
	start := time.Now()
	for _, p := range paths {
		f, err := os.OpenFile(filepath.Join(r.dir, filepath.FromSlash(p)), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		_, err = f.WriteString(line)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	res := &burstResult{files: len(paths), subs: subs}
	took := make([]time.Duration, subs)
	for i, m := range mirrors {
		select {
		case <-m.done:
			took[i] = m.at.Sub(start)
		case <-m.c.Done():
			res.disconnected++
			_, code, reason := m.c.Closed()
			fmt.Printf("subscriber %d was closed: %d %s\n", i, code, reason)
		case <-ctx.Done():
			m.mu.Lock()
			n, st := len(m.changed), m.status
			m.mu.Unlock()
			return nil, fmt.Errorf("subscriber %d: %d of %d files changed, %s: %w", i, n, len(paths), st, ctx.Err())
		}
	}
	for i, m := range mirrors {
		m.mu.Lock()
		err := m.scanErr
		m.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("subscriber %d: %w", i, err)
		}
	}
	if fast < subs {
		res.slowest = took[fast]
		res.throttled = took[subs-1]
		if closed, _, _ := mirrors[subs-1].c.Closed(); closed && took[subs-1] == 0 {
			res.throttledClosed = true
		}
	}
	res.all = slices.Max(took[:fast])
	stopProfile()
	if cpu1, err := cpuTime(d.cmd.Process.Pid); err == nil {
		res.daemonCPU = cpu1 - cpu0
	}
	if self1, err := cpuTime(os.Getpid()); err == nil {
		res.benchCPU = self1 - self0
	}
	res.load = loadavg()
	for _, m := range mirrors[:fast] {
		m.mu.Lock()
		res.bytesPerSub = max(res.bytesPerSub, m.bytes)
		m.mu.Unlock()
	}
	res.encoded = mirrors[0].encodedChanged()
	gs, _, _, err := timeGit(r.dir, false, "status", "--porcelain")
	if err != nil {
		return nil, err
	}
	res.gitStatus = gs
	return res, nil
}

// printCheckouts prints the checkouts' row, if they were measured.
func printCheckouts(co *checkoutResult) {
	if co == nil {
		return
	}
	fmt.Println()
	fmt.Println("| Measure | figure | target |")
	fmt.Println("|---|---:|---|")
	fmt.Printf("| daemon RSS, idle, after %d round trips of checking out a branch's %d changed files (of %d) and back, vs after the first | %s / %s = **%.2f×** | ≤ 1.5× |\n",
		co.rounds, co.differ, co.files, fmtKiB(co.last), fmtKiB(co.first), float64(co.last)/float64(co.first))
}

func reportScale(c config, sc scaleConfig, rows []scaleResult, co *checkoutResult, load0 string) {
	if len(rows) == 0 {
		printCheckouts(co)
		fmt.Printf("\nMachine: %d CPUs (runtime.NumCPU), %s, load average %s at start, %s at end.\n", runtime.NumCPU(), uname(), load0, loadavg())
		fmt.Printf("Command: `go run ./bench%s`\n", quoteArgs(os.Args[1:]))
		return
	}
	fmt.Println()
	head := "| Measure |"
	rule := "|---|"
	for _, r := range rows {
		head += fmt.Sprintf(" %s files |", humanCount(r.files))
		rule += "---:|"
	}
	fmt.Println(head + " target |")
	fmt.Println(rule + "---|")
	line := func(name, target string, cell func(r scaleResult) string) {
		s := "| " + name + " |"
		for _, r := range rows {
			s += " " + cell(r) + " |"
		}
		fmt.Println(s + " " + target + " |")
	}
	vs := func(ours, git time.Duration) string {
		return fmt.Sprintf("%s / %s = **%.2f×**", fmtDur(ours), fmtDur(git), ratio(ours, git))
	}
	line("process start → `uncommitted` ready (the frame's last byte read by the client), vs `git diff HEAD --numstat` + `git ls-files --others --exclude-standard`", "≤ 1.0×", func(r scaleResult) string { return vs(r.start, r.gitPair) })
	line("… the same, until the bench's Go client has decoded the frames (encoding/json)", "", func(r scaleResult) string { return vs(r.startDecoded, r.gitPair) })
	line("… CPU time (user + system) to ready, least of the runs, vs the git pair's", "≤ 1.0×", func(r scaleResult) string { return cpuVs(r.startCPU, r.gitCPU) })
	line("subscribe → ready, running daemon, changeset not computed, vs the same git pair", "≤ 1.0×", func(r scaleResult) string { return vs(r.subscribe, r.gitPair) })
	line("second subscriber → ready, vs the same git pair", "≤ 0.05×", func(r scaleResult) string { return vs(r.second, r.gitPair) })
	line("third to fifth subscriber → ready (median), vs the same git pair", "≤ 0.05×", func(r scaleResult) string { return vs(r.later, r.gitPair) })
	line("… the same, the snapshot read to its last byte, not decoded (a raw client), vs the same git pair", "", func(r scaleResult) string { return vs(r.laterRaw, r.gitPair) })
	line("restart (SIGTERM, same state dir) on the unchanged tree → ready, vs the same git pair", "≤ 0.5×", func(r scaleResult) string { return vs(r.restart, r.gitPair) })
	line("… CPU time (user + system) to ready, least of the runs, vs the git pair's", "≤ 0.5×", func(r scaleResult) string { return cpuVs(r.restartCPU, r.gitCPU) })
	line("… restart → the first state listing every file (its status), fastest run", "≤ 50 ms, `recomputing`", func(r scaleResult) string { return firstOnWire(r.restartListed, r.restartStatus) })
	line("peak RSS (VmHWM) vs `git diff HEAD --numstat` (maxrss)", "", func(r scaleResult) string {
		return fmt.Sprintf("%s / %s = **%.2f×**", fmtKiB(r.rss), fmtKiB(r.gitRSS), float64(r.rss)/float64(r.gitRSS))
	})
	line("peak RSS above the daemon's floor (its peak serving a one-file repository) vs git's numstat peak", "≤ 1.5×", func(r scaleResult) string { return aboveFloor(r.rss, r.floor, r.gitRSS) })
	line(fmt.Sprintf("save → `fileSet` p99 (of %d), vs `git status --porcelain`", c.saves), "≤ 25 ms, flat", func(r scaleResult) string { return vs(r.saveP99, r.gitStat) })
	line("… p50", "", func(r scaleResult) string { return fmtDur(r.saveP50) })
	line(fmt.Sprintf("burst: %d files at once, %d subscribers: the last to converge, vs `git status` after it", sc.burstFiles, sc.burstSubs), "≤ 2 s", func(r scaleResult) string {
		if r.burst == nil {
			return "—"
		}
		return vs(r.burst.all, r.burst.gitStatus)
	})
	line("… the subscriber reading each frame 2 ms late", "converges", func(r scaleResult) string {
		if r.burst == nil {
			return "—"
		}
		return fmtDur(r.burst.slowest)
	})
	line(fmt.Sprintf("… a subscriber whose connection reads %d KB/s", throttledRate/1000), "converges, never closed", func(r scaleResult) string {
		switch {
		case r.burst == nil || (r.burst.throttled == 0 && !r.burst.throttledClosed):
			return "—"
		case r.burst.throttledClosed:
			return "**closed**"
		}
		return "converged in " + fmtDur(r.burst.throttled)
	})
	line("… subscribers disconnected", "0", func(r scaleResult) string {
		if r.burst == nil {
			return "—"
		}
		return strconv.Itoa(r.burst.disconnected)
	})
	line("… bytes received per subscriber vs the encoded size of the files that changed", "≤ 1.2×", func(r scaleResult) string {
		if r.burst == nil {
			return "—"
		}
		return fmt.Sprintf("%.1f MB / %.1f MB = **%.2f×**", float64(r.burst.bytesPerSub)/1e6, float64(r.burst.encoded)/1e6, float64(r.burst.bytesPerSub)/float64(r.burst.encoded))
	})
	line("… the daemon's CPU time (user + system) from the burst's start to the last convergence", "", func(r scaleResult) string {
		if r.burst == nil {
			return "—"
		}
		return fmt.Sprintf("%s (the bench's subscribers: %s; load average %s)", fmtDur(r.burst.daemonCPU), fmtDur(r.burst.benchCPU), r.burst.load)
	})
	line("… the same files changed again, 1 subscriber: converged", "≤ 1 s", func(r scaleResult) string {
		if r.burst1 == nil {
			return "—"
		}
		return fmt.Sprintf("%s (%d disconnected; daemon CPU %s, the bench's %s; load average %s)", fmtDur(r.burst1.all), r.burst1.disconnected, fmtDur(r.burst1.daemonCPU), fmtDur(r.burst1.benchCPU), r.burst1.load)
	})
	line("save → `fileSet` p99 in another session while a slow reader of this one's changeset is caught up again and again, vs with this one idle", "≤ 1.5×", func(r scaleResult) string {
		cu := r.catchUp
		if cu == nil {
			return "—"
		}
		return fmt.Sprintf("%s / %s = **%.2f×** (%d saves; %d catch-ups of %d files for a reader taking %.1f MB/s, %.1f MB read, %d review marks, %d dropped; p50 %s / %s)",
			fmtDur(cu.busyP99), fmtDur(cu.idleP99), ratio(cu.busyP99, cu.idleP99), cu.saves, cu.catchUps, cu.aFiles, float64(cu.rate)/1e6, float64(cu.readBytes)/1e6, cu.marks, cu.dropped, fmtDur(cu.busyP50), fmtDur(cu.idleP50))
	})
	printCheckouts(co)
	fmt.Println()
	fmt.Printf("Trees of the sizes above in directories of 100 files, %d modified (4 lines each) and 5 untracked; medians of %d runs.\n", c.modified, c.runs)
	fmt.Printf("Machine: %d CPUs (runtime.NumCPU), %s, %s, %s, load average %s at start, %s at end.\n",
		runtime.NumCPU(), uname(), strings.TrimSpace(gitVersion()), runtime.Version(), load0, loadavg())
	fmt.Printf("Command: `go run ./bench%s`\n", quoteArgs(os.Args[1:]))
}

func humanCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

// parseSizes reads a comma-separated list of tree sizes: 20000,100k,1M.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ToLower(f))
		mul := 1
		switch {
		case strings.HasSuffix(f, "k"):
			mul, f = 1000, strings.TrimSuffix(f, "k")
		case strings.HasSuffix(f, "m"):
			mul, f = 1_000_000, strings.TrimSuffix(f, "m")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("tree size %q: want a count such as 20000, 100k or 1M", f)
		}
		out = append(out, n*mul)
	}
	return out, nil
}
