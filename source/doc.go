// Package source is a session's source of changes: a git working tree or
// a plain directory, adapted to session.Workspace.
//
// For a git working tree it puts together scm's status and object
// reading, a shared file watcher (scm/fswatch), the snapshot store
// (scm/snapstore) and the diff engine (changeset): the tracker keeps the
// status against HEAD current from watcher batches, so a turn boundary
// re-checks only the paths reported since the previous one, and the
// workspace is also the session's write side (session.Editor): the
// operations' work on the tree, by file or by hunk (operations.go). A
// directory that is not a repository is served from snapshots only.
//
// Across restarts a git workspace keeps, in its working-tree state file,
// the stat cache, and beside it the diffs of its changed files and its
// last uncommitted view (lastknown.go): a restart on a repository in the
// same state offers that view at once (session.LastKnower) and verifies
// it with its first scan.
//
// It also names repositories for session records: the id a directory's
// session gets, and whether a directory still holds the repository a
// session was made for.
package source
