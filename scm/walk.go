package scm

import (
	"context"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// dirListing is what a walker learnt about one directory: its files with
// their lstat data and the subdirectories to descend into. Listing runs in
// parallel; applying listings (index comparison, hashing, the stat cache)
// runs on the scanning goroutine, each listing as it comes.
type dirListing struct {
	rel    string
	ok     bool // listed (false: vanished or unreadable)
	nested bool // contains .git: an untracked nested repository
	items  []dirItem
}

// dirent is a directory entry as readDirents gives it.
type dirent struct {
	name string
	typ  fs.FileMode // fs.ModeDir, fs.ModeSymlink, 0 (regular) or fs.ModeIrregular
}

type dirItem struct {
	path   string
	ix     int // the index's entry; -1 when untracked
	st     fileStat
	gitDir bool // a directory recorded as a gitlink in the index
}

// dirHookKey is the context key of WithDirHook's function.
type dirHookKey struct{}

// WithDirHook returns a context under which the walk of a Status or a
// StatusPaths calls arm(rel, false) for each directory of the working
// tree (rel relative to the top, slash-separated; "" is the top) just
// before it reads it, and arm(rel, true) for a directory it does not
// read though what is below it is compared (a nested repository, a
// submodule's work tree) before it looks there. A file watcher armed
// this way, directory by directory as the walk goes, misses no change
// the walk did not see, without reading the tree a second time.
func WithDirHook(ctx context.Context, arm func(rel string, tree bool)) context.Context {
	return context.WithValue(ctx, dirHookKey{}, arm)
}

func dirHookOf(ctx context.Context) func(string, bool) {
	f, _ := ctx.Value(dirHookKey{}).(func(string, bool))
	return f
}

// maxWalkers bounds parallel directory listing. lstat on a warm dentry
// cache is CPU-bound kernel work, so more walkers than CPUs only adds
// contention; git's preload-index uses up to 20 threads for the same job.
const maxWalkers = 16

// walk lists rel and every non-ignored directory below it, in parallel,
// and applies each listing as it comes, on the calling goroutine. A
// listing is garbage once applied: the walk never holds the whole tree's
// listings at once (at 300,000 files they were some 35 MB, live until
// the last directory was read), and the comparisons, hashing included,
// run while the walkers still read.
func (s *scan) walk(rel string) error {
	workers := min(max(runtime.GOMAXPROCS(0), 1), maxWalkers)
	var (
		wg     sync.WaitGroup
		sem    = make(chan struct{}, workers)
		out    = make(chan *dirListing, 4*workers)
		failed atomic.Bool // apply failed: list nothing more
	)
	var visit func(dir string)
	visit = func(dir string) {
		defer wg.Done()
		if failed.Load() || s.ctx.Err() != nil {
			return
		}
		sem <- struct{}{}
		defer func() { <-sem }()
		if s.arm != nil {
			s.arm(dir, false)
		}
		l, subdirs := s.listDir(dir)
		// Counted before this one is done, so that the count reaches
		// zero only when every directory is listed.
		for _, sd := range subdirs {
			wg.Add(1)
			go visit(sd)
		}
		// Handed over while holding the walker's slot: when the
		// applying falls behind, the walkers wait, and at most
		// workers+cap(out) listings are held.
		out <- l
	}
	wg.Add(1)
	go visit(rel)
	// Owned by walk, which returns only once out is closed.
	go func() {
		wg.Wait()
		close(out)
	}()
	var err error
	for l := range out {
		if err != nil {
			continue // drained, so that every walker can end
		}
		if err = s.apply(l); err != nil {
			failed.Store(true)
		}
	}
	if cerr := s.ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// listDir reads one directory. It is called concurrently: it only reads
// s.idx and goes through s.rules, which locks.
func (s *scan) listDir(rel string) (*dirListing, []string) {
	l := &dirListing{rel: rel}
	abs := s.abs(rel)
	// Non-blocking: a directory replaced by a FIFO must not hang the scan.
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return l, nil
	}
	defer f.Close()
	ents, err := readDirents(f)
	if err != nil {
		return l, nil
	}
	var hasIgnore, hasAttrs bool
	for _, e := range ents {
		switch e.name {
		case ".gitignore":
			hasIgnore = true
		case ".gitattributes":
			hasAttrs = true
		case ".git":
			if rel != "" {
				l.nested = true
				return l, nil
			}
		}
	}
	l.ok = true
	pats := s.rules.ignorePatterns(rel, &hasIgnore)
	s.rules.attrPatterns(rel, &hasAttrs)
	st := newStatter(f, abs)
	l.items = make([]dirItem, 0, len(ents)) // one allocation, not one per doubling
	// The index's entries below this directory: each name is looked up
	// among them, not in the whole index.
	lo, hi := s.idx.below(rel)
	var subdirs []string
	for _, e := range ents {
		name := e.name
		if name == ".git" {
			continue
		}
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		t := e.typ
		ix := s.idx.findIn(p, lo, hi)
		var ie *idxEntry
		if ix >= 0 {
			ie = &s.idx.ents[ix]
		}
		switch {
		case t.IsDir():
			if ie != nil && ie.e.Mode == filemode.Submodule {
				l.items = append(l.items, dirItem{path: p, ix: ix, gitDir: true})
				continue
			}
			if ignored(pats, p, true) {
				continue
			}
			subdirs = append(subdirs, p)
		case t.IsRegular() || t&fs.ModeSymlink != 0:
			if ie == nil && ignored(pats, p, false) {
				continue
			}
			fst, err := st.lstat(name)
			if err != nil {
				continue // vanished since the listing
			}
			if fst.mode.IsDir() {
				// Replaced by a directory since the listing; rare enough
				// to leave to the next scan rather than recurse here.
				continue
			}
			l.items = append(l.items, dirItem{path: p, ix: ix, st: fst})
		}
	}
	return l, subdirs
}

// apply folds a listing into the scan. It runs on the scanning goroutine.
func (s *scan) apply(l *dirListing) error {
	if l.nested {
		if s.arm != nil {
			s.arm(l.rel, true)
		}
		s.addNested(l.rel)
		return nil
	}
	if !l.ok {
		return nil
	}
	s.visited[l.rel] = true
	s.dirOK[l.rel] = true
	for _, it := range l.items {
		var err error
		switch {
		case it.gitDir:
			if s.arm != nil {
				s.arm(it.path, true)
			}
			err = s.checkGitlink(it.path, it.ix, true, fileStat{})
		case it.ix >= 0:
			err = s.checkTracked(it.path, it.ix, it.st)
		default:
			s.addUntracked(it.path, it.st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
