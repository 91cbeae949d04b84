package test

import (
	"strings"
	"sync"
)

// lockedWriter lets the daemon's stderr be read while it is written.
type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func (w *lockedWriter) contains(sub string) bool {
	return strings.Contains(w.String(), sub)
}
