package source

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/session"
	"github.com/changesetd/changesetd/session/ops"
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
	// readHeld reads what path holds now, and replace makes it hold next
	// only if it still holds want, checked right before the rename
	// (scm.Repo.ReplaceWorktree); a path that changed is refused with
	// reason fileChanged and left alone.
	// prepare readies the new contents ahead, durable at once, for
	// replace (pr nil writes it then); discard drops what was not used.
	readHeld(path string) (scm.Held, error)
	// heldSize is the size of what path holds now, from its stat.
	heldSize(path string) (int64, error)
	replace(path string, want, next scm.Held, pr *scm.Prepared) error
	prepare(paths []string, next []scm.Held) ([]*scm.Prepared, error)
	discard(prs []*scm.Prepared)
	// indexEntry and headEntry are path's stage-0 index entry and HEAD's
	// entry; setIndex sets entries in one index write.
	indexEntry(path string) (ops.IndexEntry, error)
	headEntry(path string) (ops.IndexEntry, error)
	setIndex(ctx context.Context, sets []scm.IndexSet) error
	// smudge gives the bytes git checkout writes for a blob of path, and
	// clean what git stores for working-tree bytes of it.
	smudge(path string, blob []byte, oid string) ([]byte, error)
	clean(path string, b []byte) ([]byte, error)
	// writeBlob stores a blob; changedPaths lists the paths of the
	// session's directory whose working tree differs from HEAD (untracked
	// files included, ignored ones not).
	writeBlob(content []byte) (string, error)
	changedPaths(ctx context.Context) ([]string, error)
}

var _ tree = (*gitWorkspace)(nil)

func (w *gitWorkspace) PrepareRevert(ctx context.Context, e session.Edit) (session.PreparedRevert, error) {
	p, err := prepareRevert(ctx, w, e)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return p, nil
}

func (w *gitWorkspace) ApplyRevert(ctx context.Context, p session.PreparedRevert) (*session.Undo, error) {
	pr, ok := p.(*preparedRevert)
	if !ok {
		return nil, fmt.Errorf("a revert prepared by another workspace (%T)", p)
	}
	return applyRevert(ctx, w, pr)
}

// Revert prepares a revert and carries it out at once, with no undo kept
// in between. Only tests call it; the session prepares and applies in two
// steps so that the undo is durable first.
func (w *gitWorkspace) Revert(ctx context.Context, e session.Edit) (*session.Undo, error) {
	p, err := prepareRevert(ctx, w, e)
	if err != nil {
		return nil, err
	}
	return applyRevert(ctx, w, p)
}

func (w *gitWorkspace) Stage(ctx context.Context, e session.Edit) (*session.Undo, error) {
	return stage(ctx, w, e)
}

func (w *gitWorkspace) Unstage(ctx context.Context, e session.Edit) (*session.Undo, error) {
	return unstage(ctx, w, e)
}

func (w *gitWorkspace) Commit(ctx context.Context, e session.Edit, message string) (string, string, error) {
	return commit(ctx, w, e, message)
}

func (w *gitWorkspace) Undo(ctx context.Context, u *session.Undo) error { return undoRevert(ctx, w, u) }

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

// saved is what a Held keeps for an undo.
func saved(path string, h scm.Held) session.SavedFile {
	return session.SavedFile{Path: path, Exists: h.Exists, Content: h.Content, Mode: h.Mode}
}

// held is the content and mode a SavedFile puts in place.
func held(f session.SavedFile) scm.Held {
	return scm.Held{Exists: f.Exists, Content: f.Content, Mode: f.Mode}
}

// readAll reads what each path holds now.
func readAll(t tree, paths []string) (map[string]scm.Held, error) {
	out := make(map[string]scm.Held, len(paths))
	for _, p := range paths {
		h, err := t.readHeld(p)
		if err != nil {
			return nil, err
		}
		out[p] = h
	}
	return out, nil
}

// revertPaths lists the paths a revert may write, in the order it writes
// them: per file its new path (a file the revert removes), then its old.
func revertPaths(e session.Edit) []string {
	var paths []string
	add := func(p string) {
		if p != "" && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	for _, f := range e.Files {
		if len(e.RangesOf(f)) > 0 {
			add(f.New.Path)
			continue
		}
		if f.New != nil && (f.Old == nil || f.Old.Path != f.New.Path) {
			add(f.New.Path)
		}
		if f.Old != nil {
			add(f.Old.Path)
		}
	}
	return paths
}

// preparedRevert is a revert planned and not yet written: the paths it
// may write, what each held when it was read (with the stat data that
// tells cheaply whether it still does), and what each is to hold.
type preparedRevert struct {
	e       session.Edit
	paths   []string
	cur     map[string]scm.Held
	before  []session.SavedFile
	planned []session.SavedFile
}

// Pending is the undo of the revert before it is carried out: what it
// replaces and what it is to leave.
func (p *preparedRevert) Pending() *session.Undo {
	return &session.Undo{Files: p.before, After: p.planned, Pending: true}
}

// undoTooLarge refuses a revert whose undo would keep n bytes.
func undoTooLarge(n int64) error {
	return protocol.Errorf(protocol.CodeInvalidParams, "the revert would replace %d bytes, over the %d MiB kept to undo a revert; nothing was changed: revert fewer or smaller files", n, session.MaxUndoBytes>>20).WithReason(protocol.ReasonTooLarge)
}

// prepareRevert plans a revert of each target file to the changeset's
// before side, or for a range only the hunks that intersect it, written
// as git checkout would write them; for the uncommitted changeset the
// index entries go back to HEAD as well. What each path holds is read
// first, then every target is checked against the versions e names and
// every new content computed, with the index entries to put back. Nothing
// is written: the caller makes the pending undo durable, then has
// applyRevert carry it out.
func prepareRevert(ctx context.Context, t tree, e session.Edit) (*preparedRevert, error) {
	paths := revertPaths(e)
	// What the paths hold now is kept to undo the revert: past the undo
	// limit by their sizes alone, the revert is refused before any of
	// them is read (a file of gigabytes is never loaded to say so).
	var held int64
	for _, p := range paths {
		n, err := t.heldSize(p)
		if err != nil {
			return nil, err
		}
		held += n
	}
	if held > session.MaxUndoBytes {
		return nil, undoTooLarge(held)
	}
	// Read before the checks: a file that changes after its read fails
	// either the check or the guard of its write.
	cur, err := readAll(t, paths)
	if err != nil {
		return nil, err
	}
	if err := checkTargets(ctx, t, e); err != nil {
		return nil, err
	}
	before := make([]session.SavedFile, len(paths))
	for i, p := range paths {
		before[i] = saved(p, cur[p])
	}
	plan, err := planRevert(t, e, cur)
	if err != nil {
		return nil, err
	}
	planned := make([]session.SavedFile, len(paths))
	for i, p := range paths {
		planned[i] = plan[p]
	}
	if err := planIndex(t, e, paths, before, planned); err != nil {
		return nil, err
	}
	if n := (&session.Undo{Files: before, After: planned}).Bytes(); n > session.MaxUndoBytes {
		return nil, undoTooLarge(int64(n))
	}
	return &preparedRevert{e: e, paths: paths, cur: cur, before: before, planned: planned}, nil
}

// applyRevert carries out a prepared revert. Each write happens only if
// its path still holds what was read, checked right before the rename: a
// path that changed meanwhile is left alone and named in the error, and
// what was written stays in the undo. What a failed write leaves done is
// returned for undo with the error.
func applyRevert(ctx context.Context, t tree, pr *preparedRevert) (*session.Undo, error) {
	if err := testGate(ctx, "kept"); err != nil {
		return nil, err
	}
	paths, cur, before, planned := pr.paths, pr.cur, pr.before, pr.planned
	nexts := make([]scm.Held, len(paths))
	for i := range paths {
		if !sameSaved(before[i], planned[i]) {
			nexts[i] = held(planned[i])
		}
	}
	prs, err := t.prepare(paths, nexts)
	if err != nil {
		return nil, err
	}
	defer t.discard(prs)
	u := &session.Undo{}
	var changed []string
	var werr error
	written := 0
	var sets []scm.IndexSet
	for i, p := range paths {
		next := planned[i]
		if !sameSaved(before[i], next) {
			err := t.replace(p, cur[p], held(next), prs[i])
			if protocol.ReasonOf(err) == protocol.ReasonFileChanged {
				changed = append(changed, p)
				continue
			}
			if err != nil {
				werr = err
				break
			}
			written++
			if written == 1 {
				if err := testGate(ctx, "wrote"); err != nil {
					werr = err
					break
				}
			}
		}
		left := next
		left.Mode = leftMode(t, p, next)
		u.Files = append(u.Files, before[i])
		u.After = append(u.After, left)
		if x := next.Index; x != nil {
			sets = append(sets, scm.IndexSet{Path: p, Exists: x.Exists, OID: x.OID, Mode: x.Mode})
		}
	}
	if len(sets) > 0 {
		if err := indexWrite(t, func() error { return t.setIndex(ctx, sets) }); err != nil {
			// The index was not written: the undo keeps only the files.
			for i := range u.Files {
				u.Files[i].Index, u.After[i].Index = nil, nil
			}
			werr = errors.Join(werr, err)
		} else if err := testGate(ctx, "indexed"); err != nil {
			werr = errors.Join(werr, err)
		}
	}
	if len(changed) > 0 {
		cerr := &protocol.Error{
			Code:    protocol.CodeConflict,
			Message: fmt.Sprintf("%s changed while the revert ran and %s left as %s; the other files were reverted", nameList(changed), wasWere(len(changed)), itThem(len(changed))),
			Data:    map[string]any{"reason": protocol.ReasonFileChanged, "files": changed},
		}
		if werr == nil {
			werr = cerr
		}
	}
	return u, werr
}

// leftMode is the mode path has after the revert wrote next there: the
// file system may not keep what was planned (an executable bit under
// core.fileMode=false, a symbolic link under core.symlinks=false).
func leftMode(t tree, p string, next session.SavedFile) uint32 {
	if !next.Exists {
		return next.Mode
	}
	h, err := t.readHeld(p)
	if err != nil || !h.Exists || !bytes.Equal(h.Content, next.Content) {
		return next.Mode
	}
	return h.Mode
}

// planIndex records, for the uncommitted changeset's whole-file revert,
// the index entries the revert puts back to HEAD: before keeps each
// entry it replaces (with its blob, so an undo can put it back whatever
// git gc does), planned the entry it sets. Entries the revert leaves
// alone are not recorded.
func planIndex(t tree, e session.Edit, paths []string, before, planned []session.SavedFile) error {
	if !e.Index || !e.Whole() {
		return nil
	}
	// A file reverted by ranges keeps its index entry.
	ranged := map[string]bool{}
	for _, f := range e.Files {
		if len(e.RangesOf(f)) > 0 {
			ranged[f.New.Path] = true
		}
	}
	for i, p := range paths {
		if ranged[p] {
			continue
		}
		was, err := t.indexEntry(p)
		if err != nil {
			return err
		}
		head, err := t.headEntry(p)
		if err != nil {
			return err
		}
		if was.Same(head) {
			continue
		}
		if was.Exists && was.Mode != changeset.ModeGitlink {
			if was.Content, err = t.ReadBlob(was.OID); err != nil {
				return err
			}
		}
		before[i].Index, planned[i].Index = &was, &head
	}
	return nil
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

func itThem(n int) string {
	if n == 1 {
		return "it is"
	}
	return "they are"
}

// nameList is "a, b and c", up to 10 names, then how many more.
func nameList(names []string) string {
	const most = 10
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
	}
	if len(names) > 1 {
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return strings.Join(names, "")
}

// planRevert computes what each path of the revert is to hold: its before
// side as git checkout writes it, the range's other hunks applied, or
// absence. Paths it leaves alone keep what they hold.
func planRevert(t tree, e session.Edit, cur map[string]scm.Held) (map[string]session.SavedFile, error) {
	plan := make(map[string]session.SavedFile, len(cur))
	for p, h := range cur {
		plan[p] = saved(p, h)
	}
	for _, f := range e.Files {
		if len(e.RangesOf(f)) > 0 {
			next, mode, err := revertRange(t, e, f, cur[f.New.Path])
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
			if f.Old.Mode != changeset.ModeSymlink {
				if b, err = t.smudge(f.Old.Path, b, f.Old.OID); err != nil {
					return nil, err
				}
			}
			plan[f.Old.Path] = session.SavedFile{Path: f.Old.Path, Exists: true, Content: b, Mode: f.Old.Mode}
		}
	}
	return plan, nil
}

// selectHunks splits hunks into those intersecting r (0-based lines on the
// given side) and the rest.
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

// revertRange computes a range revert's new content of its file, as git
// checkout would write it, and the mode to write it with; h is what the
// file holds.
func revertRange(t tree, e session.Edit, f session.EditFile, h scm.Held) ([]byte, uint32, error) {
	if f.Old == nil || f.New == nil || f.Old.Path != f.New.Path {
		return nil, 0, protocol.Errorf(protocol.CodeInvalidParams, "a range revert needs a file modified in place; revert %s as a whole", f.Path())
	}
	old, err := blob(t, f.Old)
	if err != nil {
		return nil, 0, err
	}
	if !h.Exists {
		return nil, 0, protocol.Errorf(protocol.CodeConflict, "%s was deleted since the version the range refers to was published; nothing was reverted", f.Path()).WithReason(protocol.ReasonFileChanged)
	}
	if len(h.Content) > maxRangeFile {
		return nil, 0, protocol.Errorf(protocol.CodeInvalidParams, "%s is %d bytes, over the %d MiB up to which files are diffed into lines; act on the whole file", f.Path(), len(h.Content), maxRangeFile>>20).WithReason(protocol.ReasonTooLarge)
	}
	// The lines are those of the stored form (the published side); the
	// file holds its checked-out form.
	cur := h.Content
	if h.Mode != changeset.ModeSymlink {
		if c, err := t.clean(f.New.Path, cur); err == nil {
			cur = c
		}
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
	if h.Mode != changeset.ModeSymlink {
		if next, err = t.smudge(f.New.Path, next, gitBlobID(next, f.New.OID)); err != nil {
			return nil, 0, err
		}
	}
	return next, h.Mode, nil
}

// rangeEdit diffs from against to and returns from with either only the
// hunks that intersect r applied (keepSelected) or all the others: the
// first stages a range, the second reverts one. what names the change for
// the error when no hunk intersects.
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

func stage(ctx context.Context, t tree, e session.Edit) (*session.Undo, error) {
	if err := checkTargets(ctx, t, e); err != nil {
		return nil, err
	}
	return withIndexUndo(t, e, "stage", func() error {
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

// withIndexUndo runs write, a stage or unstage of e's files (op), under
// the index lock, and returns the undo that puts back the index entries
// it changed: each entry before it (with its blob, so that an undo can
// put back a staged version nothing else refers to, whatever git gc
// does) and after it. Nil when it changed no entry.
func withIndexUndo(t tree, e session.Edit, op string, write func() error) (*session.Undo, error) {
	var paths []string
	for _, f := range e.Files {
		_ = eachPath(f, func(p string) error {
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
			return nil
		})
	}
	before := make([]ops.IndexEntry, len(paths))
	for i, p := range paths {
		x, err := t.indexEntry(p)
		if err != nil {
			return nil, err
		}
		before[i] = x
	}
	if err := indexWrite(t, write); err != nil {
		return nil, err
	}
	u := &session.Undo{Op: op}
	for i, p := range paths {
		x, err := t.indexEntry(p)
		if err != nil {
			// Written, but what it left cannot be told: no undo.
			return nil, nil
		}
		if x.Same(before[i]) {
			continue
		}
		b := before[i]
		if b.Exists {
			if c, err := t.ReadBlob(b.OID); err == nil {
				b.Content = c
			}
		}
		u.Files = append(u.Files, session.SavedFile{Path: p, Index: &b})
		u.After = append(u.After, session.SavedFile{Path: p, Index: &x})
	}
	if len(u.Files) == 0 {
		return nil, nil
	}
	if u.Bytes() > session.MaxUndoBytes {
		// The blobs stay in the object store until git gc prunes them:
		// the undo keeps their ids only.
		for i := range u.Files {
			u.Files[i].Index.Content = nil
		}
	}
	return u, nil
}

// unstage resets index entries to HEAD; for a range, the lines are those
// of the staged version.
func unstage(ctx context.Context, t tree, e session.Edit) (*session.Undo, error) {
	if err := checkTargets(ctx, t, e); err != nil {
		return nil, err
	}
	return withIndexUndo(t, e, "unstage", func() error {
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

// commit commits what is staged, or, when nothing is, exactly the files
// shown (stageShown), with msg or else the default message
// (ops.CommitMessage) of exactly what is committed. With something staged, the index must be the
// one the changeset was computed on (checkView).
func commit(ctx context.Context, t tree, e session.Edit, msg string) (id, used string, err error) {
	if op := t.inProgress(); op != "" {
		return "", "", protocol.Errorf(protocol.CodeConflict, "a %s is in progress; finish or abort it with git first, then commit", op).WithReason(protocol.ReasonMergeInProgress)
	}
	// A commit records the index as it is, so the index must be the very
	// one the client named: one the daemon's own stage or unstage moved
	// on since would commit what its confirmation never listed.
	if e.View != "" && e.View != t.viewStamp() {
		return "", "", protocol.Errorf(protocol.CodeConflict, "the index changed since the changeset was shown (a stage, unstage or commit since, by this daemon or another program); nothing was committed: look at what is staged now and commit again").WithReason(protocol.ReasonViewChanged)
	}
	if err := checkView(t, e); err != nil {
		return "", "", err
	}
	staged, err := t.HasStaged(ctx)
	if err != nil {
		return "", "", err
	}
	if err := testGate(ctx, "commit"); err != nil {
		return "", "", err
	}
	if !staged {
		shown := e.Shown
		if shown == nil {
			shown = ShownOf(e.Files)
		}
		if err := stageShown(ctx, t, shown); err != nil {
			return "", "", err
		}
	}
	if msg == "" {
		changes, err := t.staged(ctx)
		if err != nil {
			return "", "", err
		}
		msg = ops.CommitMessage(commitEntries(t, changes))
	}
	id, err = t.commitIndex(ctx, msg)
	if err != nil {
		return "", "", err
	}
	return id, msg, nil
}

// ShownOf is what a changeset's files show: each new side's path, blob id
// and mode, and the absence of a deleted file and of a renamed file's old
// path.
func ShownOf(files []session.EditFile) []ops.Shown {
	var out []ops.Shown
	for _, f := range files {
		if f.New != nil {
			out = append(out, ops.Shown{Path: f.New.Path, Exists: true, OID: f.New.OID, Mode: f.New.Mode})
		}
		if f.Old != nil && (f.New == nil || f.Old.Path != f.New.Path) {
			out = append(out, ops.Shown{Path: f.Old.Path})
		}
	}
	return out
}

// StageShown is stageShown on the workspace: the API for staging exactly
// what a client displayed.
func (w *gitWorkspace) StageShown(ctx context.Context, shown []ops.Shown) error {
	return stageShown(ctx, w, shown)
}

// stageShown stages exactly shown: each path at the blob id it was shown
// with (the bytes staged are those whose id is checked), or removed. It
// refuses, staging nothing, when a shown file no longer has that content,
// or a change in the session's directory was not shown at all (a file
// written since), naming them all.
func stageShown(ctx context.Context, t tree, shown []ops.Shown) error {
	listed := make(map[string]bool, len(shown))
	for _, s := range shown {
		listed[s.Path] = true
	}
	now, err := t.changedPaths(ctx)
	if err != nil {
		return err
	}
	var appeared, changed []string
	for _, p := range now {
		if !listed[p] {
			appeared = append(appeared, p)
		}
	}
	var sets []scm.IndexSet
	var gitlinks []string
	for _, s := range shown {
		if !s.Exists {
			if _, exists, err := t.worktreeOID(ctx, s.Path); err != nil {
				return err
			} else if exists {
				changed = append(changed, s.Path)
			}
			sets = append(sets, scm.IndexSet{Path: s.Path})
			continue
		}
		if s.Mode == changeset.ModeGitlink {
			if oid, _, err := t.worktreeOID(ctx, s.Path); err != nil {
				return err
			} else if oid != s.OID {
				changed = append(changed, s.Path)
			}
			gitlinks = append(gitlinks, s.Path)
			continue
		}
		if s.OID == "" {
			if _, _, err := t.worktreeOID(ctx, s.Path); err != nil {
				return err
			}
			return protocol.Errorf(protocol.CodeInvalidParams, "%s was shown without a content id (it is over the size up to which files are hashed); nothing was committed: stage it first, then commit", s.Path).WithReason(protocol.ReasonTooLarge)
		}
		oid, mode, ok, err := storeWorktree(t, s.Path)
		if err != nil {
			return err
		}
		if !ok || oid != s.OID || (s.Mode != 0 && mode != s.Mode) {
			changed = append(changed, s.Path)
			continue
		}
		sets = append(sets, scm.IndexSet{Path: s.Path, Exists: true, OID: oid, Mode: mode})
	}
	if len(appeared)+len(changed) > 0 {
		all := slices.Sorted(slices.Values(append(slices.Clone(changed), appeared...)))
		var parts []string
		if len(changed) > 0 {
			parts = append(parts, nameList(changed)+" changed")
		}
		if len(appeared) > 0 {
			parts = append(parts, nameList(appeared)+" appeared")
		}
		return &protocol.Error{
			Code:    protocol.CodeConflict,
			Message: strings.Join(parts, " and ") + " since the changeset was shown; nothing was committed: review the changeset again, then commit",
			Data:    map[string]any{"reason": protocol.ReasonFileChanged, "files": all, "changed": orEmpty(changed), "appeared": orEmpty(appeared)},
		}
	}
	return indexWrite(t, func() error {
		if err := t.setIndex(ctx, sets); err != nil {
			return err
		}
		for _, p := range gitlinks {
			if err := t.StagePath(ctx, p); err != nil {
				return err
			}
		}
		return nil
	})
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// storeWorktree stores the blob git would store for the working-tree file
// at path (clean filters applied) and returns its id and mode; ok is
// false when there is no file.
func storeWorktree(t tree, path string) (oid string, mode uint32, ok bool, err error) {
	h, err := t.readHeld(path)
	if err != nil || !h.Exists {
		return "", 0, false, err
	}
	b := h.Content
	if h.Mode != changeset.ModeSymlink {
		if b, err = t.clean(path, b); err != nil {
			return "", 0, false, protocol.Errorf(protocol.CodeInvalidParams, "%s cannot be stored as git would store it (%v); nothing was committed: stage it with git", path, err)
		}
	}
	oid, err = t.writeBlob(b)
	return oid, h.Mode, true, opErr(err)
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

// undoRevert puts back what a revert replaced, if nothing changed since:
// the files' bytes and modes, and the index entries the revert changed.
// Each file is written only if it still holds what the check read. A
// pending revert's files (and entries) may each be as before it or as it
// was to leave them.
func undoRevert(ctx context.Context, t tree, u *session.Undo) error {
	if u.IndexOnly() {
		return undoIndex(ctx, t, u)
	}
	cur := make(map[string]scm.Held, len(u.After))
	for i, want := range u.After {
		h, err := t.readHeld(want.Path)
		if err != nil {
			return err
		}
		if !asRevertLeft(u, i, saved(want.Path, h)) {
			return protocol.Errorf(protocol.CodeInvalidParams, "%s changed since the revert; undo would lose that change", want.Path)
		}
		if restoresIndex(u, i) {
			x, err := t.indexEntry(want.Path)
			if err != nil {
				return err
			}
			if !indexAsLeft(u, i, x) {
				return protocol.Errorf(protocol.CodeInvalidParams, "the index entry of %s changed since the revert (it was staged or unstaged); undo would lose that change", want.Path)
			}
		}
		cur[want.Path] = h
	}
	paths := make([]string, len(u.Files))
	nexts := make([]scm.Held, len(u.Files))
	for i, f := range u.Files {
		paths[i] = f.Path
		if h, ok := cur[f.Path]; ok && !sameSaved(saved(f.Path, h), f) {
			nexts[i] = held(f)
		}
	}
	prs, err := t.prepare(paths, nexts)
	if err != nil {
		return err
	}
	defer t.discard(prs)
	var sets []scm.IndexSet
	var changed []string
	for i, f := range u.Files {
		h, ok := cur[f.Path]
		if !ok {
			continue
		}
		if !sameSaved(saved(f.Path, h), f) {
			err := t.replace(f.Path, h, held(f), prs[i])
			if protocol.ReasonOf(err) == protocol.ReasonFileChanged {
				changed = append(changed, f.Path)
				continue
			}
			if err != nil {
				return err
			}
		}
		if restoresIndex(u, i) {
			x := f.Index
			set := scm.IndexSet{Path: f.Path, Exists: x.Exists, OID: x.OID, Mode: x.Mode}
			if x.Exists && x.Content != nil {
				set.Content = x.Content
			}
			sets = append(sets, set)
		}
	}
	if len(sets) > 0 {
		if err := indexWrite(t, func() error { return t.setIndex(ctx, sets) }); err != nil {
			return err
		}
	}
	if len(changed) > 0 {
		return &protocol.Error{
			Code:    protocol.CodeConflict,
			Message: fmt.Sprintf("%s changed while the undo ran and %s left as %s; the other files were put back", nameList(changed), wasWere(len(changed)), itThem(len(changed))),
			Data:    map[string]any{"reason": protocol.ReasonFileChanged, "files": changed},
		}
	}
	return nil
}

// undoIndex puts back the index entries a stage or unstage replaced,
// refusing when one of them changed since: that change would be lost.
// The working tree is neither read nor written.
func undoIndex(ctx context.Context, t tree, u *session.Undo) error {
	var sets []scm.IndexSet
	return indexWrite(t, func() error {
		for i, f := range u.Files {
			if !restoresIndex(u, i) {
				continue
			}
			x, err := t.indexEntry(f.Path)
			if err != nil {
				return err
			}
			if !indexAsLeft(u, i, x) {
				return protocol.Errorf(protocol.CodeConflict, "the index entry of %s changed since the %s (it was staged, unstaged or committed since); nothing was changed: undo would lose that change", f.Path, u.Op).WithReason(protocol.ReasonFileChanged)
			}
			b := f.Index
			set := scm.IndexSet{Path: f.Path, Exists: b.Exists, OID: b.OID, Mode: b.Mode}
			if b.Exists && b.Content != nil {
				set.Content = b.Content
			}
			sets = append(sets, set)
		}
		if len(sets) == 0 {
			return nil
		}
		return t.setIndex(ctx, sets)
	})
}

// restoresIndex reports whether the undo puts back the index entry of
// u.Files[i]: the revert recorded it and changed it.
func restoresIndex(u *session.Undo, i int) bool {
	if i >= len(u.Files) || i >= len(u.After) {
		return false
	}
	b, a := u.Files[i].Index, u.After[i].Index
	return b != nil && a != nil && !b.Same(*a)
}

// indexAsLeft reports whether x, the index entry of u.After[i]'s path now,
// is as the revert left it (or, pending, as it was before).
func indexAsLeft(u *session.Undo, i int, x ops.IndexEntry) bool {
	if x.Same(*u.After[i].Index) {
		return true
	}
	return u.Pending && x.Same(*u.Files[i].Index)
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

// undoStillValid reports whether the files and the index entries the
// undo restores are as the revert left them.
func undoStillValid(t tree, u *session.Undo) bool {
	if u.IndexOnly() {
		for i, f := range u.After {
			if !restoresIndex(u, i) {
				continue
			}
			x, err := t.indexEntry(f.Path)
			if err != nil || !indexAsLeft(u, i, x) {
				return false
			}
		}
		return true
	}
	for i, want := range u.After {
		h, err := t.readHeld(want.Path)
		if err != nil || !asRevertLeft(u, i, saved(want.Path, h)) {
			return false
		}
		if restoresIndex(u, i) {
			x, err := t.indexEntry(want.Path)
			if err != nil || !indexAsLeft(u, i, x) {
				return false
			}
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
