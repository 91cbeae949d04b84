package source

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"slices"
	"strconv"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// The changeset operations' work on the tree. The session has validated
// the invocation and holds the working tree's lock while these run.

// tree is what the operations read and write: the file-level calls of a
// git workspace (editor.go), which confine every path to the working
// tree.
type tree interface {
	ReadWorktree(path string) ([]byte, uint32, error)
	WriteWorktree(path string, content []byte, mode uint32) error
	RemoveWorktree(path string) error
	StagePath(ctx context.Context, path string) error
	StageContent(ctx context.Context, path string, content []byte, mode uint32) error
	UnstagePath(ctx context.Context, path string) error
	IndexContent(path string) (content []byte, mode uint32, ok bool, err error)
	HeadContent(path string) (content []byte, mode uint32, ok bool, err error)
	HasStaged(ctx context.Context) (bool, error)
	StageAll(ctx context.Context) error
	commitIndex(ctx context.Context, message string) (string, error)
	// ReadBlob reads a side's stored content.
	ReadBlob(oid string) ([]byte, error)
}

var _ tree = (*gitWorkspace)(nil)

func (w *gitWorkspace) Revert(ctx context.Context, e session.Edit) (session.Undo, error) {
	u, err := revert(ctx, w, e)
	if err != nil {
		return nil, err
	}
	return u, nil
}

func (w *gitWorkspace) Stage(ctx context.Context, e session.Edit) error { return stage(ctx, w, e) }

func (w *gitWorkspace) Unstage(ctx context.Context, e session.Edit) error { return unstage(ctx, w, e) }

func (w *gitWorkspace) Commit(ctx context.Context, message string, fallback func() string) (string, string, error) {
	return commit(ctx, w, message, fallback)
}

func (w *gitWorkspace) Undo(ctx context.Context, u session.Undo) error {
	r, ok := u.(*undoRecord)
	if !ok || r.t != tree(w) {
		return protocol.Errorf(protocol.CodeInvalidParams, "there is no revert of this working tree to undo")
	}
	return undoRevert(w, r)
}

// undoRecord is what a revert replaced, to put it back.
type undoRecord struct {
	t     tree
	files []savedFile // as they were before the revert
	after []savedFile // as the revert left them
}

// Current is session.Undo: the files are as the revert left them.
func (u *undoRecord) Current() bool { return undoStillValid(u.t, u) }

type savedFile struct {
	path    string
	exists  bool
	content []byte
	mode    uint32
}

// blob reads a side's stored content.
func blob(t tree, sd *session.FileVersion) ([]byte, error) {
	if sd.Mode == changeset.ModeGitlink {
		return nil, errors.New("submodules are not rewritten by operations")
	}
	return t.ReadBlob(sd.OID)
}

// save reads a path's current state for undo.
func save(t tree, path string) (savedFile, error) {
	b, mode, err := t.ReadWorktree(path)
	if errors.Is(err, fs.ErrNotExist) {
		return savedFile{path: path}, nil
	}
	if err != nil {
		return savedFile{}, err
	}
	return savedFile{path: path, exists: true, content: b, mode: mode}, nil
}

func restore(t tree, f savedFile) error {
	if !f.exists {
		err := t.RemoveWorktree(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return t.WriteWorktree(f.path, f.content, f.mode)
}

// revert restores each target file to the changeset's before side, or for
// a range only the hunks that intersect it. For the uncommitted changeset
// the index entries go back to HEAD as well. It returns what it replaced.
func revert(ctx context.Context, t tree, e session.Edit) (*undoRecord, error) {
	u := &undoRecord{t: t}
	var paths []string
	for _, f := range e.Files {
		for _, p := range []string{f.Path(), f.OldPath()} {
			if p != "" && !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	for _, p := range paths {
		sf, err := save(t, p)
		if err != nil {
			return nil, err
		}
		u.files = append(u.files, sf)
	}
	for _, f := range e.Files {
		if e.Range != nil {
			if err := revertRange(t, e, f); err != nil {
				return nil, err
			}
			continue
		}
		if e.Index {
			if err := eachPath(f, func(p string) error { return t.UnstagePath(ctx, p) }); err != nil {
				return nil, err
			}
		}
		if f.New != nil && (f.Old == nil || f.Old.Path != f.New.Path) {
			if err := t.RemoveWorktree(f.New.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		if f.Old != nil {
			b, err := blob(t, f.Old)
			if err != nil {
				return nil, err
			}
			if err := t.WriteWorktree(f.Old.Path, b, f.Old.Mode); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range paths {
		sf, err := save(t, p)
		if err != nil {
			return nil, err
		}
		u.after = append(u.after, sf)
	}
	return u, nil
}

// selectHunks splits hunks into those intersecting r (0-based lines on the
// given side) and the rest.
func selectHunks(hunks []changeset.Hunk, r protocol.TextRange, side string) (in, out []changeset.Hunk) {
	for _, h := range hunks {
		start, n := h.NewStart, h.NewLines
		if side == "before" {
			start, n = h.OldStart, h.OldLines
		}
		// 0-based [lo, hi]; a side with no lines sits between two lines.
		lo, hi := start-1, start-1+n-1
		if n == 0 {
			lo, hi = start-1, start
		}
		if lo <= r.End.Line && hi >= r.Start.Line {
			in = append(in, h)
		} else {
			out = append(out, h)
		}
	}
	return in, out
}

// gitBlobID is the git object id of a blob with content b (SHA-1, or
// SHA-256 when like is a 64-digit id).
func gitBlobID(b []byte, like string) string {
	hdr := "blob " + strconv.Itoa(len(b)) + "\x00"
	if len(like) == 64 {
		h := sha256.New()
		h.Write([]byte(hdr))
		h.Write(b)
		return hex.EncodeToString(h.Sum(nil))
	}
	h := sha1.New()
	h.Write([]byte(hdr))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func revertRange(t tree, e session.Edit, f session.EditFile) error {
	if f.Old == nil || f.New == nil || f.Old.Path != f.New.Path {
		return protocol.Errorf(protocol.CodeInvalidParams, "a range revert needs a file modified in place; revert %s as a whole", f.Path())
	}
	old, err := blob(t, f.Old)
	if err != nil {
		return err
	}
	cur, mode, err := t.ReadWorktree(f.New.Path)
	if err != nil {
		return err
	}
	// The range was picked on the version last published; lines of any
	// other version are other lines. The check is on the very bytes the
	// edit is computed from.
	if id := gitBlobID(cur, f.New.OID); id != f.New.OID {
		return protocol.Errorf(protocol.CodeConflict, "%s changed on disk since the version the range refers to was published (%.12s, now %.12s); nothing was reverted: wait for the changeset to update and select the lines again", f.Path(), f.New.OID, id)
	}
	next, err := rangeEdit(old, cur, *e.Range, e.Side, false, "change of "+f.Path())
	if err != nil {
		return err
	}
	return t.WriteWorktree(f.New.Path, next, mode)
}

// rangeEdit diffs from against to and returns from with either only the
// hunks that intersect r applied (keepSelected) or all the others: the
// first stages a range, the second reverts one. what names the change for
// the error when no hunk intersects.
func rangeEdit(from, to []byte, r protocol.TextRange, side string, keepSelected bool, what string) ([]byte, error) {
	d := changeset.Compare(&changeset.Side{Path: "f", Content: from}, &changeset.Side{Path: "f", Content: to}, changeset.Options{})
	in, out := selectHunks(d.Hunks, r, side)
	if len(in) == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "no %s intersects lines %d-%d", what, r.Start.Line, r.End.Line)
	}
	if keepSelected {
		return changeset.Apply(from, in)
	}
	return changeset.Apply(from, out)
}

// eachPath calls fn for a file's old path (renames) and its path.
func eachPath(f session.EditFile, fn func(string) error) error {
	for _, p := range []string{f.OldPath(), f.Path()} {
		if p == "" {
			continue
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

func stage(ctx context.Context, t tree, e session.Edit) error {
	for _, f := range e.Files {
		if e.Range == nil {
			if err := eachPath(f, func(p string) error { return t.StagePath(ctx, p) }); err != nil {
				return err
			}
			continue
		}
		idx, _, _, err := t.IndexContent(f.Path())
		if err != nil {
			return err
		}
		cur, mode, err := t.ReadWorktree(f.Path())
		if err != nil {
			return err
		}
		next, err := rangeEdit(idx, cur, *e.Range, "after", true, "unstaged change of "+f.Path())
		if err != nil {
			return err
		}
		if err := t.StageContent(ctx, f.Path(), next, mode); err != nil {
			return err
		}
	}
	return nil
}

// unstage resets index entries to HEAD; for a range, the lines are those
// of the staged version.
func unstage(ctx context.Context, t tree, e session.Edit) error {
	for _, f := range e.Files {
		if e.Range == nil {
			if err := eachPath(f, func(p string) error { return t.UnstagePath(ctx, p) }); err != nil {
				return err
			}
			continue
		}
		head, _, _, err := t.HeadContent(f.Path())
		if err != nil {
			return err
		}
		idx, mode, ok, err := t.IndexContent(f.Path())
		if err != nil {
			return err
		}
		if !ok {
			return protocol.Errorf(protocol.CodeInvalidParams, "%s has nothing staged", f.Path())
		}
		next, err := rangeEdit(head, idx, *e.Range, "after", false, "staged change of "+f.Path()+" (lines of the staged version)")
		if err != nil {
			return err
		}
		if err := t.StageContent(ctx, f.Path(), next, mode); err != nil {
			return err
		}
	}
	return nil
}

// commit commits what is staged, or everything when nothing is, with msg
// or else fallback's message.
func commit(ctx context.Context, t tree, msg string, fallback func() string) (id, used string, err error) {
	staged, err := t.HasStaged(ctx)
	if err != nil {
		return "", "", err
	}
	if !staged {
		if err := t.StageAll(ctx); err != nil {
			return "", "", err
		}
	}
	if msg == "" {
		msg = fallback()
	}
	id, err = t.commitIndex(ctx, msg)
	if err != nil {
		return "", "", err
	}
	return id, msg, nil
}

// undoRevert puts back what a revert replaced, if nothing changed since.
func undoRevert(t tree, u *undoRecord) error {
	for _, want := range u.after {
		got, err := save(t, want.path)
		if err != nil {
			return err
		}
		if got.exists != want.exists || !bytes.Equal(got.content, want.content) || got.mode != want.mode {
			return protocol.Errorf(protocol.CodeInvalidParams, "%s changed since the revert; undo would lose that change", want.path)
		}
	}
	for _, f := range u.files {
		if err := restore(t, f); err != nil {
			return err
		}
	}
	return nil
}

// undoStillValid reports whether the files are as the revert left them.
func undoStillValid(t tree, u *undoRecord) bool {
	for _, want := range u.after {
		got, err := save(t, want.path)
		if err != nil || got.exists != want.exists || !bytes.Equal(got.content, want.content) || got.mode != want.mode {
			return false
		}
	}
	return true
}
