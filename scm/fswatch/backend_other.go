//go:build !(darwin || dragonfly || freebsd || netbsd || openbsd)

package fswatch

import "runtime"

// kqueueBackend: fsnotify's backend here (inotify, ReadDirectoryChangesW)
// watches directories, not each file.
const kqueueBackend = false

var backendOS = runtime.GOOS
