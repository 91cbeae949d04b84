package scm

import (
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// prefetchMin is how many tracked files a path-scoped status must
// re-check before they are read ahead on every core: a save's one or two
// are not worth the goroutines, a burst's thousands are (their lstat,
// open and read were half the wall time of its computation, on one core
// under the repository's lock).
const prefetchMin = 64

// fetched is one path of a status read ahead of its scan (prefetch).
type fetched struct {
	fi  fs.FileInfo
	err error // the lstat's
	st  fileStat
	// content is the file as read after that lstat; nil when it was
	// not read (not a regular file, too large, past the budget, or it
	// looked unchanged). at is when the lstat began: the stat cache's
	// racy rule counts from the read, not from when the scan hashes.
	content []byte
	at      time.Time
}

// prefetch lstats the tracked files among scopes (the scopes that name
// an index entry) on GOMAXPROCS goroutines, and reads those that look
// changed against their entry, so that the scan, which runs on one
// goroutine under r.mu, finds their stat and content ready. Nothing
// under a symbolic link or a file is read (realDir, decided first, on
// the scan's goroutine), nor more than s.keepLeft bytes in all, nor a
// file larger than s.keepMax. Whether a file changed is still the
// scan's to decide; it takes prefetched content only for a file whose
// stat it finds the same (hashFrom), and reads any other itself.
// r.mu must be held.
func (s *scan) prefetch(scopes []string) {
	var files []string
	for _, sc := range scopes {
		ie := s.idx.get(sc)
		if sc == "" || ie == nil || ie.conflict || ie.assumed || ie.e.SkipWorktree || ie.e.Mode == filemode.Submodule {
			continue
		}
		if s.realDir(parentDir(sc)) {
			files = append(files, sc)
		}
	}
	if len(files) < prefetchMin {
		return
	}
	out := make([]fetched, len(files))
	var left atomic.Int64
	left.Store(s.keepLeft)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) || s.ctx.Err() != nil {
					return
				}
				p, f := files[i], &out[i]
				f.at = time.Now()
				f.fi, f.err = os.Lstat(s.abs(p))
				if f.err != nil || !f.fi.Mode().IsRegular() {
					continue
				}
				f.st = statOf(f.fi)
				e := &s.idx.get(p).e
				if f.st.size > s.keepMax || (int64(e.Size) == f.st.size && e.modTime().UnixNano() == f.st.mtime) {
					continue // too large to keep, or unchanged by the look of it
				}
				if left.Add(-f.st.size) < 0 {
					continue
				}
				if b, err := readRegular(s.abs(p)); err == nil {
					f.content = b
				}
			}
		})
	}
	wg.Wait()
	s.pre = make(map[string]*fetched, len(files))
	for i, p := range files {
		if out[i].fi != nil || out[i].err != nil {
			s.pre[p] = &out[i]
		}
	}
}

// lstat is os.Lstat of the path rel, or its prefetched result.
func (s *scan) lstat(rel string) (fs.FileInfo, error) {
	if f := s.pre[rel]; f != nil {
		return f.fi, f.err
	}
	return os.Lstat(s.abs(rel))
}

// prefetched is the content read ahead for p, if its stat then was st,
// and when its reading began.
func (s *scan) prefetched(p string, st fileStat) ([]byte, time.Time, bool) {
	if f := s.pre[p]; f != nil && f.content != nil && f.st == st {
		return f.content, f.at, true
	}
	return nil, time.Time{}, false
}
