// Package snapstore keeps snapshots of working trees as git tree objects, in
// a content-addressed object store of the daemon's own (a bare repository
// layout under the state directory, never inside a user's .git), so that
// `git --git-dir=<dir> cat-file` and friends can inspect it.
//
// It owns:
//   - the store's layout (objects/, objects/info/alternates, HEAD, config);
//   - writing loose objects durably, and reading them back, together with
//     the objects of each project the store borrows from through alternates
//     (loose or packed, the packed ones through scm/internal/gitobj, which
//     searches a pack's mapped index in place rather than decoding it);
//   - Overlay, which builds a snapshot from a base tree (usually a project's
//     HEAD tree, read through an alternate and never copied) plus the few
//     paths that changed, writing only the changed blobs and the trees on
//     their paths, byte-identical to what `git write-tree` would write;
//   - DiffTrees and Lookup over snapshots, and GC of unreachable objects.
//
// It imports go-git's plumbing types, scm/internal/gitobj and the standard
// library only: no protocol, session, server or transport package, and
// not scm either. Callers decide what a turn is and which paths changed;
// this package only stores and compares trees.
//
// # Durability
//
// An object is written to a tmp_obj_* file in its fan-out directory
// (objects/xx), compressed, made read-only and fsynced, then renamed to its
// final name, and the fan-out directory is fsynced so that the rename itself
// is durable. rename(2) within a directory is atomic, so after a crash at any
// moment a final name holds either nothing or the complete object; at worst a
// tmp_obj_* file is left, which readers never look at and GC deletes once it
// is older than the grace period. All of this happens before Overlay (or
// WriteBlob) returns, so the objects of a returned id survive a power loss
// too. Creating a fan-out directory fsyncs objects/, and Open fsyncs
// objects/ once, which covers directories a crashed process created. The
// objects of one call are written concurrently, because nearly all of the
// cost is waiting for fsync and file systems commit concurrent fsyncs
// together.
//
// An object that already exists, in the store or in an alternate, is not
// written again. Reuse has one rule, whether the object is one the
// operation would have written (a blob given by content, a tree) or one
// it refers to (a blob given by id, the base tree returned unchanged, a
// subtree of ours kept by id): under a read lock that GC takes
// exclusively, the object's existence is checked and, when it is one of
// our loose objects, its mtime refreshed (as git does). So a GC runs
// either before the check, which then fails cleanly if the object is
// gone, or after the refresh, and then sees the object young. GC spares
// every object younger than Store.GCGrace and everything a young tree
// reaches, which covers a snapshot that was returned but not yet recorded
// among the trees to keep, even one built on an older snapshot whose
// subtrees it shares.
//
// Reads check the object header but, like go-git, do not rehash the content.
//
// Objects borrowed through an alternate live only as long as the project
// keeps them: a snapshot whose base was a commit the project later
// garbage-collects loses those objects, as with `git clone --shared`.
//
// Only SHA-1 object ids are supported (go-git v5's object format).
package snapstore
