package test

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/uritemplate"
)

// kill ends the daemon with SIGKILL: no shutdown code runs.
func (d *daemon) kill(t *testing.T) {
	t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case err := <-d.exited:
		d.exited <- err
	case <-time.After(20 * time.Second):
		t.Fatal("daemon did not die")
	}
}

func TestKillNineLosesNoAcknowledgedTurn(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	state := t.TempDir()
	d := startDaemonIn(t, state, repo)
	c := d.client(t, "agent")
	sessionURI := onlySession(t, c).Resource
	cat := catalogue(t, c, sessionURI)
	turnURI := func(id string) string {
		return expand(t, cat["turn"].URITemplate, uritemplate.Values{"turnId": id})
	}

	started := map[string]bool{} // acknowledged starts
	ended := map[string]bool{}   // acknowledged ends
	reference := map[string][]string{}
	n := 0
	for round := range 4 {
		// A few complete turns, acknowledged, whose changesets we record.
		for range 3 {
			n++
			id := fmt.Sprintf("r%d-t%d", round, n)
			if err := c.Call(ctx(t), protocol.MethodTurnStart, map[string]any{"channel": sessionURI, "turnId": id}, nil); err != nil {
				t.Fatal(err)
			}
			started[id] = true
			writeFile(t, repo, fmt.Sprintf("f%d.txt", n), fmt.Sprintf("%d\n", n))
			if err := c.Call(ctx(t), protocol.MethodTurnEnd, map[string]any{"channel": sessionURI, "turnId": id}, nil); err != nil {
				t.Fatal(err)
			}
			ended[id] = true
		}
		for id := range ended {
			if _, ok := reference[id]; !ok {
				reference[id] = changesetSummary(t, c, turnURI(id), repo)
			}
		}
		// Then a burst of boundaries, killed in the middle.
		var mu sync.Mutex
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%d-burst%d", round, i)
				if c.Call(ctx(t), protocol.MethodTurnStart, map[string]any{"channel": sessionURI, "turnId": id}, nil) != nil {
					return
				}
				mu.Lock()
				started[id] = true
				mu.Unlock()
				writeFile(t, repo, fmt.Sprintf("b%d-%d.txt", round, i), "x\n")
				if c.Call(ctx(t), protocol.MethodTurnEnd, map[string]any{"channel": sessionURI, "turnId": id}, nil) != nil {
					return
				}
				mu.Lock()
				ended[id] = true
				mu.Unlock()
			}
		}()
		time.Sleep(time.Duration(50+round*40) * time.Millisecond) // lets a few boundaries through; not an assertion
		d.kill(t)
		wg.Wait()
		c.Close()

		d = startDaemonIn(t, state, repo)
		c = d.client(t, fmt.Sprintf("agent-%d", round))
		done, active := chatTurns(t, c, sessionURI)
		all := append(slices.Clone(done), active)
		for id := range started {
			if !slices.Contains(all, id) {
				t.Fatalf("round %d: acknowledged turn start %s lost; turns after restart: %v", round, id, all)
			}
		}
		for id := range ended {
			if !slices.Contains(done, id) {
				t.Fatalf("round %d: acknowledged turn end %s lost; ended after restart: %v", round, id, done)
			}
		}
		for id, want := range reference {
			if got := changesetSummary(t, c, turnURI(id), repo); !slices.Equal(got, want) {
				t.Fatalf("round %d: turn %s changed across the crash:\n got %v\nwant %v", round, id, got, want)
			}
		}
		t.Logf("round %d: %d turns acknowledged, %d ended, all present after SIGKILL", round, len(started), len(ended))
	}
}

// TestKillNineWhileTakingBaseline: the daemon killed at points of a
// session's start, while its baseline snapshot is taken alongside the
// first view, starts again with a session whose baseline is whole: the
// one recorded, or a new one. The uncommitted changeset is what git says,
// and the session changeset (no edit since the start) is ready and empty,
// never an error about a missing object.
func TestKillNineWhileTakingBaseline(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("d%d/f%d.txt", i%10, i)] = fmt.Sprintf("file %d\n", i)
	}
	repo := gitRepo(t, files)
	var want []string
	for i := 0; i < 300; i += 3 {
		p := fmt.Sprintf("d%d/f%d.txt", i%10, i)
		writeFile(t, repo, p, fmt.Sprintf("file %d edited\n", i))
		want = append(want, "modify "+p+" +1 -1")
	}
	slices.Sort(want)
	state := t.TempDir()
	for _, delay := range []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond} {
		d := startDaemonIn(t, state, repo)
		c := d.client(t, "ide")
		cat := catalogue(t, c, onlySession(t, c).Resource)
		uncommitted := expand(t, cat[protocol.KindUncommitted].URITemplate, nil)
		c.Call(ctx(t), protocol.MethodSubscribe, map[string]any{"channel": uncommitted}, nil)
		time.Sleep(delay)
		d.kill(t)

		d = startDaemonIn(t, state, repo)
		c = d.client(t, "ide")
		cat = catalogue(t, c, onlySession(t, c).Resource)
		if got := changesetSummary(t, c, expand(t, cat[protocol.KindUncommitted].URITemplate, nil), repo); !slices.Equal(got, want) {
			t.Fatalf("killed %v after subscribing: uncommitted after restart = %v, want %v", delay, got, want)
		}
		if got := changesetSummary(t, c, expand(t, cat[protocol.KindSession].URITemplate, nil), repo); len(got) != 0 {
			t.Fatalf("killed %v after subscribing: session changeset after restart = %v, want none", delay, got)
		}
		d.kill(t)
	}
}
