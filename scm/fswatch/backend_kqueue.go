//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package fswatch

import "runtime"

// kqueueBackend: fsnotify watches with kqueue here, a descriptor per file.
const kqueueBackend = true

var backendOS = runtime.GOOS
