// Package scm answers "what changed in this git working tree" in pure Go, on
// top of go-git's plumbing, without a git binary.
//
// It owns:
//   - opening a repository from any directory inside its worktree, including
//     linked worktrees (a .git file with "gitdir:") and their common dir, and
//     object stores borrowed through objects/info/alternates (git clone
//     --shared or --reference);
//   - reading the index with its own decoder (index_read.go: versions 2-4,
//     a split index merged with its shared index), and HEAD, refs, trees
//     and blobs through go-git;
//   - working-tree status: HEAD tree (or the merge base with another branch)
//     against the working tree, staged and unstaged changes together, plus
//     untracked files listed one by one;
//   - ignore rules (nested .gitignore, info/exclude, core.excludesFile) and
//     the attributes that decide how git would clean a file before hashing
//     it (core.autocrlf, text/eol/crlf, filter=lfs, ident,
//     working-tree-encoding);
//   - a stat cache, so repeated scans hash only what changed, saved
//     across restarts as a working-tree state (treestate.go: trusted
//     only for the same root, HEAD, index and ignore and attribute
//     inputs, each entry only if older than the state file);
//   - safe reads of worktree files that refuse to leave the worktree;
//   - the write side: working-tree writes confined to the root (atomic
//     replace, no path through a symlinked directory, nothing in .git),
//     staging and unstaging (git add, git rm --cached, git restore
//     --staged, staging given content for partial hunks), git add -A,
//     and committing what is staged.
//
// It must not import protocol, session, server or any transport package: it
// emits its own small types (Change, FileState, Status), and cmd adapts them
// to the consumers' interfaces. scm/fswatch owns file watching; this package
// only reports GitDir so a watcher can observe HEAD, index and refs.
//
// # How a tracked file is judged
//
// git compares each index entry's cached stat data with lstat(2) and rehashes
// only on a mismatch. We do the same: mtime and ctime in nanoseconds, size,
// inode, uid, gid and mode. ctime matters: a tool that rewrites a file with
// the same size and then restores its mtime with utimes(2) still changes the
// ctime (the kernel sets it to "now" on both the write and the utimes call,
// and userspace cannot set it back), so the entry no longer matches and the
// file is hashed. core.trustctime=false switches this off, as in git.
//
// An entry marked assume-unchanged (the index's assume-valid bit) is taken
// to be the file, whatever is on disk, as git takes it: its working side
// is the entry (FileState.Stored). An entry whose nanoseconds are 0 (an
// index written by a tool that keeps whole seconds) is compared in
// seconds, and is racy within the index file's whole second.
//
// The racy-git rule (git's Documentation/technical/racy-git.txt): an entry
// whose mtime is not older than the index file itself may have been modified
// within the same timestamp tick after git recorded it, so its stat data
// proves nothing and it is always hashed. Our own cache follows the same rule
// against the moment we started reading the file.
//
// The hash is git's blob id of the clean-filtered content, in git's order
// (convert_to_git): filter=lfs is applied in-process when an lfs filter is
// configured; working-tree-encoding decodes to UTF-8 with git's byte-order
// mark rules (golang.org/x/text for encodings other than UTF-16 and
// UTF-32; content that does not decode is hashed as it is, as git status
// does, with a warning); CRLF becomes LF when core.autocrlf or the
// text/eol attributes say so (including git's "auto" safety rules:
// binary-looking files and files whose index blob already has CRLF are
// left alone); ident collapses "$Id: ... $" to "$Id$". Other clean filters
// cannot be run here: a file under one whose stat data still matches its
// index entry keeps its index state, any other is shown as changed without
// a content id, and the scan reports a warning for it either way.
//
// go-git's Worktree.Status is not used: it walks ignored trees, ignores
// ctime (so it misses same-size edits with a restored mtime) and hashes raw
// bytes (so autocrlf checkouts look modified).
//
// # Writing the index
//
// Index writes use git's lockfile protocol: index.lock is created with
// O_EXCL (ErrIndexLocked when it exists; a foreign lock is never waited
// for or removed), the new index is encoded into it by our own codec
// (index_codec.go), fsynced and renamed over the index. Entries a write
// does not touch stay byte-identical, assume-unchanged bit included; the
// one exception is git's own: a racily clean entry whose file changed gets
// its size zeroed. TREE is kept with the directories above each changed
// path invalidated, as git does, and REUC is kept; UNTR, FSMN, EOIE/IEOT
// are dropped (git rebuilds them). A split index is written back whole
// (git reads it, and splits it again under core.splitIndex), and so is a
// sparse index, expanded (git makes it sparse again on its next write).
// Staged entries carry the file's stat data, so the next status need not
// hash them; content staged by StageContent has zeroed stat data.
//
// Commit writes trees from the index and moves the branch (or detached
// HEAD) under its .lock after checking the old value, appending reflog
// entries. Hooks are not run, signing is not supported, and a merge,
// cherry-pick, revert or rebase in progress is refused.
//
// The caches stay valid across writes: the stat cache is keyed by stat
// data (and is also cleared for written paths), trees by tree id, and the
// decoded index is dropped after every index write.
//
// Only SHA-1 repositories are supported (go-git v5's object format).
package scm
