package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// A goroutine that panics is recovered: its owner logs the panic with
// its stack, hands it on as an error, and still waits for the others.
func TestGoroutinesRecoverAndWait(t *testing.T) {
	var logged bytes.Buffer // read after Wait; slog serializes the writes
	g := &goroutines{log: slog.New(slog.NewTextHandler(&logged, nil))}
	release := make(chan struct{})
	finished := false
	boom := g.Go("boom", func() error { panic("the sky fell") })
	slow := g.Go("slow", func() error {
		<-release // still running when boom has panicked
		finished = true
		return nil
	})
	failed := g.Go("failed", func() error { return errors.New("no") })

	if err := <-boom; err == nil || err.Error() != "boom panicked: the sky fell" {
		t.Errorf("boom: %v, want its panic as an error", err)
	}
	if err := <-failed; err == nil || err.Error() != "no" {
		t.Errorf("failed: %v, want its error", err)
	}
	close(release)
	g.Wait()
	if !finished {
		t.Error("Wait returned before the slow goroutine finished")
	}
	if err := <-slow; err != nil {
		t.Errorf("slow: %v", err)
	}
	out := logged.String()
	for _, want := range []string{"level=ERROR", "goroutine panicked", "goroutine=boom", "the sky fell", "goroutines_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not say %q:\n%s", want, out)
		}
	}
}
