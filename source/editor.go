package source

import (
	"context"
	"encoding/hex"
	"errors"

	"lukechampine.com/blake3"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/session"
)

// The workspace is the session's write side too: the operations
// (operations.go) are built on the file-level calls below, which confine
// every path to the working tree and give scm's refusals their protocol
// codes.
var _ session.Editor = (*gitWorkspace)(nil)

// opErr gives scm's refusals their protocol codes.
func opErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, scm.ErrOutsideWorktree):
		return &protocol.Error{Code: protocol.CodePermissionDenied, Message: err.Error()}
	case errors.Is(err, scm.ErrIndexLocked):
		return &protocol.Error{Code: protocol.CodeConflict, Message: "another git process holds .git/index.lock; try again when it has finished (" + err.Error() + ")", Data: map[string]any{"reason": protocol.ReasonIndexLocked}}
	case errors.Is(err, scm.ErrNothingStaged):
		return &protocol.Error{Code: protocol.CodeInvalidParams, Message: "nothing to commit"}
	}
	return err
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
