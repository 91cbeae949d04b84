package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/changesetd/changesetd/ahpclient"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/uritemplate"
)

// catchUpResult is a save's delay in one session, alone and while
// another session's large changeset is snapshotted again and again.
type catchUpResult struct {
	aFiles           int // files of session A's changeset
	catchUps         int // A's snapshots sent during B's saves
	idleP99, busyP99 time.Duration
	idleP50, busyP50 time.Duration
	saves            int
}

// measureCatchUp times saves in a second session (B, a small repository)
// with session A idle, and as many while A's changeset (uri, aFiles
// files) is built into a snapshot and sent, one after another, to
// clients that subscribe and leave: the work of catching a slow reader
// up. The two alternate in rounds of catchUpRound saves.
func measureCatchUp(ctx context.Context, d *daemon, work string, a *repo, aURI string, aFiles, saves int) (*catchUpResult, error) {
	rb, err := makeRepo(filepath.Join(work, "catchup-b"), 200, 2, 0)
	if err != nil {
		return nil, err
	}
	c, err := dial(ctx, d.url)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, "bench-catchup", nil); err != nil {
		return nil, err
	}
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
	res := &catchUpResult{aFiles: aFiles, saves: saves}
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
		if times, err = savesDuringSnapshots(ctx, d, mb, rb, aURI, n, &res.catchUps); err != nil {
			return nil, err
		}
		busy = append(busy, times...)
	}
	res.idleP50, res.idleP99 = median(idle), percentile(idle, 99)
	res.busyP50, res.busyP99 = median(busy), percentile(busy, 99)
	return res, nil
}

// catchUpRound is how many saves are timed in each condition before the
// other's turn.
const catchUpRound = 20

// savesDuringSnapshots times n saves in the session mb mirrors while
// clients subscribe to the changeset aURI one after another, each taking
// its snapshot and leaving: what catching a slow reader up costs the
// daemon, A's whole list built into a snapshot off the sequencing lock,
// encoded and written. It adds the snapshots taken to snapshots.
func savesDuringSnapshots(ctx context.Context, d *daemon, mb *mirror, rb *repo, aURI string, n int, snapshots *int) ([]time.Duration, error) {
	stop := make(chan struct{})
	var taken atomic.Int64
	churned := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				churned <- nil
				return
			default:
			}
			s, err := dialRaw(ctx, d.url)
			if err != nil {
				churned <- err
				return
			}
			if _, err := s.call(1, protocol.MethodInitialize, map[string]any{
				"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": fmt.Sprintf("bench-catchup-%d", i),
			}); err != nil {
				s.Close()
				churned <- err
				return
			}
			err = s.callDiscarding(2, protocol.MethodSubscribe, map[string]any{"channel": aURI})
			s.Close()
			if err != nil {
				churned <- err
				return
			}
			taken.Add(1)
		}
	}()
	busy, err := measureSaves(ctx, mb, rb, n)
	close(stop)
	if cerr := <-churned; err == nil {
		err = cerr
	}
	*snapshots += int(taken.Load())
	if err != nil {
		return nil, fmt.Errorf("the second session's saves during the first's snapshots: %w", err)
	}
	return busy, nil
}
