//go:build !linux && !darwin

package fswatch

import "io/fs"

func sysStat(fs.FileInfo) (ino uint64, ctime int64) { return 0, 0 }

func remoteFSName(string) string { return "" }

func defaultWatchBudget() int { return -1 }
