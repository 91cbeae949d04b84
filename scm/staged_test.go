package scm

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestIndexStates checks each way a change can stand in the index against
// what git status --porcelain says of it.
func TestIndexStates(t *testing.T) {
	dir := newGitRepo(t)
	for _, n := range []string{"staged", "unstaged", "partial", "removed", "deleted"} {
		writeFile(t, dir, n+".txt", n+"\n")
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "init")
	writeFile(t, dir, "staged.txt", "staged\nmore\n")
	gitRun(t, dir, "add", "staged.txt")
	writeFile(t, dir, "unstaged.txt", "unstaged\nmore\n")
	writeFile(t, dir, "partial.txt", "partial\nmore\n")
	gitRun(t, dir, "add", "partial.txt")
	writeFile(t, dir, "partial.txt", "partial\nmore\nand more\n")
	gitRun(t, dir, "rm", "-q", "removed.txt")
	must(t, os.Remove(filepath.Join(dir, "deleted.txt")))
	writeFile(t, dir, "added.txt", "added\n")
	gitRun(t, dir, "add", "added.txt")
	writeFile(t, dir, "untracked.txt", "untracked\n")

	r := openRepo(t, dir)
	st, err := r.Status(context.Background())
	must(t, err)
	got, err := r.IndexStates(st.Changes)
	must(t, err)
	want := map[string]IndexState{
		"staged.txt":    {Staged: true},
		"unstaged.txt":  {Unstaged: true},
		"partial.txt":   {Staged: true, Unstaged: true},
		"removed.txt":   {Staged: true},
		"deleted.txt":   {Unstaged: true},
		"added.txt":     {Staged: true},
		"untracked.txt": {Unstaged: true},
	}
	for p, w := range want {
		if g, ok := got[p]; !ok || g.Staged != w.Staged || g.Unstaged != w.Unstaged {
			t.Errorf("%s: %+v (listed %v), want %+v", p, g, ok, w)
		}
	}
	// The index entry is named where there is one.
	for p, in := range map[string]bool{"partial.txt": true, "added.txt": true, "deleted.txt": true, "removed.txt": false, "untracked.txt": false} {
		if g := got[p]; (g.IndexOID != "") != in || (in && g.IndexMode != 0o100644) {
			t.Errorf("%s: index entry %q mode %o, want one: %v", p, g.IndexOID, g.IndexMode, in)
		}
	}
	if len(got) != len(want) {
		t.Errorf("states for %d paths, want %d: %+v", len(got), len(want), got)
	}
}

// TestIndexDigestStable: the digest is the one the formatted form
// "<path>\0<%o mode> <id> <%t intent-to-add>\0" (or "<path>\0conflict\0")
// hashes to, so stamps taken before a restart still compare equal.
func TestIndexDigestStable(t *testing.T) {
	dir := newGitRepo(t)
	for i := range 3000 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%d.txt", i%7, i), fmt.Sprint(i))
	}
	must(t, os.Chmod(filepath.Join(dir, "d0/f0.txt"), 0o755))
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "init")
	writeFile(t, dir, "new.txt", "new\n")
	gitRun(t, dir, "add", "-N", "new.txt")
	r := openRepo(t, dir)
	got, err := r.IndexDigest()
	must(t, err)
	r.mu.Lock()
	idx := r.idx
	r.mu.Unlock()
	h := sha1.New()
	for _, name := range idx.names {
		ie := idx.get(name)
		if ie.conflict {
			fmt.Fprintf(h, "%s\x00conflict\x00", name)
		} else {
			fmt.Fprintf(h, "%s\x00%o %s %t\x00", name, uint32(ie.e.Mode), ie.e.Hash, ie.e.IntentToAdd)
		}
	}
	if want := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("digest %s, formatted form %s", got, want)
	}
}
