package fswatch

import "fmt"

// Why macOS polls
//
// fsnotify's backend on macOS (and the BSDs) is kqueue, which watches open
// descriptors: fsnotify opens one for every file of every watched
// directory, not only for the directory. A working tree of 100,000 files
// would need 100,000 descriptors, far past the default limit of a
// process (256 on macOS) and the system's (kern.maxfilesperproc), and a
// new file costs a descriptor while the tree grows. FSEvents, which
// reports per directory without descriptors, has no maintained pure-Go
// binding in the module proxy (fsnotify's own fsevents package needs cgo,
// which would end the static cross-builds from Linux the releases rely
// on). So there the Watcher polls from the start: a stat walk every
// PollInterval keeps each path's stat data (size, mtime, mode, inode and
// ctime where the platform has them) in the snapshot it compares the next
// walk with, and reports only the paths whose stat changed, which the
// consumer's own stat cache then re-checks. Turn boundaries stay exact:
// Sync runs a walk at once.

// startMode decides how New starts: poll and why, or fsnotify (poll
// false). perFileDescriptors is whether the platform's fsnotify backend
// holds a descriptor per watched file (kqueue); remote names the remote
// file system Root is on, if any.
func startMode(opts Options, remote string, perFileDescriptors bool) (poll bool, reason string) {
	switch {
	case opts.ForcePoll:
		return true, "polling forced by options"
	case perFileDescriptors:
		return true, fmt.Sprintf("fsnotify on %s (kqueue) holds an open file per watched file; polling instead", backendOS)
	case remote != "":
		return true, fmt.Sprintf("root is on a %s file system, where changes made elsewhere produce no inotify events", remote)
	}
	return false, ""
}
