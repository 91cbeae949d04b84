package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/scm/fswatch"
	"github.com/changesetd/changesetd/scm/snapstore"
	"github.com/changesetd/changesetd/session"
)

// plainWorkspace is a working directory that is not a git repository. It
// has no HEAD or index, so it serves only what snapshots can: the session,
// turn and compare-turns changesets. A snapshot is the whole tree, less
// what a .gitignore ignores and the usual heavy directories, stored in the
// snapshot store like a git one.
type plainWorkspace struct {
	root  string
	snaps *snapstore.Store
	log   *slog.Logger

	snapMu sync.Mutex
	// known maps a path to its stat and blob id at the last snapshot, so a
	// snapshot reads only files that changed since.
	known map[string]statOID
}

type statOID struct {
	size  int64
	mtime int64
	ino   uint64
	mode  uint32
	oid   string
}

var _ session.Workspace = (*plainWorkspace)(nil)

// maxPlainFiles bounds a plain directory's snapshot. A directory with more
// files than this is more likely a home directory than a project.
const maxPlainFiles = 100_000

// heavyDirs are skipped in plain directories even without a .gitignore:
// dependencies, virtual environments and build output.
var heavyDirs = map[string]bool{
	"node_modules": true, ".venv": true, "venv": true, "__pycache__": true,
	"target": true, ".tox": true, ".mypy_cache": true, ".pytest_cache": true,
	".gradle": true, ".next": true, ".cache": true, ".git": true,
}

// openPlain opens dir as a plain workspace, refusing the directories that
// are too broad to snapshot.
func openPlain(dir string, snaps *snapstore.Store, log *slog.Logger) (*plainWorkspace, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	if home, err := os.UserHomeDir(); err == nil && (dir == home || dir == filepath.Dir(home)) || dir == "/" {
		return nil, fmt.Errorf("%s is not a git repository and too broad to snapshot: use a project directory", dir)
	}
	return &plainWorkspace{root: dir, snaps: snaps, log: log.With("component", "workspace", "root", dir), known: map[string]statOID{}}, nil
}

// Plain marks the workspace as not a git repository (see session.Plain).
func (w *plainWorkspace) Plain() bool { return true }

func (w *plainWorkspace) Root() string { return w.root }

func (w *plainWorkspace) ReadBlob(oid string) ([]byte, error) { return w.snaps.ReadBlob(oid) }

// Snapshot records the tree as it is now. Files whose stat is unchanged
// since the last snapshot are not read again.
func (w *plainWorkspace) Snapshot(ctx context.Context, track bool) (string, error) {
	w.snapMu.Lock()
	defer w.snapMu.Unlock()
	ig := newPlainIgnore(w.root)
	var changes []snapstore.Change
	seen := make(map[string]statOID, len(w.known))
	err := filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == w.root {
				return err
			}
			return nil // vanished or unreadable: absent from the snapshot
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p == w.root {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, w.root+string(filepath.Separator)))
		if ig.ignored(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if len(seen) >= maxPlainFiles {
			return fmt.Errorf("more than %d files in %s, which is not a git repository: make it one (git init) or ignore what is not the project in a .gitignore", maxPlainFiles, w.root)
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		mode := changeset.ModeRegular
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			mode = changeset.ModeSymlink
		case !info.Mode().IsRegular():
			return nil // sockets, devices, fifos
		case info.Mode()&0o111 != 0:
			mode = changeset.ModeExecutable
		}
		if info.Size() > maxSnapshotFile {
			w.log.Warn("file too large for a snapshot; left out", "path", rel, "size", info.Size())
			return nil
		}
		key := statOID{size: info.Size(), mtime: info.ModTime().UnixNano(), mode: mode}
		key.ino = inode(info)
		if k, ok := w.known[rel]; ok && k.size == key.size && k.mtime == key.mtime && k.ino == key.ino && k.mode == key.mode && w.snaps.Has(k.oid) {
			seen[rel] = k
			changes = append(changes, snapstore.Change{Path: rel, Mode: mode, OID: k.oid})
			return nil
		}
		var content []byte
		if mode == changeset.ModeSymlink {
			target, err := os.Readlink(p)
			if err != nil {
				return nil
			}
			content = []byte(filepath.ToSlash(target))
		} else if content, err = os.ReadFile(p); err != nil {
			return nil
		}
		key.oid = changeset.BlobOID(content)
		// A file written within the stat's time granularity may change
		// again unseen: do not trust its stat next time.
		if time.Since(info.ModTime()) < 2*time.Second {
			key.mtime = -1
		}
		seen[rel] = key
		changes = append(changes, snapstore.Change{Path: rel, Mode: mode, Content: content})
		return nil
	})
	if err != nil {
		return "", err
	}
	tree, err := w.snaps.Overlay(ctx, "", changes)
	if err != nil {
		return "", err
	}
	w.known = seen
	return tree, nil
}

// Changes serves the snapshot queries; the git kinds have nothing to show
// in a directory without a repository.
func (w *plainWorkspace) Changes(ctx context.Context, q session.Query) (*session.ChangeList, error) {
	if q.View != session.ViewTrees {
		return &session.ChangeList{}, nil
	}
	to, live := q.To, q.To == ""
	if live {
		t, err := w.Snapshot(ctx, false)
		if err != nil {
			return nil, err
		}
		to = t
	}
	diffs, err := w.snaps.DiffTrees(ctx, q.From, to)
	if err != nil {
		return nil, err
	}
	sides := make([][2]*changeset.Side, 0, len(diffs))
	ps := newPathScopes(q.Paths)
	for _, d := range diffs {
		if q.Paths != nil && !ps.covers(d.Path) {
			continue
		}
		old, err := w.side(d.Old)
		if err != nil {
			return nil, err
		}
		cur, err := w.side(d.New)
		if err != nil {
			return nil, err
		}
		sides = append(sides, [2]*changeset.Side{old, cur})
	}
	return diffAll(ctx, w.root, sides, q, func(*changeset.Side) bool { return live }, nil)
}

func (w *plainWorkspace) side(e *snapstore.Entry) (*changeset.Side, error) {
	if e == nil {
		return nil, nil
	}
	b, err := w.snaps.ReadBlob(e.OID)
	if err != nil {
		return nil, fmt.Errorf("read %s (%s): %w", e.Path, e.OID, err)
	}
	return &changeset.Side{Path: e.Path, Mode: e.Mode, OID: e.OID, Content: b}, nil
}

// Watch watches the tree, less what snapshots leave out.
func (w *plainWorkspace) Watch(onChange func(paths []string, all bool)) (session.Watch, error) {
	fw, err := fswatch.New(fswatch.Options{
		Root:   w.root,
		Ignore: newPlainIgnore(w.root).ignored,
		Quiet:  8 * time.Millisecond,
		Logger: w.log,
	}, func(b fswatch.Batch) { onChange(b.Paths, b.Overflow) })
	if err != nil {
		return nil, err
	}
	return plainWatcher{fw}, nil
}

// Close has nothing to release: a plain directory keeps no watcher of its
// own (snapshots compare stat data), and the watchers Watch returns are
// stopped by their callers.
func (w *plainWorkspace) Close() error { return nil }

type plainWatcher struct{ fw *fswatch.Watcher }

func (p plainWatcher) Mode() (string, string) { return string(p.fw.Mode()), p.fw.ModeReason() }
func (p plainWatcher) Stop()                  { _ = p.fw.Close() }

// plainIgnore applies the .gitignore files of a plain directory (each to
// its own directory and below, as git does) and skips heavyDirs.
type plainIgnore struct {
	root string
	mu   sync.Mutex
	dirs map[string][]gitignore.Pattern // by slash-separated dir, "" = root
}

func newPlainIgnore(root string) *plainIgnore {
	return &plainIgnore{root: root, dirs: map[string][]gitignore.Pattern{}}
}

func (ig *plainIgnore) ignored(rel string, isDir bool) bool {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		if heavyDirs[p] && (isDir || i < len(parts)-1) {
			return true
		}
		if strings.HasPrefix(p, ".changesetd-") {
			return true
		}
	}
	var ps []gitignore.Pattern
	for i := range parts {
		ps = append(ps, ig.patterns(path.Join(parts[:i]...))...)
	}
	return len(ps) > 0 && gitignore.NewMatcher(ps).Match(parts, isDir)
}

// patterns reads dir/.gitignore once.
func (ig *plainIgnore) patterns(dir string) []gitignore.Pattern {
	ig.mu.Lock()
	defer ig.mu.Unlock()
	if ps, ok := ig.dirs[dir]; ok {
		return ps
	}
	var ps []gitignore.Pattern
	b, err := os.ReadFile(filepath.Join(ig.root, filepath.FromSlash(dir), ".gitignore"))
	if err == nil {
		var domain []string
		if dir != "" {
			domain = strings.Split(dir, "/")
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
				continue
			}
			ps = append(ps, gitignore.ParsePattern(line, domain))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		slog.Debug("cannot read .gitignore", "dir", dir, "err", err)
	}
	ig.dirs[dir] = ps
	return ps
}

// notGit reports an error of scm.Open that means "not a repository".
func notGit(err error) bool { return errors.Is(err, git.ErrRepositoryNotExists) }
