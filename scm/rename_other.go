//go:build !unix

package scm

import (
	"os"
	"path/filepath"
)

// renameInto renames tmp (in tmpDir) to name (relative to root).
func renameInto(tmpDir *os.Root, tmp string, root *os.Root, name string) error {
	return os.Rename(filepath.Join(tmpDir.Name(), tmp), filepath.Join(root.Name(), name))
}
