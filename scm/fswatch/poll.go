package fswatch

import (
	"io/fs"
	"os"
	"path/filepath"
)

// fileStat is what polling compares per path, in the spirit of git's index
// stat data: a same-size rewrite with the mtime restored still changes ctime.
type fileStat struct {
	mtime int64 // nanoseconds
	ctime int64 // nanoseconds; 0 where unavailable
	size  int64
	ino   uint64 // 0 where unavailable
	mode  fs.FileMode
}

func statOf(fi fs.FileInfo) fileStat {
	s := fileStat{mtime: fi.ModTime().UnixNano(), size: fi.Size(), mode: fi.Mode()}
	s.ino, s.ctime = sysStat(fi)
	return s
}

// changed reports whether b differs from a in a way that matters: for
// directories only the type (their mtime changes with every entry, which is
// reported per entry anyway).
func (a fileStat) changed(b fileStat) bool {
	if a.mode.IsDir() && b.mode.IsDir() {
		return false
	}
	return a != b
}

// startPoll enters polling mode with a fresh snapshot, without reporting it.
func (w *Watcher) startPoll(reason string) {
	w.setStatus(ModePoll, reason)
	w.snap = w.walkSnapshot()
	w.extraSnap = w.extraSnapshot()
}

// poll takes a snapshot and reports the differences to the previous one.
func (w *Watcher) poll() {
	if same, _, err := w.checkRoot(); err != nil {
		w.rootLost(err)
		return
	} else if !same {
		// Replaced by another directory: the diff below still reports
		// every difference, so only the identity needs updating.
		if fi, err := os.Stat(w.root); err == nil {
			w.rootInfo = fi
		}
	}
	snap := w.walkSnapshot()
	if w.stopped() {
		return
	}
	for rel, s := range snap {
		if old, ok := w.snap[rel]; !ok || old.changed(s) {
			w.pend.addPath(rel)
		}
	}
	for rel := range w.snap {
		if _, ok := snap[rel]; !ok {
			w.pend.addPath(rel)
		}
	}
	w.snap = snap

	extra := w.extraSnapshot()
	for p, s := range extra {
		if old, ok := w.extraSnap[p]; !ok || old.changed(s) {
			w.markExtra(p)
		}
	}
	for p := range w.extraSnap {
		if _, ok := extra[p]; !ok {
			w.markExtra(p)
		}
	}
	w.extraSnap = extra
}

// markExtra reports the Extra path that p is or is under.
func (w *Watcher) markExtra(p string) {
	for _, e := range w.opts.Extra {
		if p == e || (len(p) > len(e) && p[:len(e)] == e && os.IsPathSeparator(p[len(e)])) {
			w.pend.addExtra(e)
		}
	}
}

// walkSnapshot stats every non-ignored path under Root. It gives up early
// (returning a partial map) when the Watcher is closing.
func (w *Watcher) walkSnapshot() map[string]fileStat {
	snap := map[string]fileStat{}
	n := 0
	_ = filepath.WalkDir(w.root, func(path string, d fs.DirEntry, err error) error {
		if n++; n%256 == 0 && w.stopped() {
			return filepath.SkipAll
		}
		if err != nil {
			return nil // vanished or unreadable: absent from the snapshot
		}
		rel, ok := w.rel(path)
		if !ok {
			return nil // Root itself
		}
		if w.ignored(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		snap[rel] = statOf(fi)
		return nil
	})
	return snap
}

// extraSnapshot stats the Extra paths, and everything under those that are
// directories.
func (w *Watcher) extraSnapshot() map[string]fileStat {
	snap := map[string]fileStat{}
	for _, e := range w.opts.Extra {
		_ = filepath.WalkDir(e, func(path string, d fs.DirEntry, err error) error {
			if err != nil || isSyncMarker(path) {
				return nil
			}
			if fi, err := d.Info(); err == nil {
				snap[path] = statOf(fi)
			}
			return nil
		})
	}
	return snap
}
