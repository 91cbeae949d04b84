package test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
)

// nobody is the uid and gid an unprivileged daemon runs as when the
// tests run as root.
const nobody = 65534

// startUnprivileged starts the daemon on repo as a user who may be
// refused a file: the current one, or, when the tests run as root (who
// reads a file of mode 000), uid and gid nobody. Then the binary, the
// repository (made writable by everyone, so that the test's own git
// commands, as root, keep working on it) and a state dir of its own are
// made reachable to that user.
func startUnprivileged(t *testing.T, repo string) *daemon {
	t.Helper()
	if os.Geteuid() != 0 {
		return startDaemon(t, repo)
	}
	state := t.TempDir()
	home := t.TempDir()
	for _, p := range []string{binary, repo, state, home} {
		for d := filepath.Dir(p); d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := filepath.WalkDir(repo, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o666)
		if e.IsDir() {
			mode = 0o777
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{state, home} {
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"serve", "--listen", "127.0.0.1:0", "--state-dir", state, "--log-level", "debug", repo}
	d, _ := launchCmd(t, state, func(cmd *exec.Cmd) {
		cmd.Env = append(cleanEnv(), "HOME="+home, "XDG_CONFIG_HOME="+home)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}, args...)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err == nil && !regexp.MustCompile(`(?m)^Uid:\s+65534\s`).Match(status) {
		t.Fatalf("the daemon does not run as uid %d:\n%s", nobody, status)
	}
	return d
}
