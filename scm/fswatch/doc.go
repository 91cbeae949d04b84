// Package fswatch reports which paths of a working tree may have changed.
//
// It owns the daemon's file watching: one fsnotify (inotify) watch per
// non-ignored directory under a root, walks of newly created directories with
// their contents synthesised into the batch, watches on git's own files
// (.git/HEAD, .git/index, refs, packed-refs) given as [Options.Extra],
// coalescing of events into [Batch]es, and a polling fallback (a stat walk)
// for file systems or limits where inotify cannot be trusted.
//
// Events are hints. A Batch lists paths that may have changed; the consumer
// re-stats them, and rescans everything when [Batch.Overflow] is set. The
// package never reads file contents and never writes into the watched tree;
// it only creates short-lived empty files in [Options.ProbeDir] and
// [Options.SyncDir].
//
// # Goroutines
//
// A Watcher runs two goroutines while fsnotify is in use (one while polling):
//
//   - the drain goroutine only moves fsnotify events and errors into an
//     internal queue, as fast as they arrive. It never calls fsnotify's Add or
//     Remove: doing that from the goroutine that reads fsnotify's channels
//     has deadlocked historically (fsnotify #123, #195, #502).
//   - the run goroutine owns all other state: it adds watches for new
//     directories and walks them, coalesces paths with a quiet window and a
//     maximum latency, polls when polling, serves [Watcher.Sync] and
//     [Watcher.Arm], and calls onBatch, serially.
//
// The queue between them is unbounded in type but capped in size; past the
// cap individual events are dropped and the next Batch has Overflow set.
//
// # Arming with the caller's walk
//
// A consumer that reads every directory of the tree anyway (the first full
// status) can arm the watches as it goes instead of the Watcher walking the
// tree first: with [Options.DeferTree], New watches only the Extra paths,
// and the consumer calls [Watcher.Arm] for each directory just before it
// reads it and [Watcher.ArmTree] for a subtree it does not read. A change
// in a directory is then either seen by the consumer's reading or reported
// after it, as with a tree armed first, and no directory is read twice.
//
// # Barrier
//
// [Watcher.Sync] returns once every change that completed before the call
// has been delivered through onBatch, without waiting for the coalescing
// window: a caller takes an exact snapshot at a moment it chooses, such as
// an agent's turn boundary. With fsnotify it relies on inotify reporting the
// events of one instance in order: it creates an empty marker file
// (.changesetd-sync-<pid>-<n>) in [Options.SyncDir], typically the
// repository's .git directory; once the run goroutine has consumed the
// marker's create event, every earlier event has been consumed too, and it
// delivers everything pending (on the run goroutine, so onBatch stays
// serial), removes the marker and releases the caller. Concurrent calls
// share a marker when they can. Marker events never appear in batches and
// are exempt from the queue cap. If the marker's event cannot come (the
// kernel queue overflowed, the Watcher fell back to polling) or does not
// come within 5s, the delivered batch has Overflow set, which covers
// everything. Without
// SyncDir, Sync only waits a short fixed time (20ms) for in-flight events:
// a best effort. While polling, Sync runs one poll cycle at once and
// delivers its result.
//
// # Falling back to polling
//
// On macOS and the BSDs the Watcher polls from the start, because
// fsnotify's kqueue backend holds an open descriptor for every watched
// file (see backend.go). Elsewhere it switches from fsnotify to polling,
// logging once at Warn, when
// adding a watch fails with ENOSPC (fs.inotify.max_user_watches) or EMFILE,
// when the directory count exceeds the watch budget ([Options.MaxWatches]),
// when the kernel queue overflows (IN_Q_OVERFLOW), when Root is on a remote or
// FUSE file system whose changes made elsewhere produce no inotify events, or
// when the optional canary probe ([Options.ProbeDir]) sees no event. A switch
// after start sets Overflow in the next Batch, because changes may have been
// missed in between.
//
// # Imports
//
// Only the standard library and github.com/fsnotify/fsnotify. It must not
// import protocol, session, server, go-git or any other package of this
// module: cmd adapts its batches to session's interfaces.
package fswatch
