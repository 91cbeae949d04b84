//go:build linux

package test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nonroot is the user the image runs as (distroless's "nonroot").
const nonroot = 65532

// dockerfileBuild is the Dockerfile's "go build" command, without RUN.
func dockerfileBuild(t *testing.T) string {
	t.Helper()
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(df), "\n") {
		if rest, ok := strings.CutPrefix(l, "RUN "); ok && strings.Contains(rest, "go build") {
			return rest
		}
	}
	t.Fatal("the Dockerfile has no RUN … go build line")
	return ""
}

// TestContainerLikeRun does what the image does, as far as can be done
// without a container engine: the Dockerfile's own build line (static,
// -trimpath, the version and commit from build arguments), the image's environment instead of flags, a state dir made
// like the image's /state (mode 0700, owned by 65532), and, when the test
// runs as root, the daemon and its health check run as uid 65532 against a
// working tree owned by root, as with a bind mount.
func TestContainerLikeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second binary")
	}
	asRoot := os.Getuid() == 0
	bin := filepath.Join(t.TempDir(), "changesetd")
	// The Dockerfile's own build command, with its build arguments.
	const commit = "0123456789abcdef0123456789abcdef01234567"
	line := dockerfileBuild(t)
	line = strings.NewReplacer("${VERSION}", "container-test", "${COMMIT}", commit, "-o /out/changesetd", "-o "+bin).Replace(line)
	build := exec.Command("sh", "-c", line)
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build, %s: %v\n%s", line, err, out)
	}
	if out, err := exec.Command(bin, "version").Output(); err != nil || !strings.HasPrefix(string(out), "changesetd container-test commit "+commit[:12]+" ") {
		t.Errorf("the image's version: %q, %v; want the build arguments VERSION and COMMIT", out, err)
	}
	// Static: no interpreter and no shared libraries, so it runs on
	// distroless/static.
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	libs, _ := f.ImportedLibraries()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary needs a dynamic loader")
		}
	}
	f.Close()
	if len(libs) > 0 {
		t.Errorf("the binary links shared libraries %v", libs)
	}

	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "a\nchanged\n")
	root := t.TempDir()
	state := filepath.Join(root, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	asUser := func(cmd *exec.Cmd) {}
	if asRoot {
		// Let uid 65532 reach the binary, the working tree and the state
		// dir's parent, as in the image; the state dir itself is its own.
		for _, p := range []string{bin, repo, root} {
			for d := filepath.Dir(p); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(state, nonroot, nonroot); err != nil {
			t.Fatal(err)
		}
		asUser = func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nonroot, Gid: nonroot}}
		}
	} else {
		t.Log("not root: the daemon runs as the current user")
	}
	imageEnv := []string{"CHANGESETD_LISTEN=0.0.0.0:0", "CHANGESETD_STATE_DIR=" + state, "HOME=/home/nonroot"}
	run := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(cleanEnv(), imageEnv...)
		asUser(cmd)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}

	// Before the daemon runs, the health check fails.
	if code, out := run("health"); code != 1 {
		t.Errorf("health without a daemon: exit %d (%s), want 1", code, out)
	}

	// The image's command: "serve /workspace", everything else from ENV.
	d, _ := launchCmd(t, state, func(cmd *exec.Cmd) {
		cmd.Path, cmd.Args[0] = bin, bin // the static build
		cmd.Env = append(cleanEnv(), imageEnv...)
		asUser(cmd)
	}, "serve", repo)
	if !strings.HasPrefix(d.URL, "ws://127.0.0.1:") {
		t.Errorf("connect URL %s", d.URL)
	}
	if code, out := run("health"); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("HEALTHCHECK command: exit %d, %q; want 0 and ok", code, out)
	}
	if code, _, errOut := cli(t, "", nil, "health", "--url", d.Addr); code != 0 {
		t.Errorf("health --url: %s", errOut)
	}
	st, err := os.Stat(filepath.Join(state, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("token mode %v", st.Mode().Perm())
	}
	if sys := st.Sys().(*syscall.Stat_t); asRoot && sys.Uid != nonroot {
		t.Errorf("token owned by uid %d, want %d", sys.Uid, nonroot)
	}
	c := d.client(t, "container")
	sess := onlySession(t, c)
	cat := catalogue(t, c, sess.Resource)
	if got := changesetSummary(t, c, cat["uncommitted"].URITemplate, repo); len(got) != 1 || !strings.Contains(got[0], "a.txt") {
		t.Errorf("uncommitted changeset read as uid %d: %v", nonroot, got)
	}
	d.stop()
	if code, _ := run("health"); code != 1 {
		t.Errorf("health after the daemon stopped: exit %d, want 1", code)
	}

	if !asRoot {
		return
	}
	// A state dir left to root (a volume the image did not prepare) fails
	// the first start with a hint, not a bare "permission denied".
	rootOwned := filepath.Join(root, "root-owned")
	if err := os.Mkdir(rootOwned, 0o755); err != nil {
		t.Fatal(err)
	}
	imageEnv = []string{"CHANGESETD_LISTEN=127.0.0.1:0", "CHANGESETD_STATE_DIR=" + rootOwned}
	code, out := run("serve", repo)
	if code != 1 || !strings.Contains(out, "--user") || !strings.Contains(out, "uid 65532") {
		t.Errorf("root-owned state dir: exit %d, %q; want 1 with a hint", code, out)
	}
}
