package store

import (
	"testing"

	"go.uber.org/goleak"
)

// bbolt's Check runs on a goroutine; Open must drain it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
