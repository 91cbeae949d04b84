package fswatch

import (
	"errors"
	"path/filepath"
)

// armRequest is one Arm or ArmTree call, carried out by the run
// goroutine, which owns the watches.
type armRequest struct {
	dir  string // absolute, clean
	tree bool   // the directory and every directory below it
	done chan struct{}
}

// Arm watches dir, an absolute directory at or below Root, for a caller
// that is about to read it (Options.DeferTree): once Arm returns, a
// change in dir is reported, so that the caller's reading and the events
// together miss nothing. Directories outside Root, ignored ones and ones
// already watched need nothing. A directory that cannot be watched
// (removed meanwhile) is skipped, as the Watcher's own walk skips it; when
// the watch budget runs out, the Watcher falls back to polling and
// reports an Overflow, so that the caller looks at everything again.
func (w *Watcher) Arm(dir string) { w.request(dir, false) }

// ArmTree is Arm for dir and every directory below it, for a subtree the
// caller does not read itself (a nested repository, a submodule) but
// whose changes it wants reported.
func (w *Watcher) ArmTree(dir string) { w.request(dir, true) }

func (w *Watcher) request(dir string, tree bool) {
	r := armRequest{dir: filepath.Clean(dir), tree: tree, done: make(chan struct{})}
	select {
	case w.armCh <- r:
	case <-w.stop:
		return
	}
	select {
	case <-r.done:
	case <-w.stop:
	}
}

// arm carries out r. On the run goroutine.
func (w *Watcher) arm(r armRequest) {
	if w.fw == nil {
		return // polling, or Root is lost: nothing to watch
	}
	if r.dir != w.root {
		rel, inTree := w.rel(r.dir)
		if !inTree {
			return
		}
		if w.ignored(rel, true) {
			w.pruned[r.dir] = struct{}{}
			return
		}
	}
	var err error
	if r.tree {
		err = w.addTree(r.dir, false)
	} else {
		err = w.watch(r.dir)
	}
	var lim *errLimit
	switch {
	case errors.As(err, &lim):
		w.fallback(lim.reason, true)
	case err != nil:
		// Removed meanwhile, or unreadable: its removal is an event of
		// its parent's, and nothing below it is read.
		w.log.Debug("fswatch: cannot watch directory", "dir", r.dir, "err", err)
	}
}
