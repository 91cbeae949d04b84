package session

import (
	"errors"
	"fmt"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/store"
)

// A revert whose undo cannot be stored because the state dir's disk is
// full is refused with its own reason, not as an internal error.
func TestUndoOnAFullStateDiskIsRefusedWithItsReason(t *testing.T) {
	err := stateErr(fmt.Errorf("cannot store what the revert would replace (%w)", fmt.Errorf("%w: no space left on device", store.ErrNoSpace)))
	if protocol.CodeOf(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonStateNoSpace {
		t.Errorf("full state disk: %v (code %d, reason %q), want -32011 %s", err, protocol.CodeOf(err), protocol.ReasonOf(err), protocol.ReasonStateNoSpace)
	}
	other := errors.New("bolt: database not open")
	if got := stateErr(other); got != other {
		t.Errorf("another store error became %v", got)
	}
}
