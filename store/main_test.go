package store

import (
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// bbolt's Check runs on a goroutine; Open must drain it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openTemp opens a new state database in a temporary directory, closed
// when the test ends.
func openTemp(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
