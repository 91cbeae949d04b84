package test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// startOnSmallStateDisk starts the daemon on repo with its state dir on
// a tmpfs of size bytes of its own: the daemon runs in a mount namespace
// of its own (a user namespace too when not root), so the mount goes away
// with it. It skips where namespaces cannot be made.
func startOnSmallStateDisk(t *testing.T, repo string, size int) *daemon {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) to give the daemon a small state disk of its own")
	}
	ns := []string{"--mount", "--propagation", "private"}
	if os.Geteuid() != 0 {
		ns = append([]string{"--user", "--map-root-user"}, ns...)
	}
	mount := fmt.Sprintf(`mount -t tmpfs -o size=%d tmpfs "$0" && exec "$@"`, size)
	probe := t.TempDir()
	if out, err := exec.Command(unshare, append(ns, "sh", "-c", mount, probe, "true")...).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs in a namespace of its own here: %v: %s", err, out)
	}
	state := t.TempDir()
	d, _ := launchCmd(t, state, func(cmd *exec.Cmd) {
		cmd.Path = unshare
		cmd.Args = append(append(append([]string{"unshare"}, ns...), "sh", "-c", mount, state), cmd.Args...)
	}, "serve", "--listen", "127.0.0.1:0", "--state-dir", state, "--log-level", "debug", repo)
	return d
}

// fillStateDisk writes a file into d's state dir, as the daemon sees it,
// until its disk is full.
func fillStateDisk(t *testing.T, d *daemon) {
	t.Helper()
	f, err := os.Create(filepath.Join(fmt.Sprintf("/proc/%d/root", d.cmd.Process.Pid), d.StateDir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the state disk: %v", err)
			}
			return
		}
	}
}

// A revert whose undo cannot be stored because the state dir's disk is
// full is refused with its own reason, -32011 stateNoSpace, never
// -32603, and nothing is written.
func TestFullStateDiskRefusesWithItsReason(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	changed := strings.Repeat("a line the agent wrote\n", 40_000) // ~1 MiB the undo must keep
	writeFile(t, repo, "a.txt", changed)
	d := startOnSmallStateDisk(t, repo, 16<<20)
	e := attachOps(t, d, repo)
	e.waitHas("a.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	fillStateDisk(t, d)
	_, err := e.invoke("revert", resTarget(e.id("a.txt")), nil)
	if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonStateNoSpace {
		t.Errorf("revert with the state disk full: %v (code %d, reason %q), want -32011 %s", err, rpcCode(err), protocol.ReasonOf(err), protocol.ReasonStateNoSpace)
	}
	if got := string(e.disk("a.txt")); got != changed {
		t.Errorf("a.txt was written (%d bytes) by a revert that could not be undone", len(got))
	}
}
