package session

import (
	"context"

	"github.com/changesetd/changesetd/protocol"
)

// Workspace is one working directory of a session as the changeset
// channels see it. The daemon implements it over package scm; tests may use
// the same implementation on a temporary repository.
type Workspace interface {
	// Root is the absolute top of the working tree, which every path of
	// a FileVersion is relative to. A session on a subdirectory of a
	// repository has the repository's top here, and Changes lists only
	// the files under the session's directory.
	Root() string
	// Changes computes the file changes of a changeset kind (uncommitted
	// or branch). With Paths set, only changes under those relative paths
	// are returned and the caller treats every other known file under them
	// as clean.
	Changes(ctx context.Context, q Query) (*ChangeList, error)
	// ReadBlob returns the content of a stored object named by a
	// FileVersion.OID of a version that is not live.
	ReadBlob(oid string) ([]byte, error)
	// Watch reports paths that may have changed, relative to Root; all is
	// set when everything must be rechecked.
	Watch(onChange func(paths []string, all bool)) (Watch, error)
	// Snapshot records the working tree as it is now — every change that
	// completed before the call — and returns the snapshot's tree id.
	// With track set the workspace keeps watching afterwards so that the
	// next snapshot re-checks only what changed (turn boundaries); without
	// it a one-off scan is enough (the session baseline).
	Snapshot(ctx context.Context, track bool) (string, error)
	// Close releases what the workspace holds itself (the watcher it
	// keeps for turn tracking, and its goroutines) and waits for them.
	// The session calls it once, when it is disposed or the daemon
	// stops; watchers returned by Watch are stopped by their callers.
	Close() error
}

// BlobSizer is implemented by workspaces that can tell a stored object's
// size without reading it, so a read over its limit is refused before the
// content is loaded.
type BlobSizer interface {
	// BlobSize reports the size of a stored object; false when the
	// workspace cannot tell.
	BlobSize(oid string) (int64, bool)
}

// Plain is implemented by workspaces of directories that are not git
// repositories. They serve the changesets built from snapshots alone
// (session, turn, compare-turns); the git ones are not offered for them.
type Plain interface {
	Plain() bool
}

func isPlain(ws Workspace) bool {
	p, ok := ws.(Plain)
	return ok && p.Plain()
}

// Identifier is implemented by workspaces that can name their repository
// independently of its path. A new session records both names, so that a
// restart can tell whether its directory still holds the same project.
type Identifier interface {
	// Identity returns the repository's name (empty when it has none,
	// such as an unborn branch) and HEAD's commit.
	Identity() (repo, head string)
}

// Watch is a running watch of a workspace, as Workspace.Watch starts it
// (the file-system watcher behind it is fswatch.Watcher).
type Watch interface {
	// Mode says how changes are noticed ("fsnotify" or "poll") and, when
	// polling, why.
	Mode() (mode, reason string)
	Stop()
}

// Query selects what Changes computes.
type Query struct {
	// View is what is compared: the working tree with HEAD
	// (protocol.KindUncommitted), with the merge base
	// (protocol.KindBranch), or two trees (ViewTrees). Every changeset
	// kind is served by one of these views.
	View  string
	Base  string   // for KindBranch: the base branch; empty = the default
	From  string   // for ViewTrees: the snapshot tree of the old side
	To    string   // for ViewTrees: the snapshot tree of the new side; "" = the live working tree
	Paths []string // nil = everything
	// MaxPatchBytes, when positive, is the largest patch written for one
	// file (the whole-changeset patch asks for more than the default).
	MaxPatchBytes int
	// IgnoreWhitespace asks for the patches git diff -w prints
	// (changeset.Options.IgnoreWhitespace). Such a list is read for its
	// patches only: it is never cached or kept as the last-known view.
	IgnoreWhitespace bool
}

// ViewTrees asks for the changes between two snapshots, or a snapshot and
// the live working tree.
const ViewTrees = "trees"

// ChangeList is the result of Changes.
type ChangeList struct {
	Files []FileChange
	// Warnings name what the engine could not apply exactly (a filter
	// it cannot run, say); they are published on the session's _meta.
	Warnings []string
	// View is the state of HEAD and the index the list was computed
	// against (FileVersion.View), also when it has no files; "" when the
	// query does not depend on them.
	View string
	// Shown, when set, is called once the list has been published to
	// the changeset's subscribers, or dropped: a workspace that holds
	// other work back while its first view is computed (a new session's
	// baseline snapshot) lets it go then rather than while the view is
	// still being encoded and sent.
	Shown func()
}

// FileChange is one changed file with its diff data, computed by the
// workspace implementation with package changeset.
type FileChange struct {
	Old, New       *FileVersion // nil when absent on that side
	Binary         bool
	Precise        bool // counts are exact; false for degraded diffs
	Added, Removed int
	// Meta is the file's _meta (diff statistics extension, operation,
	// blob ids): what every subscriber receives.
	Meta protocol.Object
	// Patch is the file's git patch, "" when it has none (too large,
	// or a whole-changeset read that only needs the text). ACP is the
	// file's change as an ACP v2 diff content block, nil when not
	// computed. Neither is in the published state: a client reads them
	// on request through the URIs the state names (FilePatchURI).
	Patch string
	ACP   protocol.Object
}

// Path is the file's current path, or its old path when deleted.
func (c FileChange) Path() string {
	if c.New != nil {
		return c.New.Path
	}
	return c.Old.Path
}
