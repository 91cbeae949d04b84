package source

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"lukechampine.com/blake3"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/session/ops"
)

// The workspace is the session's write side too: the operations
// (operations.go) are built on the file-level calls below, which confine
// every path to the working tree and give scm's refusals their protocol
// codes.
var _ session.Editor = (*gitWorkspace)(nil)

// opErr gives scm's refusals, and the file system's expected ones, their
// protocol codes and reasons.
func opErr(err error) error {
	var pe *protocol.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return err
	case errors.Is(err, scm.ErrOutsideWorktree):
		return &protocol.Error{Code: protocol.CodePermissionDenied, Message: err.Error()}
	case errors.Is(err, scm.ErrIndexLocked):
		return &protocol.Error{Code: protocol.CodeConflict, Message: "another git process holds .git/index.lock; try again when it has finished (" + err.Error() + ")", Data: map[string]any{"reason": protocol.ReasonIndexLocked}}
	case errors.Is(err, scm.ErrSigningRequired):
		return protocol.Errorf(protocol.CodeConflict, "%v; nothing was committed", err).WithReason(protocol.ReasonSigningRequired)
	case errors.Is(err, scm.ErrNoIdentity):
		return protocol.Errorf(protocol.CodeConflict, "%v; nothing was committed: set user.name and user.email", err).WithReason(protocol.ReasonNoIdentity)
	case errors.Is(err, scm.ErrNothingStaged):
		return &protocol.Error{Code: protocol.CodeInvalidParams, Message: "nothing to commit"}
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		return protocol.Errorf(protocol.CodeConflict, "the disk is full (%v); free some space and try again", err).WithReason(protocol.ReasonNoSpace)
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		return protocol.Errorf(protocol.CodePermissionDenied, "the file system refused the write (%v)", err).WithReason(protocol.ReasonPermission)
	case errors.Is(err, scm.ErrNotRegular) || strings.Contains(err.Error(), "not a file or symlink") || strings.Contains(err.Error(), "not a regular file"):
		return protocol.Errorf(protocol.CodeInvalidParams, "%v; operations read and write only regular files and symlinks", err).WithReason(protocol.ReasonNotRegularFile)
	case strings.Contains(err.Error(), "is a directory"):
		return protocol.Errorf(protocol.CodeInvalidParams, "%v; operations do not delete directories that are not new files of the changeset", err).WithReason(protocol.ReasonNotRegularFile)
	}
	return err
}

// worktreeOID is tree's: the blob id git would store for the file.
func (w *gitWorkspace) worktreeOID(ctx context.Context, path string) (string, bool, error) {
	oid, err := w.repo.HashWorktree(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, readErr(path, err)
	}
	return oid, true, nil
}

// viewStamp names HEAD (the ref it points to and the commit) and what the
// index records (scm.Repo.IndexDigest, kept while the index file's stat
// data is unchanged).
func (w *gitWorkspace) viewStamp() string {
	head, _ := os.ReadFile(filepath.Join(w.repo.GitDir(), "HEAD"))
	commit, _, err := w.repo.HeadTree()
	if err != nil {
		commit = "?" + err.Error()
	}
	return strings.TrimSpace(string(head)) + " " + commit + " " + w.indexDigest()
}

func (w *gitWorkspace) indexDigest() string {
	fi, err := os.Stat(filepath.Join(w.repo.GitDir(), "index"))
	if err != nil {
		return "none"
	}
	key := fmt.Sprintf("%d@%d/%d", fi.Size(), fi.ModTime().UnixNano(), inode(fi))
	o := &w.own
	o.mu.Lock()
	if o.digestKey == key {
		d := o.digest
		o.mu.Unlock()
		return d
	}
	o.mu.Unlock()
	d, err := w.repo.IndexDigest()
	if err != nil {
		return "?" + err.Error()
	}
	o.mu.Lock()
	o.digestKey, o.digest = key, d
	o.mu.Unlock()
	return d
}

// ownViews records the index writes of the operations themselves, by
// stamp before -> after.
type ownViews struct {
	mu   sync.Mutex
	next map[string]string
	// the index's digest and the stat data it was computed at
	digestKey, digest string
}

// maxOwnViews bounds the record: beyond it the oldest chains are
// forgotten, and a view that old is refused (the changeset has long been
// recomputed by then).
const maxOwnViews = 1000

func (w *gitWorkspace) ownIndexWrite(before, after string) {
	if before == after {
		return
	}
	o := &w.own
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.next == nil || len(o.next) >= maxOwnViews {
		o.next = map[string]string{}
	}
	o.next[before] = after
}

func (w *gitWorkspace) viewReaches(view, cur string) bool {
	o := &w.own
	o.mu.Lock()
	defer o.mu.Unlock()
	for range maxOwnViews {
		if view == cur {
			return true
		}
		n, ok := o.next[view]
		if !ok {
			return false
		}
		view = n
	}
	return false
}

func (w *gitWorkspace) staged(ctx context.Context) ([]scm.StagedChange, error) {
	cs, err := w.repo.Staged(ctx)
	return cs, opErr(err)
}

// inProgress names the git operation whose state files are in the git
// directory.
func (w *gitWorkspace) inProgress() string {
	for _, f := range []struct{ file, what string }{
		{"MERGE_HEAD", "merge"}, {"CHERRY_PICK_HEAD", "cherry-pick"}, {"REVERT_HEAD", "revert"},
		{"rebase-merge", "rebase"}, {"rebase-apply", "rebase"},
	} {
		if _, err := os.Lstat(filepath.Join(w.repo.GitDir(), f.file)); err == nil {
			return f.what
		}
	}
	return ""
}

// stampView marks the versions of a view that depends on HEAD and the
// index with its stamp, and the staged ones of the uncommitted view.
func (w *gitWorkspace) stampView(list *session.ChangeList, q session.Query, stamp string) {
	if list == nil || (q.View != protocol.KindUncommitted && q.View != protocol.KindBranch) {
		return
	}
	var sides []*session.FileVersion
	for _, fc := range list.Files {
		for _, sd := range []*session.FileVersion{fc.Old, fc.New} {
			if sd != nil {
				sd.View = stamp
				sides = append(sides, sd)
			}
		}
	}
	if q.View != protocol.KindUncommitted {
		return
	}
	// Whether each side's index entry differs from HEAD's, read for all
	// of them at once: one by one, a burst's ten thousand files cost a
	// lock and a check of HEAD and the index each.
	paths := make([]string, len(sides))
	for i, sd := range sides {
		paths[i] = sd.Path
	}
	for i, staged := range w.repo.StagedFlags(paths) {
		sides[i].Staged = staged
	}
}

// readHeld is tree's: what path holds now, for a guarded replace; a file
// that cannot be read is refused naming it and the cause.
func (w *gitWorkspace) readHeld(path string) (scm.Held, error) {
	h, err := w.repo.ReadHeld(path)
	return h, readErr(path, err)
}

// heldSize is tree's: scm.Repo.HeldSize.
func (w *gitWorkspace) heldSize(path string) (int64, error) {
	n, err := w.repo.HeldSize(path)
	return n, readErr(path, err)
}

// replace is tree's: scm.Repo.ReplaceWorktree, refusing with fileChanged
// a path that no longer holds want.
func (w *gitWorkspace) replace(path string, want, next scm.Held, pr *scm.Prepared) error {
	err := w.repo.ReplacePrepared(path, want, next, pr)
	if errors.Is(err, scm.ErrChanged) {
		return protocol.Errorf(protocol.CodeConflict, "%s changed while the operation ran; it was left as it is (%v)", path, err).WithReason(protocol.ReasonFileChanged)
	}
	return opErr(err)
}

// prepare is tree's: scm.Repo.PrepareWrites.
func (w *gitWorkspace) prepare(paths []string, next []scm.Held) ([]*scm.Prepared, error) {
	prs, err := w.repo.PrepareWrites(paths, next)
	return prs, opErr(err)
}

// discard is tree's: scm.Repo.DiscardPrepared.
func (w *gitWorkspace) discard(prs []*scm.Prepared) { w.repo.DiscardPrepared(prs) }

// indexEntry is tree's: the path's stage-0 index entry, without content.
func (w *gitWorkspace) indexEntry(path string) (ops.IndexEntry, error) {
	oid, mode, ok, err := w.repo.IndexBlob(path)
	if err != nil || !ok {
		return ops.IndexEntry{}, opErr(err)
	}
	return ops.IndexEntry{Exists: true, OID: oid, Mode: mode}, nil
}

// headEntry is tree's: HEAD's entry at path, as an index entry.
func (w *gitWorkspace) headEntry(path string) (ops.IndexEntry, error) {
	oid, mode, ok, err := w.repo.HeadBlob(path)
	if err != nil || !ok {
		return ops.IndexEntry{}, opErr(err)
	}
	return ops.IndexEntry{Exists: true, OID: oid, Mode: mode}, nil
}

// setIndex is tree's: the entries set in one index write.
func (w *gitWorkspace) setIndex(ctx context.Context, sets []scm.IndexSet) error {
	return opErr(w.repo.SetIndexEntries(ctx, sets))
}

// smudge is tree's: the bytes git checkout writes for a blob of path.
func (w *gitWorkspace) smudge(path string, blob []byte, oid string) ([]byte, error) {
	b, err := w.repo.Smudge(path, blob, oid)
	if errors.Is(err, scm.ErrFilterNotRun) {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "%v; nothing was changed: use git checkout for this file", err).WithReason(protocol.ReasonFilterNotRun)
	}
	return b, opErr(err)
}

// writeBlob is tree's.
func (w *gitWorkspace) writeBlob(content []byte) (string, error) { return w.repo.WriteBlob(content) }

// changedPaths is tree's: what a status of the session's directory lists.
func (w *gitWorkspace) changedPaths(ctx context.Context) ([]string, error) {
	st, err := w.status(ctx)
	if err != nil {
		return nil, opErr(err)
	}
	out := make([]string, 0, len(st.Changes))
	for _, c := range w.scoped(st.Changes) {
		out = append(out, c.Path)
	}
	return out, nil
}

// clean is tree's: what git stores for working-tree bytes of path.
func (w *gitWorkspace) clean(path string, b []byte) ([]byte, error) {
	return w.repo.Clean(path, b)
}

// readErr gives a failed read its protocol code, naming the file and the
// cause: a file the daemon may not read is unreadable, not a write
// refused.
func readErr(path string, err error) error {
	var pe *protocol.Error
	switch {
	case err == nil || errors.As(err, &pe):
		return err
	case errors.Is(err, fs.ErrPermission):
		return protocol.Errorf(protocol.CodePermissionDenied, "%s cannot be read (%v); nothing was changed: make it readable by the daemon's user", path, err).WithReason(protocol.ReasonUnreadable)
	case errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ESTALE) || errors.Is(err, syscall.ELOOP) || strings.Contains(err.Error(), "kept changing while it was read"):
		return protocol.Errorf(protocol.CodeConflict, "%s cannot be read (%v); nothing was changed", path, err).WithReason(protocol.ReasonUnreadable)
	}
	return opErr(err)
}

func (w *gitWorkspace) ReadWorktree(path string) ([]byte, uint32, error) {
	b, mode, err := w.repo.ReadWorktree(path)
	return b, mode, opErr(err)
}

func (w *gitWorkspace) WriteWorktree(path string, content []byte, mode uint32) error {
	return opErr(w.repo.WriteWorktree(path, content, mode))
}

func (w *gitWorkspace) RemoveWorktree(path string) error { return opErr(w.repo.RemoveWorktree(path)) }

func (w *gitWorkspace) StagePath(ctx context.Context, path string) error {
	return opErr(w.repo.StagePath(ctx, path))
}

func (w *gitWorkspace) StageContent(ctx context.Context, path string, content []byte, mode uint32) error {
	return opErr(w.repo.StageContent(ctx, path, content, mode))
}

func (w *gitWorkspace) UnstagePath(ctx context.Context, path string) error {
	return opErr(w.repo.UnstagePath(ctx, path))
}

func (w *gitWorkspace) IndexContent(path string) ([]byte, uint32, bool, error) {
	oid, mode, ok, err := w.repo.IndexBlob(path)
	if err != nil || !ok {
		return nil, mode, ok, opErr(err)
	}
	b, err := w.repo.ReadBlob(oid)
	return b, mode, true, err
}

func (w *gitWorkspace) HeadContent(path string) ([]byte, uint32, bool, error) {
	oid, mode, ok, err := w.repo.HeadBlob(path)
	if err != nil || !ok {
		return nil, mode, ok, opErr(err)
	}
	b, err := w.repo.ReadBlob(oid)
	return b, mode, true, err
}

func (w *gitWorkspace) HasStaged(ctx context.Context) (bool, error) { return w.repo.HasStaged(ctx) }

// StageAll stages every change under the session's directory (git add -A
// run there).
func (w *gitWorkspace) StageAll(ctx context.Context) error {
	if w.scope != "" {
		return opErr(w.repo.StagePath(ctx, w.scope))
	}
	return opErr(w.repo.StageAll(ctx))
}

// commitIndex commits what is staged.
func (w *gitWorkspace) commitIndex(ctx context.Context, message string) (string, error) {
	id, err := w.repo.Commit(ctx, message)
	return id, opErr(err)
}

var _ session.EditReader = (*gitWorkspace)(nil)

// Edited is session.EditReader: the path is re-read whatever its stat data
// says, and the next turn boundary re-checks it. The checksum is BLAKE3,
// as edit tools report it.
func (w *gitWorkspace) Edited(path string) (string, error) {
	w.repo.Forget(path)
	w.tr.mu.Lock()
	if w.tr.tracking {
		if w.tr.pending == nil {
			w.tr.pending = map[string]bool{}
		}
		w.tr.pending[path] = true
	}
	w.tr.mu.Unlock()
	b, _, err := w.repo.ReadWorktree(path)
	if err != nil {
		return "", err
	}
	sum := blake3.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// testGateEnv names the environment variable that stops an operation at
// one point, for the tests that act on the tree or kill the daemon there:
// "kept" (a revert's undo is stored, nothing written yet), "wrote" (its
// first path written), "indexed" (its index entries written, the undo not
// yet settled) or "commit" (a commit's view checked, nothing staged yet);
// then ':' and a file to create on arriving, and optionally ':' and a file
// whose appearance lets it go on. Without that second file it waits until
// the daemon stops. Unset, as outside those tests, it does nothing.
const testGateEnv = "CHANGESETD_TEST_REVERT_GATE"

func testGate(ctx context.Context, point string) error {
	v := os.Getenv(testGateEnv)
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ":")
	if len(parts) < 2 || parts[0] != point {
		return nil
	}
	if err := os.WriteFile(parts[1], []byte(point+"\n"), 0o644); err != nil {
		return fmt.Errorf("%s: %w", testGateEnv, err)
	}
	if len(parts) > 2 {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := os.Stat(parts[2]); err == nil {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("stopped at %s=%s: %w", testGateEnv, v, ctx.Err())
			case <-tick.C:
			}
		}
	}
	<-ctx.Done()
	return fmt.Errorf("stopped at %s=%s: %w", testGateEnv, v, ctx.Err())
}
