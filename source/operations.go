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
	"strings"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/session"
)

// The changeset operations' work on the tree. The session has validated
// the invocation and holds the repository's lock while these run.

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
	// worktreeOID is the blob id of the working-tree file at path (clean
	// filters applied); exists is false when there is none.
	worktreeOID(ctx context.Context, path string) (oid string, exists bool, err error)
	// viewStamp names the state of HEAD and the index now (see
	// session.FileVersion.View).
	viewStamp() string
	// ownIndexWrite records that the operation itself moved the index
	// from one stamp to another, so that views taken before it stay
	// valid; viewReaches reports whether stamp cur follows from view
	// through such writes only.
	ownIndexWrite(before, after string)
	viewReaches(view, cur string) bool
	// staged lists what a commit of the index records.
	staged(ctx context.Context) ([]scm.StagedChange, error)
	// inProgress names the merge, cherry-pick, revert or rebase in
	// progress, or is "".
	inProgress() string
}

var _ tree = (*gitWorkspace)(nil)

func (w *gitWorkspace) Revert(ctx context.Context, e session.Edit) (*session.Undo, error) {
	return revert(ctx, w, e)
}

func (w *gitWorkspace) Stage(ctx context.Context, e session.Edit) error { return stage(ctx, w, e) }

func (w *gitWorkspace) Unstage(ctx context.Context, e session.Edit) error { return unstage(ctx, w, e) }

func (w *gitWorkspace) Commit(ctx context.Context, e session.Edit, message string, fallback func([]session.CommitEntry) string) (string, string, error) {
	return commit(ctx, w, e, message, fallback)
}

func (w *gitWorkspace) Undo(ctx context.Context, u *session.Undo) error { return undoRevert(w, u) }

// UndoCurrent is session.Editor: the files are as the revert left them.
func (w *gitWorkspace) UndoCurrent(u *session.Undo) bool { return undoStillValid(w, u) }

// maxRangeFile is the largest file a range operation edits: the diff
// engine gives bigger files no hunks, so there are no lines to pick.
const maxRangeFile = changeset.DefaultMaxFileBytes

// blob reads a side's stored content.
func blob(t tree, sd *session.FileVersion) ([]byte, error) {
	if sd.Mode == changeset.ModeGitlink {
		return nil, nestedRepo(sd.Path)
	}
	return t.ReadBlob(sd.OID)
}

func nestedRepo(path string) error {
	return protocol.Errorf(protocol.CodeInvalidParams, "%s is a submodule or a nested repository, which operations do not rewrite or delete; nothing was changed: use git in it", path).WithReason(protocol.ReasonNestedRepository)
}

// save reads a path's current state for undo.
func save(t tree, path string) (session.SavedFile, error) {
	b, mode, err := t.ReadWorktree(path)
	if errors.Is(err, fs.ErrNotExist) {
		return session.SavedFile{Path: path}, nil
	}
	if err != nil {
		return session.SavedFile{}, err
	}
	return session.SavedFile{Path: path, Exists: true, Content: b, Mode: mode}, nil
}

func saveAll(t tree, paths []string) ([]session.SavedFile, error) {
	out := make([]session.SavedFile, 0, len(paths))
	for _, p := range paths {
		sf, err := save(t, p)
		if err != nil {
			return nil, err
		}
		out = append(out, sf)
	}
	return out, nil
}

func restore(t tree, f session.SavedFile) error {
	if !f.Exists {
		err := t.RemoveWorktree(f.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return t.WriteWorktree(f.Path, f.Content, f.Mode)
}

// checkView refuses an operation whose view of HEAD and the index is out
// of date: another program committed, checked out, stashed or staged
// since the changeset was computed, so its sides are not what git has now.
func checkView(t tree, e session.Edit) error {
	var views []string
	for _, f := range e.Files {
		for _, sd := range []*session.FileVersion{f.Old, f.New} {
			if sd != nil && sd.View != "" && !slices.Contains(views, sd.View) {
				views = append(views, sd.View)
			}
		}
	}
	if len(views) == 0 {
		return nil
	}
	cur := t.viewStamp()
	for _, v := range views {
		if !t.viewReaches(v, cur) {
			return protocol.Errorf(protocol.CodeConflict, "HEAD or the index changed since the changeset was computed (a commit, checkout, stash or add by another program); nothing was changed: wait for the changeset to update and try again").WithReason(protocol.ReasonViewChanged)
		}
	}
	return nil
}

// checkFile refuses a file that no longer has the content the changeset
// published for it: the operation would act on other bytes than the ones
// shown. A path the changeset shows absent must still be absent.
func checkFile(ctx context.Context, t tree, path string, want *session.FileVersion) error {
	oid, exists, err := t.worktreeOID(ctx, path)
	if err != nil {
		return err
	}
	switch {
	case want == nil && exists:
		return protocol.Errorf(protocol.CodeConflict, "%s was created since the changeset was computed; nothing was changed: wait for the changeset to update and try again", path).WithReason(protocol.ReasonFileChanged)
	case want != nil && !exists:
		return protocol.Errorf(protocol.CodeConflict, "%s was deleted since the changeset was computed; nothing was changed: wait for the changeset to update and try again", path).WithReason(protocol.ReasonFileChanged)
	case want != nil && oid != want.OID:
		return protocol.Errorf(protocol.CodeConflict, "%s changed on disk since the changeset was computed (published %.12s, now %.12s); nothing was changed: wait for the changeset to update and try again", path, want.OID, oid).WithReason(protocol.ReasonFileChanged)
	}
	return nil
}

// checkTargets checks every file of e before any is touched: the view is
// current, each file has its published content, no side is a nested
// repository, and a range's file is small enough to have hunks.
func checkTargets(ctx context.Context, t tree, e session.Edit) error {
	if err := checkView(t, e); err != nil {
		return err
	}
	for _, f := range e.Files {
		for _, sd := range []*session.FileVersion{f.Old, f.New} {
			if sd != nil && sd.Mode == changeset.ModeGitlink {
				return nestedRepo(sd.Path)
			}
		}
		if len(e.RangesOf(f)) > 0 {
			for _, sd := range []*session.FileVersion{f.Old, f.New} {
				if sd != nil && sd.Size > maxRangeFile {
					return protocol.Errorf(protocol.CodeInvalidParams, "%s is %d bytes, over the %d MiB up to which files are diffed into lines; select lines only in smaller files, or act on the whole file", sd.Path, sd.Size, maxRangeFile>>20).WithReason(protocol.ReasonTooLarge)
				}
			}
		}
		if f.New != nil {
			if err := checkFile(ctx, t, f.New.Path, f.New); err != nil {
				return err
			}
		}
		if p := f.OldPath(); p != "" || f.New == nil {
			if p == "" {
				p = f.Old.Path
			}
			if err := checkFile(ctx, t, p, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// revert restores each target file to the changeset's before side, or for
// a range only the hunks that intersect it. For the uncommitted changeset
// the index entries go back to HEAD as well. Every target is checked and
// every new content computed first; then the pending undo is handed to
// e.Keep, and only once it is kept does the first write happen. What a
// failed write leaves done is returned for undo with the error.
func revert(ctx context.Context, t tree, e session.Edit) (*session.Undo, error) {
	if err := checkTargets(ctx, t, e); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range e.Files {
		for _, p := range []string{f.Path(), f.OldPath()} {
			if p != "" && !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	before, err := saveAll(t, paths)
	if err != nil {
		return nil, err
	}
	u := &session.Undo{Files: before}
	if n := u.Bytes(); n > session.MaxUndoBytes {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "the revert would replace %d bytes, over the %d MiB kept to undo a revert; nothing was changed: revert fewer or smaller files", n, session.MaxUndoBytes>>20).WithReason(protocol.ReasonTooLarge)
	}
	plan, err := planRevert(t, e, before)
	if err != nil {
		return nil, err
	}
	if e.Keep != nil {
		planned := make([]session.SavedFile, len(paths))
		for i, p := range paths {
			planned[i] = plan[p]
		}
		if err := e.Keep(&session.Undo{Files: before, After: planned, Pending: true}); err != nil {
			return nil, err
		}
	}
	if err := testGate(ctx, "kept"); err != nil {
		return nil, err
	}
	indexBefore := t.viewStamp()
	werr := revertFiles(ctx, t, e, plan)
	if e.Index && e.Whole() {
		t.ownIndexWrite(indexBefore, t.viewStamp())
	}
	after, err := saveAll(t, paths)
	if err != nil {
		// What the revert left cannot be read back; the pending undo
		// (when kept) stays as it is.
		return nil, errors.Join(werr, err)
	}
	u.After = after
	return u, werr
}

// planRevert computes what each path of the revert is to hold: its before
// side, the range's other hunks applied, or absence. Paths it leaves
// alone keep what before saved.
func planRevert(t tree, e session.Edit, before []session.SavedFile) (map[string]session.SavedFile, error) {
	plan := make(map[string]session.SavedFile, len(before))
	for _, b := range before {
		plan[b.Path] = b
	}
	for _, f := range e.Files {
		if len(e.RangesOf(f)) > 0 {
			next, mode, err := revertRange(t, e, f)
			if err != nil {
				return nil, err
			}
			plan[f.New.Path] = session.SavedFile{Path: f.New.Path, Exists: true, Content: next, Mode: mode}
			continue
		}
		if f.New != nil && (f.Old == nil || f.Old.Path != f.New.Path) {
			plan[f.New.Path] = session.SavedFile{Path: f.New.Path}
		}
		if f.Old != nil {
			b, err := blob(t, f.Old)
			if err != nil {
				return nil, err
			}
			plan[f.Old.Path] = session.SavedFile{Path: f.Old.Path, Exists: true, Content: b, Mode: f.Old.Mode}
		}
	}
	return plan, nil
}

// revertFiles carries out a plan of planRevert, file by file: for the
// uncommitted changeset the index entries first, then the paths.
func revertFiles(ctx context.Context, t tree, e session.Edit, plan map[string]session.SavedFile) error {
	written := 0
	write := func(p string) error {
		if err := restore(t, plan[p]); err != nil {
			return err
		}
		written++
		if written == 1 {
			return testGate(ctx, "wrote")
		}
		return nil
	}
	for _, f := range e.Files {
		if len(e.RangesOf(f)) > 0 {
			if err := write(f.New.Path); err != nil {
				return err
			}
			continue
		}
		if e.Index {
			if err := eachPath(f, func(p string) error { return t.UnstagePath(ctx, p) }); err != nil {
				return err
			}
		}
		if f.New != nil && (f.Old == nil || f.Old.Path != f.New.Path) {
			if err := write(f.New.Path); err != nil {
				return err
			}
		}
		if f.Old != nil {
			if err := write(f.Old.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

// selectHunks splits hunks into those intersecting one of rs (0-based
// lines on the given side) and the rest.
func selectHunks(hunks []changeset.Hunk, rs []protocol.TextRange, side string) (in, out []changeset.Hunk) {
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
		if slices.ContainsFunc(rs, func(r protocol.TextRange) bool { return lo <= r.End.Line && hi >= r.Start.Line }) {
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

// revertRange computes a range revert's new content of its file, and the
// mode to write it with.
func revertRange(t tree, e session.Edit, f session.EditFile) ([]byte, uint32, error) {
	if f.Old == nil || f.New == nil || f.Old.Path != f.New.Path {
		return nil, 0, protocol.Errorf(protocol.CodeInvalidParams, "a range revert needs a file modified in place; revert %s as a whole", f.Path())
	}
	old, err := blob(t, f.Old)
	if err != nil {
		return nil, 0, err
	}
	cur, mode, err := t.ReadWorktree(f.New.Path)
	if err != nil {
		return nil, 0, err
	}
	if len(cur) > maxRangeFile {
		return nil, 0, protocol.Errorf(protocol.CodeInvalidParams, "%s is %d bytes, over the %d MiB up to which files are diffed into lines; act on the whole file", f.Path(), len(cur), maxRangeFile>>20).WithReason(protocol.ReasonTooLarge)
	}
	// The range was picked on the version last published; lines of any
	// other version are other lines. The check is on the very bytes the
	// edit is computed from.
	if id := gitBlobID(cur, f.New.OID); id != f.New.OID {
		return nil, 0, protocol.Errorf(protocol.CodeConflict, "%s changed on disk since the version the range refers to was published (%.12s, now %.12s); nothing was reverted: wait for the changeset to update and select the lines again", f.Path(), f.New.OID, id).WithReason(protocol.ReasonFileChanged)
	}
	next, err := rangeEdit(old, cur, e.RangesOf(f), e.Side, false, "change of "+f.Path())
	if err != nil {
		return nil, 0, err
	}
	return next, mode, nil
}

// rangeEdit diffs from against to and returns from with either only the
// hunks that intersect one of rs applied (keepSelected) or all the others:
// the first stages ranges, the second reverts them. what names the change
// for the error when no hunk intersects.
func rangeEdit(from, to []byte, rs []protocol.TextRange, side string, keepSelected bool, what string) ([]byte, error) {
	for _, b := range [][]byte{from, to} {
		if len(b) > maxRangeFile {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "the %s is in a version of %d bytes, over the %d MiB up to which files are diffed into lines; act on the whole file", what, len(b), maxRangeFile>>20).WithReason(protocol.ReasonTooLarge)
		}
	}
	d := changeset.Compare(&changeset.Side{Path: "f", Content: from}, &changeset.Side{Path: "f", Content: to}, changeset.Options{})
	in, out := selectHunks(d.Hunks, rs, side)
	if len(in) == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "no %s intersects lines %s", what, linesOf(rs))
	}
	if keepSelected {
		return changeset.Apply(from, in)
	}
	return changeset.Apply(from, out)
}

// linesOf names ranges' lines for an error: "3-5", "3-5, 9-9".
func linesOf(rs []protocol.TextRange) string {
	var out []string
	for _, r := range rs {
		out = append(out, strconv.Itoa(r.Start.Line)+"-"+strconv.Itoa(r.End.Line))
	}
	return strings.Join(out, ", ")
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

// indexWrite runs an index edit the operation makes itself, recording it
// so that it does not make the views taken before it out of date.
func indexWrite(t tree, fn func() error) error {
	before := t.viewStamp()
	err := fn()
	t.ownIndexWrite(before, t.viewStamp())
	return err
}

func stage(ctx context.Context, t tree, e session.Edit) error {
	if err := checkTargets(ctx, t, e); err != nil {
		return err
	}
	return indexWrite(t, func() error {
		for _, f := range e.Files {
			if len(e.RangesOf(f)) == 0 {
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
			next, err := rangeEdit(idx, cur, e.RangesOf(f), "after", true, "unstaged change of "+f.Path())
			if err != nil {
				return err
			}
			if err := t.StageContent(ctx, f.Path(), next, mode); err != nil {
				return err
			}
		}
		return nil
	})
}

// unstage resets index entries to HEAD; for a range, the lines are those
// of the staged version.
func unstage(ctx context.Context, t tree, e session.Edit) error {
	if err := checkTargets(ctx, t, e); err != nil {
		return err
	}
	return indexWrite(t, func() error {
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
			next, err := rangeEdit(head, idx, []protocol.TextRange{*e.Range}, "after", false, "staged change of "+f.Path()+" (lines of the staged version)")
			if err != nil {
				return err
			}
			if err := t.StageContent(ctx, f.Path(), next, mode); err != nil {
				return err
			}
		}
		return nil
	})
}

// commit commits what is staged, or everything when nothing is, with msg
// or else fallback's message, which is given exactly what is committed.
func commit(ctx context.Context, t tree, e session.Edit, msg string, fallback func([]session.CommitEntry) string) (id, used string, err error) {
	if op := t.inProgress(); op != "" {
		return "", "", protocol.Errorf(protocol.CodeConflict, "a %s is in progress; finish or abort it with git first, then commit", op).WithReason(protocol.ReasonMergeInProgress)
	}
	if err := checkView(t, e); err != nil {
		return "", "", err
	}
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
		changes, err := t.staged(ctx)
		if err != nil {
			return "", "", err
		}
		msg = fallback(commitEntries(t, changes))
	}
	id, err = t.commitIndex(ctx, msg)
	if err != nil {
		return "", "", err
	}
	return id, msg, nil
}

// commitEntries describes staged changes with their line counts; a side
// that cannot be read, or is binary or too large, counts no lines.
func commitEntries(t tree, changes []scm.StagedChange) []session.CommitEntry {
	out := make([]session.CommitEntry, 0, len(changes))
	for _, c := range changes {
		e := session.CommitEntry{Path: c.Path, Operation: "modify"}
		switch {
		case c.HeadOID == "":
			e.Operation = "add"
		case c.IndexOID == "":
			e.Operation = "delete"
		}
		side := func(oid string, mode uint32) *changeset.Side {
			if oid == "" {
				return nil
			}
			s := &changeset.Side{Path: c.Path, Mode: mode, OID: oid}
			if mode != changeset.ModeGitlink {
				s.Content, _ = t.ReadBlob(oid)
			}
			return s
		}
		r := changeset.Compare(side(c.HeadOID, c.HeadMode), side(c.IndexOID, c.IndexMode), changeset.Options{})
		if a, d, ok := r.Counts(); ok {
			e.Added, e.Removed = a, d
		}
		out = append(out, e)
	}
	return out
}

// undoRevert puts back what a revert replaced, if nothing changed since.
// A pending revert's files may each be as before it or as it was to leave
// them.
func undoRevert(t tree, u *session.Undo) error {
	for i, want := range u.After {
		got, err := save(t, want.Path)
		if err != nil {
			return err
		}
		if !asRevertLeft(u, i, got) {
			return protocol.Errorf(protocol.CodeInvalidParams, "%s changed since the revert; undo would lose that change", want.Path)
		}
	}
	for _, f := range u.Files {
		if err := restore(t, f); err != nil {
			return err
		}
	}
	return nil
}

// asRevertLeft reports whether got, the current state of u.After[i]'s
// path, is as the revert left it. For a pending undo it may also be as
// before the revert (the write did not happen), and the planned side's
// mode is not held against it: the file system may not keep what was
// planned (an executable bit, a symbolic link), which only the settled
// undo records exactly.
func asRevertLeft(u *session.Undo, i int, got session.SavedFile) bool {
	want := u.After[i]
	if sameSaved(got, want) {
		return true
	}
	if !u.Pending {
		return false
	}
	if i < len(u.Files) && sameSaved(got, u.Files[i]) {
		return true
	}
	return got.Exists == want.Exists && bytes.Equal(got.Content, want.Content)
}

func sameSaved(a, b session.SavedFile) bool {
	return a.Exists == b.Exists && bytes.Equal(a.Content, b.Content) && a.Mode == b.Mode
}

// undoStillValid reports whether the files are as the revert left them.
func undoStillValid(t tree, u *session.Undo) bool {
	for i, want := range u.After {
		got, err := save(t, want.Path)
		if err != nil || !asRevertLeft(u, i, got) {
			return false
		}
	}
	return true
}

var _ session.DriftReader = (*gitWorkspace)(nil)

// Drifted is session.DriftReader.
func (w *gitWorkspace) Drifted(ctx context.Context, files []session.EditFile) ([]string, error) {
	return drifted(ctx, w, files)
}

// drifted lists the files that no longer hold their new side: the check
// of checkTargets, made on every file instead of stopping at the first.
func drifted(ctx context.Context, t tree, files []session.EditFile) ([]string, error) {
	var out []string
	for _, f := range files {
		ok, err := asLeft(ctx, t, f)
		if err != nil {
			return out, err
		}
		if !ok {
			out = append(out, f.Path())
		}
	}
	return out, nil
}

// asLeft reports whether f's paths hold its new side: its content at its
// path, and nothing at the path it was deleted or renamed from.
func asLeft(ctx context.Context, t tree, f session.EditFile) (bool, error) {
	check := func(path string, want *session.FileVersion) (bool, error) {
		err := checkFile(ctx, t, path, want)
		if protocol.ReasonOf(err) == protocol.ReasonFileChanged {
			return false, nil
		}
		return err == nil, err
	}
	if f.New != nil {
		if ok, err := check(f.New.Path, f.New); !ok || err != nil {
			return ok, err
		}
	}
	if p := f.OldPath(); p != "" || f.New == nil {
		if p == "" {
			p = f.Old.Path
		}
		return check(p, nil)
	}
	return true, nil
}
