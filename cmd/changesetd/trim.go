package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Returning freed memory. A burst (a checkout, a formatter over the tree)
// allocates hundreds of megabytes that are garbage once it is published;
// the runtime gives such memory back to the system only gradually, so
// an idle daemon's resident size stays near its last burst's for minutes.
// Once the daemon has gone quiet after allocating more than trimAfter,
// the trimmer collects and returns the freed memory at once: one
// collection, paid while nothing else runs.
//
// The trimmer also keeps the runtime's soft memory limit at memoryBudget
// while the live heap is at most three quarters of it, and at twice the
// live heap past that: a burst's garbage (a hundred large files diffed,
// a whole-changeset patch) is then collected before the daemon's memory
// passes its budget, where the collector's default pacing would let the
// heap reach twice its live size (a live heap of 300 MiB while a
// hundred 6 MiB files are diffed took the daemon to 554 MiB with the
// limit at twice it, 461 MiB at the budget); a daemon whose live heap is
// large (a tree of a million files) keeps the default's headroom.
// GOMEMLIMIT, when set, is left to the runtime.
const (
	trimAfter    = 64 << 20        // bytes allocated since the last trim
	trimQuiet    = 1 << 20         // at most this allocated in a tick counts as quiet
	trimTick     = 2 * time.Second // how often it looks
	memoryBudget = 448 << 20       // the soft limit's floor, below the documented 512 MiB
)

// trimmer decides when to return memory; allocated reads the bytes
// allocated so far, trim returns the freed memory. live reads the live
// heap and setLimit sets the soft memory limit (both nil: no limit set).
type trimmer struct {
	allocated func() uint64
	trim      func()
	live      func() uint64
	setLimit  func(int64)
	last      uint64 // allocated at the last trim
	prev      uint64 // allocated at the last tick
}

func newTrimmer() *trimmer {
	read := func(name string) func() uint64 {
		sample := []metrics.Sample{{Name: name}}
		return func() uint64 {
			metrics.Read(sample)
			return sample[0].Value.Uint64()
		}
	}
	t := &trimmer{
		allocated: read("/gc/heap/allocs:bytes"),
		trim:      debug.FreeOSMemory,
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		t.live = read("/gc/heap/live:bytes")
		t.setLimit = func(n int64) { debug.SetMemoryLimit(n) }
		t.setLimit(memoryBudget)
	}
	t.last = t.allocated()
	t.prev = t.last
	return t
}

// limit is the soft memory limit for a live heap of live bytes.
func limit(live uint64) int64 {
	if live <= memoryBudget/4*3 {
		return memoryBudget
	}
	return int64(2 * live)
}

// tick looks once: it trims when more than trimAfter was allocated since
// the last trim and less than trimQuiet since the last tick.
func (t *trimmer) tick() bool {
	if t.setLimit != nil {
		t.setLimit(limit(t.live()))
	}
	now := t.allocated()
	quiet := now-t.prev <= trimQuiet
	t.prev = now
	if !quiet || now-t.last <= trimAfter {
		return false
	}
	t.trim()
	t.last = t.allocated()
	t.prev = t.last
	return true
}

// run ticks every trimTick until ctx ends.
func (t *trimmer) run(ctx context.Context) {
	tk := time.NewTicker(trimTick)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			t.tick()
		}
	}
}
