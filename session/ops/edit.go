package ops

import (
	"fmt"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// FileVersion is one side of a file change as a workspace names it: its
// path and blob id, not its content (that is changeset.Side, the diff
// engine's input).
type FileVersion struct {
	Path string // slash-separated, relative to the workspace Root
	OID  string // git blob id
	Mode uint32 // git mode
	Size int64
	Live bool // the content is the working-tree file, not a stored object
	// View names the state of HEAD and the index the version was computed
	// against, when the changeset depends on them (uncommitted, branch);
	// opaque. An Editor refuses to act on a view that is out of date.
	View string
	// Staged: the index entry of Path differs from HEAD's (uncommitted
	// changeset only).
	Staged bool
}

// Edit is the target of an operation as an Editor gets it.
type Edit struct {
	Files []EditFile
	// Range, when set, limits the operation to the hunks of the one file
	// that intersect these 0-based lines of Side ("before" or "after").
	Range *protocol.TextRange
	Side  string
	// Index: the revert is of the uncommitted changeset, so the index
	// entries go back to HEAD too.
	Index bool
	// View is the view stamp the client named (_meta.view), "" when it
	// named none. A commit named on a view must find the index exactly
	// so, even when the daemon's own operations moved it since.
	View string
	// Shown, for a commit with nothing staged, is exactly what the
	// client displayed: each path's blob id, or its absence. The commit
	// stages exactly that or is refused. Nil means the changeset's files
	// as last published (Files).
	Shown []Shown
}

// EditFile is one file of an Edit with its sides as the client was shown
// them; nil when absent on that side. The session binds an invocation to
// what its client showed (versions.go): the content nonces in its
// _meta.versions must be those the changeset published, and the view
// stamp in its _meta.view is put in each version's View. Without them the
// sides are those the changeset last published, never what is on disk at
// the time of the write.
type EditFile struct {
	Old, New *FileVersion
	// Ranges, when set, limits the operation on this file to its hunks
	// that intersect these 0-based lines of the after side (byauthor.go).
	Ranges []protocol.TextRange
}

// Path is the file's current path, or its old path when it was deleted.
func (f EditFile) Path() string {
	if f.New != nil {
		return f.New.Path
	}
	return f.Old.Path
}

// OldPath is the path a renamed file had, else "".
func (f EditFile) OldPath() string {
	if f.Old != nil && f.New != nil && f.Old.Path != f.New.Path {
		return f.Old.Path
	}
	return ""
}

// RangesOf is the lines an operation acts on in f: its own Ranges, else
// the Edit's Range, else none (the whole file).
func (e Edit) RangesOf(f EditFile) []protocol.TextRange {
	if len(f.Ranges) > 0 {
		return f.Ranges
	}
	if e.Range != nil {
		return []protocol.TextRange{*e.Range}
	}
	return nil
}

// Whole reports whether the operation acts on some file as a whole.
func (e Edit) Whole() bool {
	return slices.ContainsFunc(e.Files, func(f EditFile) bool { return len(e.RangesOf(f)) == 0 })
}

// CommitEntry is one path a commit records, with its line counts (zero
// for binary or very large files).
type CommitEntry struct {
	Path      string
	Operation string // "add", "delete" or "modify"
	Added     int
	Removed   int
}

// Undo is what a revert replaced, as its Editor recorded it: the files as
// they were before it and as it left them. A revert that failed part-way
// returns one for what it did.
//
// A Pending Undo is the one a prepared revert names before its first
// write: After is what the revert is about to leave. It stays pending when
// the revert did not get to report what it left (the daemon was killed
// meanwhile), so each file may be as before or as planned; it is current
// while every file is one or the other, and undoing it puts back Files.
type Undo struct {
	Files   []SavedFile // before the revert
	After   []SavedFile // as the revert left them, or, pending, was to
	Pending bool
	// Op is the operation that made the undo: "" for a revert, or
	// "stage" or "unstage". A stage or unstage changes index entries
	// only: its undo holds and restores them alone, and never looks at
	// or writes the working tree (Files and After carry no content).
	Op string
}

// OpName is the operation that made the undo: "revert", "stage" or
// "unstage".
func (u *Undo) OpName() string {
	if u == nil || u.Op == "" {
		return "revert"
	}
	return u.Op
}

// IndexOnly reports whether the undo restores index entries alone.
func (u *Undo) IndexOnly() bool { return u.Op != "" }

// SavedFile is one path of an Undo: absent, or its bytes and git mode,
// and its index entry. Index is nil where the undo does not restore the
// entry: the revert left it as it was, or the record is older than undo
// of the index.
type SavedFile struct {
	Path    string
	Exists  bool
	Content []byte
	Mode    uint32
	Index   *IndexEntry
}

// Bytes is the content an Undo keeps.
func (u *Undo) Bytes() int {
	n := 0
	for _, fs := range [][]SavedFile{u.Files, u.After} {
		for _, f := range fs {
			n += len(f.Content)
			if f.Index != nil {
				n += len(f.Index.Content)
			}
		}
	}
	return n
}

// CommitMessage describes exactly what a commit records: a subject with
// the counts and one line per path.
func CommitMessage(entries []CommitEntry) string {
	var add, del int
	var lines []string
	for _, f := range entries {
		add, del = add+f.Added, del+f.Removed
		name := f.Path
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		lines = append(lines, fmt.Sprintf("- %s %s (+%d -%d)", f.Operation, name, f.Added, f.Removed))
	}
	return fmt.Sprintf("Update %d file(s) (+%d -%d)\n\n%s\n", len(entries), add, del, strings.Join(lines, "\n"))
}
