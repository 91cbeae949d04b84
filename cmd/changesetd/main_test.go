package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The command's helpers (dialling, flag parsing, the output of the
// annotations and turn clients) leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
