package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/metrics"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/scm/fswatch"
	"github.com/changesetd/changesetd/session"
)

// workspace adapts a scm.Repo, the file watcher and the diff engine to
// session.Workspace.
type workspace struct {
	repo *scm.Repo
	log  *slog.Logger
	head string
}

var _ session.Workspace = (*workspace)(nil)

func openWorkspace(log *slog.Logger) func(dir string) (session.Workspace, error) {
	return func(dir string) (session.Workspace, error) {
		repo, err := scm.Open(dir)
		if err != nil {
			return nil, err
		}
		w := &workspace{repo: repo, log: log.With("component", "workspace", "root", repo.Root())}
		// The first scan fills the stat cache and tells the session base.
		st, err := repo.Status(context.Background())
		if err != nil {
			return nil, err
		}
		w.head = st.HeadOID
		return w, nil
	}
}

func (w *workspace) Root() string { return w.repo.Root() }

// Head is the HEAD commit when the workspace was opened.
func (w *workspace) Head() string { return w.head }

func (w *workspace) ReadBlob(oid string) ([]byte, error) { return w.repo.ReadBlob(oid) }

// Changes computes the changes of q and diffs every changed file.
func (w *workspace) Changes(ctx context.Context, q session.Query) (*session.ChangeList, error) {
	scope := "full"
	if q.Paths != nil {
		scope = "paths"
	}
	defer func(start time.Time) { metrics.Scans.WithLabelValues(scope).Observe(time.Since(start).Seconds()) }(time.Now())
	var (
		changes  []scm.Change
		warnings []string
	)
	switch q.Kind {
	case protocol.KindUncommitted:
		if q.Paths != nil {
			cs, err := w.repo.StatusPaths(ctx, q.Paths)
			if err != nil {
				return nil, err
			}
			changes = cs
		} else {
			st, err := w.repo.Status(ctx)
			if err != nil {
				return nil, err
			}
			changes, warnings = st.Changes, st.Warnings
		}
	case protocol.KindBranch:
		base := q.Base
		if base == "" {
			b, err := w.repo.DefaultBaseBranch()
			if err != nil {
				return nil, fmt.Errorf("no base branch to compare with: %w", err)
			}
			base = b
		}
		st, err := w.repo.StatusAgainst(ctx, base)
		if err != nil {
			return nil, err
		}
		changes, warnings = st.Changes, st.Warnings
		if q.Paths != nil {
			changes = slices.DeleteFunc(changes, func(c scm.Change) bool { return !under(c.Path, q.Paths) })
		}
	default:
		return nil, fmt.Errorf("changeset kind %q is not computed from git", q.Kind)
	}

	list := &session.ChangeList{Warnings: warnings}
	var deleted, added []*changeset.Side
	var pairs [][2]*changeset.Side
	for _, c := range changes {
		old, err := w.oldSide(c)
		if err != nil {
			return nil, err
		}
		cur, err := w.newSide(c)
		if err != nil {
			return nil, err
		}
		switch {
		case old == nil && cur == nil:
			continue
		case old == nil:
			added = append(added, cur)
		case cur == nil:
			deleted = append(deleted, old)
		default:
			pairs = append(pairs, [2]*changeset.Side{old, cur})
		}
	}
	renamed, deleted, added := changeset.PairRenames(deleted, added)
	pairs = append(pairs, renamed...)
	for _, d := range deleted {
		pairs = append(pairs, [2]*changeset.Side{d, nil})
	}
	for _, a := range added {
		pairs = append(pairs, [2]*changeset.Side{nil, a})
	}
	for _, p := range pairs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		r := changeset.Compare(p[0], p[1], changeset.Options{})
		metrics.DiffSeconds.Observe(time.Since(start).Seconds())
		metrics.FilesDiffed.Inc()
		list.Files = append(list.Files, fileChange(r))
	}
	slices.SortFunc(list.Files, func(a, b session.FileChange) int { return strings.Compare(a.Path(), b.Path()) })
	return list, nil
}

func under(p string, scopes []string) bool {
	for _, s := range scopes {
		if s == "" || p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

func (w *workspace) oldSide(c scm.Change) (*changeset.Side, error) {
	if c.Head == nil {
		return nil, nil
	}
	s := &changeset.Side{Path: c.Head.Path, Mode: c.Head.Mode, OID: c.Head.OID}
	if c.Head.Mode == changeset.ModeGitlink {
		s.Content = []byte(c.Head.OID)
		return s, nil
	}
	b, err := w.repo.ReadBlob(c.Head.OID)
	if err != nil {
		return nil, fmt.Errorf("read %s at base: %w", c.Head.Path, err)
	}
	s.Content = b
	return s, nil
}

func (w *workspace) newSide(c scm.Change) (*changeset.Side, error) {
	if c.Work == nil {
		return nil, nil
	}
	s := &changeset.Side{Path: c.Work.Path, Mode: c.Work.Mode, OID: c.Work.OID}
	if c.Work.Mode == changeset.ModeGitlink {
		s.Content = []byte(c.Work.OID)
		return s, nil
	}
	b, mode, _, err := w.repo.ReadWorktreeCanonical(c.Work.Path)
	if err != nil {
		// The file went away between status and read: the next watcher
		// batch reports it; show it as absent now.
		w.log.Debug("file vanished while diffing", "path", c.Work.Path, "err", err)
		return nil, nil
	}
	s.Content, s.Mode = b, mode
	if s.OID == "" {
		s.OID = changeset.BlobOID(b)
	}
	return s, nil
}

// fileChange converts a diff result into the session's fact type. Counts
// follow the AIR rules and are left out when they cannot be exact.
func fileChange(r changeset.Result) session.FileChange {
	added, removed, ok := r.Counts()
	fc := session.FileChange{Binary: r.Binary, Precise: ok, Added: added, Removed: removed}
	side := func(s *changeset.Side, live bool) *session.Side {
		if s == nil {
			return nil
		}
		oid := s.OID
		if oid == "" {
			oid = changeset.BlobOID(s.Content)
		}
		mode := s.Mode
		if mode == 0 {
			mode = changeset.ModeRegular
		}
		return &session.Side{Path: s.Path, OID: oid, Mode: mode, Size: int64(len(s.Content)), Live: live}
	}
	fc.Old, fc.New = side(r.Old, false), side(r.New, true)
	fc.Meta = FileMeta(r, fc)
	return fc
}

// FileMeta builds a file's _meta: the AIR statistics where they are exact,
// and ours: operation, file type, blob ids and the patch.
func FileMeta(r changeset.Result, fc session.FileChange) protocol.Object {
	meta := protocol.Object{}
	for k, v := range r.AIRMeta() {
		meta[k] = v
	}
	own := protocol.Object{"operation": operation(r.Kind()), "fileType": fileType(r, fc)}
	if fc.Old != nil {
		own["oldBlob"] = fc.Old.OID
		own["oldMode"] = fmt.Sprintf("%06o", fc.Old.Mode)
	}
	if fc.New != nil {
		own["newBlob"] = fc.New.OID
		own["newMode"] = fmt.Sprintf("%06o", fc.New.Mode)
	}
	if r.Similarity > 0 && r.Kind() == changeset.Renamed {
		own["similarity"] = r.Similarity
	}
	if r.Patch != "" {
		own["patch"] = r.Patch
	}
	if r.PatchOmitted {
		own["patchOmitted"] = true
	}
	if r.TooLarge {
		own["tooLarge"] = true
	}
	meta["changesetd"] = own
	return meta
}

func operation(k changeset.Kind) string {
	switch k {
	case changeset.Created:
		return "add"
	case changeset.Deleted:
		return "delete"
	case changeset.Renamed:
		return "move"
	}
	return "modify"
}

func fileType(r changeset.Result, fc session.FileChange) string {
	s := fc.New
	if s == nil {
		s = fc.Old
	}
	switch {
	case s.Mode == changeset.ModeGitlink:
		return "submodule"
	case s.Mode == changeset.ModeSymlink:
		return "symlink"
	case r.Binary:
		return "binary"
	}
	return "text"
}

// Watch starts a recursive watcher on the working tree and the git files
// whose change moves the base (HEAD, index, refs).
func (w *workspace) Watch(onChange func(paths []string, all bool)) (session.Watcher, error) {
	gd := w.repo.GitDir()
	extra := []string{filepath.Join(gd, "HEAD"), filepath.Join(gd, "index"), filepath.Join(gd, "packed-refs"), filepath.Join(gd, "refs", "heads")}
	fw, err := fswatch.New(fswatch.Options{
		Root:   w.repo.Root(),
		Ignore: w.repo.IsIgnored,
		Extra:  extra,
		Logger: w.log,
	}, func(b fswatch.Batch) {
		if b.Overflow || len(b.Extra) > 0 {
			onChange(nil, true)
			return
		}
		if len(b.Paths) > 0 {
			onChange(b.Paths, false)
		}
	})
	if err != nil {
		return nil, err
	}
	mode := string(fw.Mode())
	metrics.WatcherMode.WithLabelValues(mode).Inc()
	if fw.Mode() != fswatch.ModeFsnotify {
		w.log.Warn("watching by polling", "reason", fw.ModeReason())
	}
	return &watch{fw: fw, mode: mode}, nil
}

// watch adapts a fswatch.Watcher to session.Watcher.
type watch struct {
	fw   *fswatch.Watcher
	mode string
}

func (w *watch) Mode() (string, string) { return string(w.fw.Mode()), w.fw.ModeReason() }

func (w *watch) Stop() {
	w.fw.Close()
	metrics.WatcherMode.WithLabelValues(w.mode).Dec()
}
