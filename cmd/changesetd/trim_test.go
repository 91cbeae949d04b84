package main

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The trimmer returns memory once after a burst, when the daemon has gone
// quiet: not while it keeps allocating, and not again without a new burst.
func TestTrimmerTrimsOnceQuietAfterABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var allocated atomic.Uint64
		var trimmed atomic.Int32
		tr := &trimmer{allocated: allocated.Load, trim: func() { trimmed.Add(1) }}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go tr.run(ctx)
		step := func(alloc uint64) {
			allocated.Add(alloc)
			time.Sleep(trimTick)
			synctest.Wait()
		}
		// A burst over several ticks: 100 MiB a tick, never quiet.
		for range 5 {
			step(100 << 20)
		}
		if trims := trimmed.Load(); trims != 0 {
			t.Fatalf("%d trims while allocating, want none", trims)
		}
		step(0) // quiet
		if trims := trimmed.Load(); trims != 1 {
			t.Fatalf("%d trims once quiet after 500 MiB, want 1", trims)
		}
		for range 5 {
			step(100 << 10) // idle chatter
		}
		if trims := trimmed.Load(); trims != 1 {
			t.Fatalf("%d trims idling, want still 1", trims)
		}
		// A small burst: under trimAfter since the last trim.
		step(10 << 20)
		step(0)
		if trims := trimmed.Load(); trims != 1 {
			t.Fatalf("%d trims after a 10 MiB burst, want still 1", trims)
		}
		step(80 << 20)
		step(0)
		if trims := trimmed.Load(); trims != 2 {
			t.Fatalf("%d trims after another 90 MiB, want 2", trims)
		}
	})
}

// The soft memory limit is the budget while the live heap is at most
// three quarters of it, then twice the live heap.
func TestTrimmerKeepsTheLimitAtTwiceTheLiveHeap(t *testing.T) {
	var live atomic.Uint64
	var set atomic.Int64
	tr := &trimmer{allocated: func() uint64 { return 0 }, trim: func() {}, live: live.Load, setLimit: set.Store}
	for _, c := range []struct{ live, want uint64 }{
		{10 << 20, memoryBudget},
		{200 << 20, memoryBudget},
		{300 << 20, memoryBudget},
		{336 << 20, memoryBudget},
		{400 << 20, 800 << 20},
		{1 << 30, 2 << 30},
		{50 << 20, memoryBudget},
	} {
		live.Store(c.live)
		tr.tick()
		if got := set.Load(); got != int64(c.want) {
			t.Errorf("live heap %d MiB: limit %d MiB, want %d MiB", c.live>>20, got>>20, c.want>>20)
		}
	}
}
