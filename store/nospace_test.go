package store

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// A write that fails on a full disk or quota is recognisable as such, so
// that what could not be kept is refused with its own reason.
func TestNoSpaceIsRecognised(t *testing.T) {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT} {
		if err := noSpace(fmt.Errorf("write state.db: %w", e)); !errors.Is(err, ErrNoSpace) || !errors.Is(err, e) {
			t.Errorf("%v: %v does not wrap ErrNoSpace and the cause", e, err)
		}
	}
	if err := noSpace(syscall.EIO); errors.Is(err, ErrNoSpace) {
		t.Errorf("EIO taken for a full disk: %v", err)
	}
}
