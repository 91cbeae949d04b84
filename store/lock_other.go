//go:build !unix

package store

func locked(string) bool { return false }

// lockState has no lock to take where flock is missing; bbolt's own
// lock on the database still keeps a second daemon out of it.
func lockState(string) (func(), error) { return func() {}, nil }
