package main

import (
	"context"
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
const (
	trimAfter = 64 << 20        // bytes allocated since the last trim
	trimQuiet = 1 << 20         // at most this allocated in a tick counts as quiet
	trimTick  = 2 * time.Second // how often it looks
)

// trimmer decides when to return memory; allocated reads the bytes
// allocated so far, trim returns the freed memory.
type trimmer struct {
	allocated func() uint64
	trim      func()
	last      uint64 // allocated at the last trim
	prev      uint64 // allocated at the last tick
}

func newTrimmer() *trimmer {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	t := &trimmer{
		allocated: func() uint64 {
			metrics.Read(sample)
			return sample[0].Value.Uint64()
		},
		trim: debug.FreeOSMemory,
	}
	t.last = t.allocated()
	t.prev = t.last
	return t
}

// tick looks once: it trims when more than trimAfter was allocated since
// the last trim and less than trimQuiet since the last tick.
func (t *trimmer) tick() bool {
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
