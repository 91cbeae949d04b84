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
// package never reads file contents and never writes into the watched tree.
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
//     maximum latency, polls when polling, and calls onBatch, serially.
//
// The queue between them is unbounded in type but capped in size; past the
// cap individual events are dropped and the next Batch has Overflow set.
//
// # Falling back to polling
//
// The Watcher switches from fsnotify to polling, logging once at Warn, when
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
