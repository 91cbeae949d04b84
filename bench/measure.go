package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/changesetd/changesetd/ahpclient"
	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/changesetd/changesetd/uritemplate"
)

// ---- git reference timings ----

// timeGit runs git once and returns its wall time, peak RSS (KiB) and
// stdout. Exit status 1 counts as success when ok1 is set (diff --no-index).
func timeGit(dir string, ok1 bool, args ...string) (time.Duration, int64, string, error) {
	cmd := gitCmd(dir, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !(ok1 && errors.As(err, &ee) && ee.ExitCode() == 1) {
		return 0, 0, "", fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return d, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, out.String(), nil
}

// childPeakRSS is git's peak RSS (KiB) for args, run from a small
// process of its own: a child started from this one counts the bench's
// own peak in its maxrss until it execs (the two share an address space
// until then), which a burst of a hundred views makes gigabytes.
func childPeakRSS(dir string, args ...string) (int64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, append([]string{childRSSFlag, dir}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("git %s, for its peak RSS: %v", strings.Join(args, " "), err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
}

// childRSSFlag makes the bench run git in dir with the rest of its
// arguments and print only git's peak RSS (KiB).
const childRSSFlag = "-child-rss"

func childRSS(dir string, args []string) {
	_, rss, _, err := timeGit(dir, false, args...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(rss)
}

type gitTimes struct {
	status, diffPlusOthers []time.Duration
	diffRSS                []int64
	numstat                map[string][2]int // path -> added, removed
	others                 int
}

// measureGit times git status and git diff HEAD --numstat + git ls-files
// --others on the repo, after one warm-up run that also refreshes the index.
func measureGit(r *repo, runs int) (*gitTimes, error) {
	g := &gitTimes{}
	if _, _, _, err := timeGit(r.dir, false, "status", "--porcelain"); err != nil {
		return nil, err
	}
	for range runs {
		d, _, _, err := timeGit(r.dir, false, "status", "--porcelain")
		if err != nil {
			return nil, err
		}
		g.status = append(g.status, d)
		d1, _, numstat, err := timeGit(r.dir, false, "diff", "HEAD", "--numstat")
		if err != nil {
			return nil, err
		}
		d2, _, others, err := timeGit(r.dir, false, "ls-files", "--others", "--exclude-standard")
		if err != nil {
			return nil, err
		}
		g.diffPlusOthers = append(g.diffPlusOthers, d1+d2)
		rss, err := childPeakRSS(r.dir, "diff", "HEAD", "--numstat")
		if err != nil {
			return nil, err
		}
		g.diffRSS = append(g.diffRSS, rss)
		g.numstat = parseNumstat(numstat)
		g.others = len(strings.Fields(others))
	}
	if len(g.numstat) != len(r.modified) || g.others != len(r.untracked) {
		return nil, fmt.Errorf("git sees %d modified and %d untracked files, want %d and %d", len(g.numstat), g.others, len(r.modified), len(r.untracked))
	}
	return g, nil
}

func parseNumstat(s string) map[string][2]int {
	m := map[string][2]int{}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			continue
		}
		a, _ := strconv.Atoi(f[0])
		d, _ := strconv.Atoi(f[1])
		m[f[2]] = [2]int{a, d}
	}
	return m
}

// ---- the daemon ----

type daemon struct {
	cmd     *exec.Cmd
	url     string
	stderr  string // log file
	started time.Time
	exited  chan error
	client  *ahpclient.Client
}

// startDaemon runs "changesetd serve" on repo with a fresh state dir and
// waits for its connect line.
func startDaemon(bin, repoDir, work, logLevel string, n int) (*daemon, error) {
	return startDaemonOn(bin, repoDir, work, logLevel, n, fmt.Sprintf("daemon%d.stderr", n))
}

// cpuProfiles is the -cpu-profiles directory, "" for none.
var cpuProfiles string

// startDaemonOn is startDaemon on state dir n, logging to logName: a
// second start on the same n is a restart on the state the first left.
func startDaemonOn(bin, repoDir, work, logLevel string, n int, logName string) (*daemon, error) {
	return startDaemonWith(bin, repoDir, work, logLevel, n, logName)
}

// startDaemonWith is startDaemonOn with extra flags for serve.
func startDaemonWith(bin, repoDir, work, logLevel string, n int, logName string, extra ...string) (*daemon, error) {
	state := filepath.Join(work, fmt.Sprintf("state%d", n))
	d := &daemon{stderr: filepath.Join(work, logName), exited: make(chan error, 1)}
	logf, err := os.Create(d.stderr)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--state-dir", state, "--log-level", logLevel}, profileArgs(work, logName)...)
	args = append(args, extra...)
	d.cmd = exec.Command(bin, append(args, repoDir)...)
	d.cmd.Stderr = logf
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	d.started = time.Now()
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	logf.Close() // the child has its own copy
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "connect: "); ok {
				urls <- u
			}
		}
	}()
	go func() { d.exited <- d.cmd.Wait() }()
	select {
	case d.url = <-urls:
		return d, nil
	case err := <-d.exited:
		return nil, fmt.Errorf("daemon exited before its connect line (%v); stderr in %s:\n%s", err, d.stderr, tail(d.stderr))
	case <-time.After(60 * time.Second):
		d.kill()
		return nil, fmt.Errorf("no connect line from the daemon in 60s; stderr in %s", d.stderr)
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (d *daemon) kill() {
	if d.client != nil {
		d.client.Close()
	}
	_ = d.cmd.Process.Kill()
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
	}
}

// stop closes the client, sends SIGTERM and expects a clean exit.
func (d *daemon) stop() error {
	if d.client != nil {
		d.client.Close()
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		if err != nil {
			return fmt.Errorf("daemon exit after SIGTERM: %v; stderr in %s", err, d.stderr)
		}
		return nil
	case <-time.After(20 * time.Second):
		d.kill()
		return fmt.Errorf("daemon did not stop within 20s of SIGTERM; stderr in %s", d.stderr)
	}
}

// peakRSS reads VmHWM (KiB) from /proc.
func peakRSS(pid int) (int64, error) { return procStatus(pid, "VmHWM") }

// procStatus reads a field in KiB from /proc/<pid>/status: VmHWM (peak
// RSS), RssFile (the part that is mapped files, such as pack files).
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// cpuTime reads a process's CPU time, user and system, from /proc: on a
// shared machine what the daemon spent is a steadier figure than how
// long its clients took.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q %q", pid, f[11], f[12])
	}
	// Clock ticks: 100 per second on Linux (USER_HZ).
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// ---- a changeset mirror, as a client keeps it ----

type mirror struct {
	c    *ahpclient.Client
	uri  string
	st   protocol.ChangesetState
	seen int   // notifications consumed
	last int64 // serverSeq of the last applied envelope
	// at is when the frame that brought st's last change was read off
	// the socket, before the bench decoded any of it: the state was on
	// the wire then, whatever Go's decoder of the bench takes after.
	at time.Time
}

// wait applies new envelopes in arrival order until done holds; done sees
// each new envelope after it is applied, then (env nil) the current state.
func (m *mirror) wait(ctx context.Context, what string, done func(env *ahpclient.Envelope, st *protocol.ChangesetState) bool) error {
	var bad error
	err := m.c.Wait(ctx, what, func() bool {
		notes := m.c.Notes()
		ats := m.c.NotesAt() // taken after notes: never shorter
		for ; m.seen < len(notes); m.seen++ {
			n := notes[m.seen]
			if n.Method != protocol.NotifyAction {
				continue
			}
			var e ahpclient.Envelope
			if err := json.Unmarshal(n.Params, &e); err != nil {
				bad = fmt.Errorf("undecodable action: %v: %.300s", err, n.Params)
				return true
			}
			if e.Channel != m.uri || e.RejectionReason != "" || e.ServerSeq <= m.last {
				continue
			}
			m.last, m.at = e.ServerSeq, ats[m.seen]
			m.st, _ = reducer.ApplyChangeset(m.st, e.Action.Action, reducer.Env{})
			if done(&e, &m.st) {
				m.seen++
				return true
			}
		}
		return done(nil, &m.st)
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return fmt.Errorf("%w (changeset status %q, %d files)", err, m.st.Status, len(m.st.Files))
	}
	return nil
}

// subscribe subscribes to uri; it returns the raw snapshot state and fromSeq.
func subscribe(ctx context.Context, c *ahpclient.Client, uri string) (json.RawMessage, int64, error) {
	snap, err := c.Subscribe(ctx, uri, nil)
	return snap.State, snap.FromSeq, err
}

// subscribeAt is subscribe for a mirror: the snapshot decoded into its
// state, at the time its frame was read off the socket.
func subscribeAt(ctx context.Context, c *ahpclient.Client, uri string) (*mirror, error) {
	snap, err := c.Subscribe(ctx, uri, nil)
	if err != nil {
		return nil, err
	}
	m := &mirror{c: c, uri: uri, last: snap.FromSeq, at: snap.At}
	if err := json.Unmarshal(snap.State, &m.st); err != nil {
		return nil, fmt.Errorf("changeset snapshot: %v", err)
	}
	return m, nil
}

// dial connects a client that keeps what it receives, for mirror.
func dial(ctx context.Context, url string) (*ahpclient.Client, error) {
	c, _, err := ahpclient.Dial(ctx, url, ahpclient.Options{Record: true})
	return c, err
}

type coldResult struct {
	// Each "ready" is when the frame that made the changeset ready with
	// every file was read off the socket, before the bench decoded it:
	// how long Go's encoding/json takes over megabytes of JSON is the
	// bench's, not the daemon's (a browser's JSON.parse is some ten
	// times faster). startToReadyDecoded is the same once decoded.
	subscribeToReady    time.Duration // subscribe request -> ready with every file
	startToReady        time.Duration // process start -> ready
	startToReadyDecoded time.Duration // the same, the frames decoded and applied
	startToCatalogue    time.Duration // process start -> session catalogue received
	second              time.Duration // a second client's subscribe -> ready with every file
	later               time.Duration // the same for the clients after it, median
	laterRaw            time.Duration // the same, the snapshot read to its last byte and not decoded, median
	rss                 int64         // VmHWM, KiB
	rssFile             int64         // RssFile at ready, KiB: mapped files
	files               []protocol.ChangesetFile
	// startToListed is process start -> the first state listing every
	// file, whatever its status (firstStatus): on a restart, a view kept
	// from the last run may be on the wire before it is verified.
	startToListed time.Duration
	firstStatus   string
	cpuToReady    time.Duration // the daemon's CPU time at ready (user + system)
}

// coldRun connects to a fresh daemon, subscribes to the uncommitted
// changeset and waits until it is ready with every expected file.
func coldRun(ctx context.Context, d *daemon, r *repo) (*mirror, coldResult, error) {
	var res coldResult
	c, err := dial(ctx, d.url)
	if err != nil {
		return nil, res, fmt.Errorf("dial: %v", err)
	}
	d.client = c
	if _, err := c.Initialize(ctx, "bench", nil); err != nil {
		return nil, res, fmt.Errorf("initialize: %v", err)
	}
	var list protocol.ListSessionsResult
	if err := c.Call(ctx, protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &list); err != nil {
		return nil, res, fmt.Errorf("listSessions: %v", err)
	}
	if len(list.Items) != 1 {
		return nil, res, fmt.Errorf("listSessions: %d sessions, want 1", len(list.Items))
	}
	tmpl, err := uncommittedTemplate(ctx, c, list.Items[0].Resource)
	if err != nil {
		return nil, res, err
	}
	res.startToCatalogue = time.Since(d.started)
	t, err := uritemplate.Parse(tmpl)
	if err != nil {
		return nil, res, fmt.Errorf("catalogue template %q: %v", tmpl, err)
	}
	uri, err := t.Expand(nil)
	if err != nil {
		return nil, res, err
	}

	want := map[string]bool{}
	for _, p := range r.expected() {
		want["file://"+r.dir+"/"+p] = false
	}
	start := time.Now()
	m, err := subscribeAt(ctx, c, uri)
	if err != nil {
		return nil, res, fmt.Errorf("subscribe %s: %v", uri, err)
	}
	listed := func(st *protocol.ChangesetState) bool {
		if len(st.Files) < len(want) {
			return false
		}
		n := 0
		for _, f := range st.Files {
			if _, ok := want[f.ID]; ok {
				n++
			}
		}
		return n == len(want)
	}
	if listed(&m.st) {
		res.startToListed, res.firstStatus = m.at.Sub(d.started), string(m.st.Status)
	}
	err = m.wait(ctx, fmt.Sprintf("uncommitted changeset ready with %d files", len(want)), func(_ *ahpclient.Envelope, st *protocol.ChangesetState) bool {
		if !listed(st) {
			return false
		}
		if res.startToListed == 0 {
			res.startToListed, res.firstStatus = m.at.Sub(d.started), string(st.Status)
		}
		return st.Status == protocol.StatusReady
	})
	if err != nil {
		return nil, res, err
	}
	res.startToReadyDecoded = time.Since(d.started)
	res.subscribeToReady = m.at.Sub(start)
	res.startToReady = m.at.Sub(d.started)
	res.cpuToReady, _ = processCPU(d.cmd.Process.Pid) // "—" in the table when unknown
	res.files = m.st.Files
	if res.rss, err = peakRSS(d.cmd.Process.Pid); err != nil {
		return nil, res, err
	}
	if res.rssFile, err = procStatus(d.cmd.Process.Pid, "RssFile"); err != nil {
		return nil, res, err
	}
	if res.second, err = secondSubscriber(ctx, d, uri, len(want)); err != nil {
		return nil, res, err
	}
	// Later subscribers to the unchanged state share the encoding the
	// second one caused.
	var later []time.Duration
	for range 3 {
		t, err := secondSubscriber(ctx, d, uri, len(want))
		if err != nil {
			return nil, res, err
		}
		later = append(later, t)
	}
	res.later = median(later)
	var bare []time.Duration
	for range 3 {
		t, err := rawSubscriber(ctx, d, uri)
		if err != nil {
			return nil, res, err
		}
		bare = append(bare, t)
	}
	res.laterRaw = median(bare)
	return m, res, nil
}

// rawSubscriber times a later subscriber's subscribe until the last byte
// of its snapshot is in, the snapshot checked to be ready from its first
// bytes and not decoded: what the daemon and the connection take,
// without the client's decoding of megabytes of JSON that the
// secondSubscriber rows include.
func rawSubscriber(ctx context.Context, d *daemon, uri string) (time.Duration, error) {
	r, err := dialRaw(ctx, d.url)
	if err != nil {
		return 0, fmt.Errorf("raw subscriber: dial: %v", err)
	}
	defer r.Close()
	if _, err := r.call(1, protocol.MethodInitialize, map[string]any{
		"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "bench-raw-subscriber",
	}); err != nil {
		return 0, fmt.Errorf("raw subscriber: initialize: %v", err)
	}
	start := time.Now()
	head, err := r.callHead(2, protocol.MethodSubscribe, map[string]any{"channel": uri})
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("raw subscriber: %v", err)
	}
	if !bytes.Contains(head, []byte(`"state":{"status":"ready"`)) {
		return 0, fmt.Errorf("raw subscriber: the snapshot is not ready: %.200s", head)
	}
	return took, nil
}

// secondSubscriber times what a second panel waits for while the daemon
// runs: a new connection's subscribe until its view is ready with every
// file, served from the state the first subscription keeps resident.
func secondSubscriber(ctx context.Context, d *daemon, uri string, files int) (time.Duration, error) {
	c, err := dial(ctx, d.url)
	if err != nil {
		return 0, fmt.Errorf("second subscriber: dial: %v", err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, "bench-second", nil); err != nil {
		return 0, fmt.Errorf("second subscriber: initialize: %v", err)
	}
	start := time.Now()
	m, err := subscribeAt(ctx, c, uri)
	if err != nil {
		return 0, fmt.Errorf("second subscriber: subscribe: %v", err)
	}
	if m.st.Status != protocol.StatusReady || len(m.st.Files) < files {
		err = m.wait(ctx, "second subscriber ready", func(_ *ahpclient.Envelope, st *protocol.ChangesetState) bool {
			return st.Status == protocol.StatusReady && len(st.Files) >= files
		})
	}
	return m.at.Sub(start), err
}

// uncommittedTemplate subscribes to the session and returns the URI
// template of its uncommitted changeset, waiting for the catalogue.
func uncommittedTemplate(ctx context.Context, c *ahpclient.Client, sessionURI string) (string, error) {
	raw, from, err := subscribe(ctx, c, sessionURI)
	if err != nil {
		return "", fmt.Errorf("subscribe %s: %v", sessionURI, err)
	}
	var st protocol.SessionState
	if err := json.Unmarshal(raw, &st); err != nil {
		return "", fmt.Errorf("session snapshot: %v", err)
	}
	cats := st.Changesets
	// The catalogue comes before session/ready (the baseline): a session
	// still starting may have it already.
	if len(cats) == 0 {
		err := c.Wait(ctx, "session catalogue", func() bool {
			for _, e := range c.Envelopes(sessionURI) {
				if a, ok := e.Action.Action.(protocol.SessionChangesetsChanged); ok && e.ServerSeq > from {
					cats = a.Changesets
					return true
				}
			}
			return false
		})
		if err != nil {
			return "", err
		}
	}
	for _, cs := range cats {
		if cs.ChangeKind == "uncommitted" {
			return cs.URITemplate, nil
		}
	}
	return "", fmt.Errorf("session catalogue has no uncommitted changeset: %+v", cats)
}

// checkStats compares the daemon's per-file counts with git's numstat; it
// returns how many modified files agree exactly.
func checkStats(r *repo, files []protocol.ChangesetFile, numstat map[string][2]int) (agree int, diffs []string) {
	for _, f := range files {
		rel := strings.TrimPrefix(f.ID, "file://"+r.dir+"/")
		g, ok := numstat[rel]
		if !ok {
			continue
		}
		if f.Edit.Diff != nil && f.Edit.Diff.Added != nil && f.Edit.Diff.Removed != nil &&
			*f.Edit.Diff.Added == g[0] && *f.Edit.Diff.Removed == g[1] {
			agree++
		} else if len(diffs) < 5 {
			ours := "no counts"
			if d := f.Edit.Diff; d != nil && d.Added != nil && d.Removed != nil {
				ours = fmt.Sprintf("+%d -%d", *d.Added, *d.Removed)
			}
			diffs = append(diffs, fmt.Sprintf("%s: ours %s, git +%d -%d", rel, ours, g[0], g[1]))
		}
	}
	return agree, diffs
}

// measureSaves rewrites one tracked file n times and times each save until
// the fileSet carrying the new blob arrives.
// saveLog, when set (-save-log), gets a line per timed save: its start
// in Unix milliseconds, its duration in milliseconds, and the channel.
var saveLog io.Writer

func measureSaves(ctx context.Context, m *mirror, r *repo, n int) ([]time.Duration, error) {
	path := filepath.Join(r.dir, filepath.FromSlash(r.saveFile))
	id := "file://" + r.dir + "/" + r.saveFile
	base, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for i := range n {
		content := append(bytes.Clone(base), fmt.Sprintf("// save %d at %d\n", i, time.Now().UnixNano())...)
		oid, err := hashObject(r.dir, content)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return nil, err
		}
		var got time.Duration
		err = m.wait(ctx, fmt.Sprintf("fileSet for save %d of %s", i, r.saveFile), func(e *ahpclient.Envelope, _ *protocol.ChangesetState) bool {
			if e == nil {
				return false
			}
			if fs, ok := e.Action.Action.(protocol.ChangesetFileSet); ok && fs.File.ID == id &&
				fs.File.Edit.After != nil && fs.File.Edit.After.Content.Nonce == oid {
				got = time.Since(start)
				return true
			}
			return false
		})
		if err != nil {
			return nil, err
		}
		out = append(out, got)
		if saveLog != nil {
			fmt.Fprintf(saveLog, "%d %.2f %s\n", start.UnixMilli(), float64(got.Microseconds())/1000, m.uri)
		}
		// Let the refresh finish and the watcher settle before the next save.
		if err := m.wait(ctx, "ready after save", func(_ *ahpclient.Envelope, st *protocol.ChangesetState) bool {
			return st.Status == protocol.StatusReady
		}); err != nil {
			return nil, err
		}
		time.Sleep(300 * time.Millisecond)
	}
	return out, nil
}

func hashObject(dir string, content []byte) (string, error) {
	cmd := gitCmd(dir, "hash-object", "--stdin")
	cmd.Stdin = bytes.NewReader(content)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git hash-object: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ---- one large file ----

type bigResult struct {
	ours, git          []time.Duration
	allocs, allocBytes uint64 // per Compare
	oursStat, gitStat  [2]int
	fallback, precise  bool
}

// measureBigDiff diffs an n-line file against a copy with 1% of its line
// positions changed (half replaced, a quarter deleted, a quarter inserted).
func measureBigDiff(work string, n, runs int) (*bigResult, error) {
	rng := rand.New(rand.NewPCG(3, 4))
	old := codeFile(rng, "big", n)
	var edited []string
	for _, l := range old {
		if rng.IntN(100) != 0 {
			edited = append(edited, l)
			continue
		}
		switch rng.IntN(4) {
		case 0, 1:
			edited = append(edited, fmt.Sprintf("\tx ^= %d // changed", rng.IntN(1e6)))
		case 2: // deleted
		default:
			edited = append(edited, fmt.Sprintf("\tx |= %d // inserted", rng.IntN(1e6)), l)
		}
	}
	a, b := joinLines(old), joinLines(edited)
	pa, pb := filepath.Join(work, "big.old.go"), filepath.Join(work, "big.new.go")
	if err := os.WriteFile(pa, a, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(pb, b, 0o644); err != nil {
		return nil, err
	}
	res := &bigResult{}
	cmp := func() changeset.Result {
		return changeset.Compare(&changeset.Side{Path: "big.go", Content: a}, &changeset.Side{Path: "big.go", Content: b}, changeset.Options{})
	}
	cmp() // warm-up
	for range runs {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		start := time.Now()
		r := cmp()
		res.ours = append(res.ours, time.Since(start))
		runtime.ReadMemStats(&m1)
		res.allocs, res.allocBytes = m1.Mallocs-m0.Mallocs, m1.TotalAlloc-m0.TotalAlloc
		res.oursStat, res.fallback, res.precise = [2]int{r.Added, r.Removed}, r.Fallback, r.Precise

		d, _, out, err := timeGit(work, true, "diff", "--no-index", "--numstat", pa, pb)
		if err != nil {
			return nil, err
		}
		res.git = append(res.git, d)
		for _, v := range parseNumstat(out) {
			res.gitStat = v
		}
	}
	return res, nil
}

// nodeResult is what a JavaScript client waits for as a later subscriber
// (bench/later.mjs): the reply received, then parsed.
type nodeResult struct {
	receive, parse []time.Duration
	bytes          int
}

// measureNode runs bench/later.mjs against the daemon, whose changeset at
// uri is resident. It returns nil, with the reason, when Node or the ws
// package (npm ci --prefix test/node) is missing.
func measureNode(ctx context.Context, d *daemon, uri string, files, runs int) (*nodeResult, string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, "node not found", nil
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, "", err
	}
	if _, err := os.Stat(filepath.Join(root, "test", "node", "node_modules", "ws")); err != nil {
		return nil, "ws missing: npm ci --prefix test/node", nil
	}
	out, err := exec.CommandContext(ctx, node, filepath.Join(root, "bench", "later.mjs"), d.url, uri, strconv.Itoa(files), strconv.Itoa(runs)).CombinedOutput()
	if err != nil {
		return nil, "", fmt.Errorf("node bench/later.mjs: %v\n%s", err, out)
	}
	var raw struct {
		Receive, Parse []float64
		Bytes          int
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, "", fmt.Errorf("node bench/later.mjs: %v: %s", err, out)
	}
	ms := func(v []float64) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x*float64(time.Millisecond)))
		}
		return d
	}
	return &nodeResult{receive: ms(raw.Receive), parse: ms(raw.Parse), bytes: raw.Bytes}, "", nil
}

// burstProfiles is the -burst-profiles directory, "" for none.
var burstProfiles string

// burstProfiled, if set, is called as a burst's profile starts and as it
// ends: a daemon built to profile a part of its run hears of it there.
var burstProfiled func(d *daemon)

// profileBurst starts a CPU profile of the bench's own process, its
// subscribers' reading, for a burst under subs subscribers, written to
// -burst-profiles/bench-burst<subs>.cpu.prof; the function it returns
// stops it (once; later calls do nothing).
func profileBurst(d *daemon, subs int) (func(), error) {
	return profilePart(d, fmt.Sprintf("burst%d", subs))
}

// profilePart is profileBurst for the part of the bench name names.
func profilePart(d *daemon, name string) (func(), error) {
	if burstProfiles == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(burstProfiles, "bench-"+name+".cpu.prof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	if burstProfiled != nil {
		burstProfiled(d)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if burstProfiled != nil {
				burstProfiled(d)
			}
			pprof.StopCPUProfile()
			f.Close()
		})
	}, nil
}
