package scm

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// readDirents says what os.ReadDir says of every kind of entry, over
// more names than one read of the directory returns.
func TestReadDirentsAgreesWithReadDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 2000 {
		// Long names: the listing is several reads of 32 KiB.
		writeFile(t, dir, fmt.Sprintf("f%04d-%s", i, strings.Repeat("x", 40)), "x")
	}
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Symlink("sub", filepath.Join(dir, "link")))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Logf("no fifo: %v", err)
	}
	f, err := os.Open(dir)
	must(t, err)
	defer f.Close()
	got, err := readDirents(f)
	must(t, err)
	want, err := os.ReadDir(dir)
	must(t, err)
	kind := func(m fs.FileMode) string {
		switch {
		case m.IsDir():
			return "dir"
		case m&fs.ModeSymlink != 0:
			return "symlink"
		case m.IsRegular():
			return "file"
		}
		return "other"
	}
	var g, w []string
	for _, e := range got {
		g = append(g, e.name+" "+kind(e.typ))
	}
	for _, e := range want {
		w = append(w, e.Name()+" "+kind(e.Type()))
	}
	slices.Sort(g)
	if d := diffLines(w, g); d != "" {
		t.Errorf("readDirents (-os.ReadDir +readDirents):\n%s", d)
	}
}
