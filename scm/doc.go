// Package scm answers "what changed in this git working tree" in pure Go, on
// top of go-git's plumbing, without a git binary.
//
// It owns:
//   - opening a repository from any directory inside its worktree, including
//     linked worktrees (a .git file with "gitdir:") and their common dir;
//   - reading the index (plumbing/format/index), HEAD, refs, trees and blobs;
//   - working-tree status: HEAD tree (or the merge base with another branch)
//     against the working tree, staged and unstaged changes together, plus
//     untracked files listed one by one;
//   - ignore rules (nested .gitignore, info/exclude, core.excludesFile) and
//     the attributes that decide how git would clean a file before hashing
//     it (core.autocrlf, text/eol/crlf, filter=lfs);
//   - an in-memory stat cache, so repeated scans hash only what changed;
//   - safe reads of worktree files that refuse to leave the worktree.
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
// The racy-git rule (git's Documentation/technical/racy-git.txt): an entry
// whose mtime is not older than the index file itself may have been modified
// within the same timestamp tick after git recorded it, so its stat data
// proves nothing and it is always hashed. Our own cache follows the same rule
// against the moment we started reading the file.
//
// The hash is git's blob id of the clean-filtered content: CRLF becomes LF
// when core.autocrlf or the text/eol attributes say so (including git's
// "auto" safety rules: binary-looking files and files whose index blob
// already has CRLF are left alone), and filter=lfs is applied in-process
// when an lfs filter is configured. Other clean filters, ident and
// working-tree-encoding cannot be applied; such a file keeps its index state
// and the scan reports a warning instead of a spurious change.
//
// go-git's Worktree.Status is not used: it walks ignored trees, ignores
// ctime (so it misses same-size edits with a restored mtime) and hashes raw
// bytes (so autocrlf checkouts look modified).
//
// Only SHA-1 repositories are supported (go-git v5's object format).
package scm
