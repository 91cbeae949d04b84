package main

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// goroutines owns the goroutines the command starts: each runs through
// Go, which turns a panic into a logged error instead of a crash that
// skips the shutdown (the stores left open, daemon.json left behind), and
// Wait returns once all of them have. serve waits before it closes the
// stores they use.
type goroutines struct {
	log *slog.Logger
	wg  sync.WaitGroup
}

// Go runs f in a goroutine named name (for the log). The returned channel,
// buffered so that nobody has to read it, receives f's error, or the panic
// as one, once f is done.
func (g *goroutines) Go(name string, f func() error) <-chan error {
	done := make(chan error, 1)
	g.wg.Go(func() {
		defer func() {
			if r := recover(); r != nil {
				err := fmt.Errorf("%s panicked: %v", name, r)
				g.log.Error("goroutine panicked", "goroutine", name, "err", err, "stack", string(debug.Stack()))
				done <- err
			}
		}()
		done <- f()
	})
	return done
}

// Wait waits for every goroutine started through Go.
func (g *goroutines) Wait() { g.wg.Wait() }
