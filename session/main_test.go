package session

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts through a Manager or a mailbox must have
// ended with it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
