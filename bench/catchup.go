package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/changesetd/changesetd/ahpclient"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/uritemplate"
)

// catchUpResult is a save's delay in one session, alone and while a
// slow reader of another session's large changeset is caught up again
// and again.
type catchUpResult struct {
	aFiles           int   // files of session A's changeset
	catchUps         int   // catch-ups the daemon made during B's busy saves
	dropped          int   // connections it closed for not reading (want 0)
	readBytes        int64 // what the slow readers took in
	rate             int64 // bytes a second the slow reader takes in
	marks            int   // review marks in A during the busy saves
	idleP99, busyP99 time.Duration
	idleP50, busyP50 time.Duration
	saves            int
}

// catchUpQueue is the send queue (messages) of the daemon the catch-up
// row runs on: small, so that a slow reader of a changeset that changes
// falls behind, and is caught up, within seconds rather than after
// thousands of messages.
const catchUpQueue = 16

// catchUpMarkEvery is how often a reviewer of session A's changeset
// marks a file reviewed, or not, while the slow reader is subscribed:
// each mark is published to every subscriber, and queues behind what
// the reader has not taken in yet. A mark, not an edit of a file: the
// row measures what catching the reader up costs, and an edit would add
// A's refresh of its changeset, a cost of its own (the save rows).
const catchUpMarkEvery = 100 * time.Millisecond

// measureCatchUp times saves in a second session (B, a small repository)
// with session A (a's tree, aFiles changed files) idle, and as many while
// a reader of A's changeset that takes in rate bytes a second is caught
// up: it subscribes, a reviewer keeps marking a file of A, the reader's
// backlog passes the daemon's send queue and is replaced by a fresh
// snapshot of A's whole list, again and again. The two conditions alternate in rounds of catchUpRound
// saves. The row runs on a daemon of its own, started on a's tree with a
// small send queue (catchUpQueue).
func measureCatchUp(ctx context.Context, bin, logLevel, work string, a *repo, aFiles, saves int, rate int64) (*catchUpResult, error) {
	rb, err := makeRepo(filepath.Join(work, "catchup-b"), 200, 2, 0)
	if err != nil {
		return nil, err
	}
	d, err := startDaemonWith(bin, a.dir, work, logLevel, 90, "catchup.stderr", "--send-queue", strconv.Itoa(catchUpQueue))
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			d.kill()
		}
	}()
	ma, _, err := coldRun(ctx, d, a)
	if err != nil {
		return nil, fmt.Errorf("first view of session A: %w", err)
	}
	aURI := ma.uri
	c := ma.c
	const sessB = "ahp-session:/5e55b0b0-0000-4000-8000-00000000000b"
	if err := c.Call(ctx, protocol.MethodCreateSession, map[string]any{"channel": sessB, "workingDirectories": []string{"file://" + rb.dir}}, nil); err != nil {
		return nil, fmt.Errorf("createSession for B: %w", err)
	}
	tmpl, err := uncommittedTemplate(ctx, c, sessB)
	if err != nil {
		return nil, err
	}
	t, err := uritemplate.Parse(tmpl)
	if err != nil {
		return nil, err
	}
	bURI, err := t.Expand(nil)
	if err != nil {
		return nil, err
	}
	raw, from, err := subscribe(ctx, c, bURI)
	if err != nil {
		return nil, err
	}
	mb := &mirror{c: c, uri: bURI, last: from}
	if err := json.Unmarshal(raw, &mb.st); err != nil {
		return nil, err
	}
	if err := mb.wait(ctx, "B ready", func(_ *ahpclient.Envelope, st *protocol.ChangesetState) bool {
		return st.Status == protocol.StatusReady
	}); err != nil {
		return nil, err
	}
	// The reviewer stays subscribed to A from here on, so that A stays
	// watched and current: idle, but not left and taken up again (a
	// changeset nobody watched is computed again when someone comes).
	reviewer, err := dialRaw(ctx, d.url)
	if err != nil {
		return nil, err
	}
	defer reviewer.Close()
	if _, err := reviewer.call(1, protocol.MethodInitialize, map[string]any{
		"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "bench-reviewer",
	}); err != nil {
		return nil, err
	}
	if err := reviewer.callDiscarding(2, protocol.MethodSubscribe, map[string]any{"channel": aURI}); err != nil {
		return nil, err
	}
	echoes := make(chan struct{})
	go func() { // the reviewer reads its echoes
		defer close(echoes)
		discardFrames(reviewer.ws)
	}()
	defer func() { reviewer.Close(); <-echoes }()
	if err := c.Unsubscribe(ctx, aURI); err != nil {
		return nil, err
	}
	res := &catchUpResult{aFiles: aFiles, saves: saves, rate: rate}
	// The two conditions alternate in rounds, so that a change in the
	// machine's load (two cores shared with other work) falls on both.
	var idle, busy []time.Duration
	stopProfile, err := profilePart(d, "catchup")
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	for len(busy) < saves {
		n := min(catchUpRound, saves-len(busy))
		times, err := measureSaves(ctx, mb, rb, n)
		if err != nil {
			return nil, fmt.Errorf("the second session's saves, the first idle: %w", err)
		}
		idle = append(idle, times...)
		if times, err = savesDuringCatchUps(ctx, d, mb, rb, a, aURI, reviewer, n, res); err != nil {
			return nil, err
		}
		busy = append(busy, times...)
	}
	res.idleP50, res.idleP99 = median(idle), percentile(idle, 99)
	res.busyP50, res.busyP99 = median(busy), percentile(busy, 99)
	stopProfile()
	stopped = true
	return res, d.stop() // SIGTERM: the daemon writes its profiles

}

// catchUpRound is how many saves are timed in each condition before the
// other's turn.
const catchUpRound = 20

// savesDuringCatchUps times n saves in the session mb mirrors while a
// slow reader is subscribed to A's changeset (aURI) and a reviewer marks
// one of its files every catchUpMarkEvery: the daemon replaces the
// reader's backlog with a snapshot of A's whole list, built off the
// sequencing lock and written at the reader's pace, as often as it falls
// behind. The round fails if no catch-up happened in it (it would have
// measured nothing) or the reader was dropped.
func savesDuringCatchUps(ctx context.Context, d *daemon, mb *mirror, rb *repo, a *repo, aURI string, reviewer *rawSub, n int, res *catchUpResult) ([]time.Duration, error) {
	before, err := daemonCounters(d)
	if err != nil {
		return nil, err
	}
	r, err := dialRawAt(ctx, d.url, res.rate)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := r.call(1, protocol.MethodInitialize, map[string]any{
		"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "bench-slow-reader",
	}); err != nil {
		return nil, err
	}
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": protocol.MethodSubscribe, "params": map[string]any{"channel": aURI}})
	if err != nil {
		return nil, err
	}
	if err := r.ws.WriteMessage(websocket.TextMessage, req); err != nil {
		return nil, err
	}
	var read atomic.Int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the slow reader: takes every frame in, at its pace, and drops it
		defer wg.Done()
		read.Add(discardFrames(r.ws))
	}()
	stop := make(chan struct{})
	var marks int
	marked := make(chan error, 1)
	go func() {
		defer wg.Done()
		var err error
		marks, err = markUntil(stop, reviewer, aURI, "file://"+a.dir+"/"+a.modified[0])
		marked <- err
	}()
	busy, err := measureSaves(ctx, mb, rb, n)
	close(stop)
	if merr := <-marked; err == nil {
		err = merr
	}
	r.Close()
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("the second session's saves during the first's catch-ups: %w", err)
	}
	after, err := daemonCounters(d)
	if err != nil {
		return nil, err
	}
	caught := int(after["changesetd_slow_client_catch_ups_total"] - before["changesetd_slow_client_catch_ups_total"])
	dropped := int(after["changesetd_slow_clients_dropped_total"] - before["changesetd_slow_clients_dropped_total"])
	res.catchUps += caught
	res.dropped += dropped
	res.marks += marks
	res.readBytes += read.Load()
	if caught == 0 {
		return nil, fmt.Errorf("no catch-up in a round of %d saves (%d review marks in A, %.1f MB read by the slow reader): the round measured nothing", n, marks, float64(read.Load())/1e6)
	}
	if dropped != 0 {
		return nil, fmt.Errorf("the daemon dropped %d slow readers during the catch-ups", dropped)
	}
	return busy, nil
}

// markUntil marks the file id of the changeset uri reviewed and not, in
// turn, every catchUpMarkEvery until stop is closed, as a reviewer going
// through it would. It returns the marks made.
func markUntil(stop <-chan struct{}, c *rawSub, uri, id string) (int, error) {
	tick := time.NewTicker(catchUpMarkEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return i, nil
		case <-tick.C:
		}
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": protocol.MethodDispatchAction, "params": map[string]any{
			"channel": uri, "clientSeq": i + 1,
			"action": map[string]any{"type": "changeset/filesReviewChanged", "files": []string{id}, "reviewed": i%2 == 0},
		}})
		if err != nil {
			return i, err
		}
		if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
			return i, err
		}
	}
}

// discardFrames reads every frame of ws to its end and drops it, until
// the connection ends, and returns the bytes read.
func discardFrames(ws *websocket.Conn) int64 {
	buf := make([]byte, 64<<10)
	var n int64
	for {
		_, rd, err := ws.NextReader()
		if err != nil {
			return n
		}
		k, err := io.CopyBuffer(io.Discard, rd, buf)
		n += k
		if err != nil {
			return n
		}
	}
}

// daemonCounters reads the unlabelled counters of the daemon's /metrics.
func daemonCounters(d *daemon) (map[string]float64, error) {
	u, err := url.Parse(d.url)
	if err != nil {
		return nil, err
	}
	resp, err := http.Get("http://" + u.Host + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}
