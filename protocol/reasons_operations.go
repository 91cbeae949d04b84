package protocol

// Reasons of refused changeset operations, in error.data.reason (and, for
// a revert that failed part-way, next to data.undoId).
const (
	// ReasonFileChanged (CodeConflict): a target file no longer has the
	// content the changeset published; wait for the update and retry.
	ReasonFileChanged = "fileChanged"
	// ReasonViewChanged (CodeConflict): HEAD or the index moved since the
	// changeset was computed (a checkout, commit, stash or add by another
	// program); wait for the update and retry.
	ReasonViewChanged = "viewChanged"
	// ReasonMergeInProgress (CodeConflict): a merge, cherry-pick, revert
	// or rebase is in progress; finish or abort it with git first.
	ReasonMergeInProgress = "mergeInProgress"
	// ReasonNoSpace (CodeConflict): the disk (or quota) is full.
	ReasonNoSpace = "noSpace"
	// ReasonPermission (CodePermissionDenied): the file system refused
	// the write (permissions, a read-only file system).
	ReasonPermission = "permissionDenied"
	// ReasonNotRegularFile (CodeInvalidParams): the path is a named pipe,
	// socket, device or directory, which operations never read or write.
	ReasonNotRegularFile = "notRegularFile"
	// ReasonNestedRepository (CodeInvalidParams): the path is a submodule
	// or a nested repository, which operations never rewrite or delete.
	ReasonNestedRepository = "nestedRepository"
	// ReasonTooLarge (CodeInvalidParams): the file is over a size limit
	// the message names.
	ReasonTooLarge = "tooLarge"
	// ReasonFileNotFound (CodeNotFound): resourceRead of a working-tree
	// file that does not exist.
	ReasonFileNotFound = "fileNotFound"
	// ReasonChangedAfterTurn (CodeConflict): a rewind of a turn found
	// files changed again since the turn; data.files names them.
	ReasonChangedAfterTurn = "changedAfterTurn"
	// ReasonUnreadable: a file the operation must read cannot be read
	// (CodePermissionDenied when the file system refuses it, else
	// CodeConflict); the message names the file and the cause.
	ReasonUnreadable = "unreadable"
	// ReasonSigningRequired (CodeConflict): commit.gpgsign asks for a
	// signed commit, which the daemon cannot make.
	ReasonSigningRequired = "signingRequired"
	// ReasonNoIdentity (CodeConflict): no author name or email is
	// configured for a commit.
	ReasonNoIdentity = "noIdentity"
	// ReasonStateNoSpace (CodeConflict): the state dir's disk is full, so
	// what an operation must keep (an undo) cannot be stored.
	ReasonStateNoSpace = "stateNoSpace"
	// ReasonFilterNotRun (CodeInvalidParams): the file's filter driver,
	// whose output git checkout would write, is not run by the daemon.
	ReasonFilterNotRun = "filterNotRun"
)
