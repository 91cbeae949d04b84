package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/changesetd/changesetd/ahpclient"
	"github.com/changesetd/changesetd/protocol"
)

// turnResult is the cost of turn boundaries on a large tree with a few
// dirty files, next to git status on the same tree.
type turnResult struct {
	dirty      int
	boundaries []time.Duration // each turnStart and turnEnd, as the agent sees it
	status     []time.Duration // git status --porcelain
}

// measureTurns resets the repository to HEAD, dirties `dirty` files,
// starts a daemon and times n turns (start and end), each after editing
// one of the dirty files, as an agent would between boundaries.
func measureTurns(bin string, r *repo, work, logLevel string, dirty, n, runs int) (*turnResult, error) {
	for _, args := range [][]string{{"reset", "-q", "--hard", "HEAD"}, {"clean", "-qfd"}} {
		if out, err := gitCmd(r.dir, args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("git %v: %v\n%s", args, err, out)
		}
	}
	files := r.modified
	if len(files) > dirty {
		files = files[:dirty]
	}
	edit := func(i int) error {
		p := filepath.Join(r.dir, filepath.FromSlash(files[i%len(files)]))
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, "// edit %d at %d\n", i, time.Now().UnixNano())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	for i := range files {
		if err := edit(i); err != nil {
			return nil, err
		}
	}
	res := &turnResult{dirty: len(files)}
	for range runs {
		d, _, _, err := timeGit(r.dir, true, "status", "--porcelain")
		if err != nil {
			return nil, err
		}
		res.status = append(res.status, d)
	}

	d, err := startDaemon(bin, r.dir, work, logLevel, 1000)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := dial(ctx, d.url)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, "bench-turns", nil); err != nil {
		return nil, err
	}
	session, err := waitSession(ctx, c)
	if err != nil {
		return nil, err
	}
	boundary := func(method string) (time.Duration, error) {
		start := time.Now()
		err := c.Call(ctx, method, map[string]any{"channel": session}, nil)
		return time.Since(start), err
	}
	// The first boundary after start-up may scan; it is not counted. A
	// session still taking its baseline answers with reason sessionStarting.
	for _, m := range []string{protocol.MethodTurnStart, protocol.MethodTurnEnd} {
		for {
			_, err := boundary(m)
			if protocol.ReasonOf(err) == protocol.ReasonSessionStarting {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("warm-up %s: %w", m, err)
			}
			break
		}
	}
	for i := range n {
		for _, m := range []string{protocol.MethodTurnStart, protocol.MethodTurnEnd} {
			if err := edit(i); err != nil {
				return nil, err
			}
			t, err := boundary(m)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m, err)
			}
			res.boundaries = append(res.boundaries, t)
		}
	}
	return res, nil
}

// waitSession returns the daemon's single session once it is ready.
func waitSession(ctx context.Context, c *ahpclient.Client) (string, error) {
	for {
		var list protocol.ListSessionsResult
		if err := c.Call(ctx, protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &list); err != nil {
			return "", err
		}
		if len(list.Items) == 1 {
			return list.Items[0].Resource, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
