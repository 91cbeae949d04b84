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
// with session A idle, then again while A's changeset (uri, aFiles files)
// is built into a snapshot and sent, one after another, to clients that
// subscribe and leave: the work of catching a slow reader up.
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
	idle, err := measureSaves(ctx, mb, rb, saves)
	if err != nil {
		return nil, fmt.Errorf("the second session's saves, the first idle: %w", err)
	}
	res.idleP50, res.idleP99 = median(idle), percentile(idle, 99)

	// What a catch-up costs the daemon: A's whole list built into a
	// snapshot off the sequencing lock, encoded and written. A client
	// subscribes to A's changeset, takes the snapshot, leaves and comes
	// again, as long as B saves.
	stop := make(chan struct{})
	var snapshots atomic.Int64
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
			_, err = s.call(2, protocol.MethodSubscribe, map[string]any{"channel": aURI})
			s.Close()
			if err != nil {
				churned <- err
				return
			}
			snapshots.Add(1)
		}
	}()
	busy, err := measureSaves(ctx, mb, rb, saves)
	close(stop)
	if cerr := <-churned; err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("the second session's saves during the first's snapshots: %w", err)
	}
	res.busyP50, res.busyP99 = median(busy), percentile(busy, 99)
	res.catchUps = int(snapshots.Load())
	return res, nil
}
