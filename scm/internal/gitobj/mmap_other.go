//go:build !unix

package gitobj

import (
	"errors"
	"os"
)

// mapFile is not available here: packs are read with ReadAt.
func mapFile(*os.File, int64) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile([]byte) error { return nil }
