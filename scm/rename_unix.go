//go:build unix

package scm

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// renameInto renames tmp (in tmpDir) to name (relative to root) with
// renameat(2) on open directories, so the target's parent is the one root
// resolved, inside the working tree, whatever is swapped in meanwhile.
func renameInto(tmpDir *os.Root, tmp string, root *os.Root, name string) error {
	src, err := tmpDir.Open(".")
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := root.Open(filepath.Dir(name))
	if err != nil {
		return err
	}
	defer dst.Close()
	if fi, err := dst.Stat(); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Dir(name))
	}
	if err := unix.Renameat(int(src.Fd()), tmp, int(dst.Fd()), filepath.Base(name)); err != nil {
		return &os.LinkError{Op: "renameat", Old: tmp, New: name, Err: err}
	}
	return nil
}
