package test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/changesetd/changesetd/test/fake"
)

// binary is the daemon built once for the whole package.
var binary string

// e2eParallel is how many end-to-end tests run at once unless -parallel
// says otherwise: they mostly wait on daemons, git and the browser (a
// run used a seventh of one core), so on two cores they take turns well.
const e2eParallel = 6

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(e2eParallel))
	}
	dir, err := os.MkdirTemp("", "changesetd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "changesetd")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "../cmd/changesetd")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build daemon:", err)
		os.Exit(1)
	}
	// Run under nohup, the daemons started here would inherit SIGHUP
	// ignored, as a daemon started that way must keep it
	// (TestSIGHUPShutsDownGracefully starts one so on purpose): asking
	// for it here gives every daemon started the default.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	code := m.Run()
	// Every client goroutine of the tests must have ended with its test.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked by the tests:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemon is a running changesetd process.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	URL    string // ws://host:port/ahp?token=...
	Review string // http://host:port/#token=..., the review page
	// VSCode and VSCodeSetting are the lines for VS Code's Agents window:
	// the address to add (ws://host:port/ahp?tkn=...) and a
	// chat.remoteAgentHosts setting with it.
	VSCode, VSCodeSetting string
	Addr                  string
	Token                 string
	StateDir              string
	stderr                *lockedWriter
	exited                chan error
}

// startDaemon runs "changesetd serve" on a free loopback port with a fresh
// state dir, plus args, and waits for its ready line.
func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	return startDaemonIn(t, t.TempDir(), args...)
}

// startDaemonIn is startDaemon with a given state dir, to restart a
// daemon on the state a previous one left.
func startDaemonIn(t *testing.T, stateDir string, args ...string) *daemon {
	t.Helper()
	full := append([]string{"serve", "--listen", "127.0.0.1:0", "--state-dir", stateDir, "--log-level", "debug"}, args...)
	d, _ := launchCmd(t, stateDir, func(*exec.Cmd) {}, full...)
	return d
}

// launchCmd runs the daemon binary with args, adjusted by prepare before
// it starts, and waits for its connect and review lines (touchSources
// first, inside a test, where go test records opened files). It also
// returns everything printed on stdout up to them.
func launchCmd(t *testing.T, stateDir string, prepare func(*exec.Cmd), args ...string) (*daemon, string) {
	t.Helper()
	touchSources()
	d := &daemon{t: t, StateDir: stateDir, stderr: &lockedWriter{b: &strings.Builder{}}, exited: make(chan error, 1)}
	d.cmd = exec.Command(binary, args...)
	d.cmd.Stderr = d.stderr
	prepare(d.cmd)
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	go func() { d.exited <- d.cmd.Wait() }()
	var banner strings.Builder
	timeout := time.After(30 * time.Second)
	for d.URL == "" || d.Review == "" || d.VSCodeSetting == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("daemon exited before ready; stderr:\n%s", d.stderr)
			}
			banner.WriteString(l + "\n")
			if u, ok := strings.CutPrefix(l, "connect: "); ok {
				d.URL = u
			}
			if u, ok := strings.CutPrefix(l, "review: "); ok {
				d.Review = u
			}
			if u, ok := strings.CutPrefix(l, "vscode: "); ok {
				d.VSCode = u
			}
			if u, ok := strings.CutPrefix(l, "vscode setting: "); ok {
				d.VSCodeSetting = u
			}
		case <-timeout:
			t.Fatalf("daemon not ready in 30s; stderr:\n%s", d.stderr)
		}
	}
	rest := strings.TrimPrefix(d.URL, "ws://")
	d.Addr = rest[:strings.Index(rest, "/")]
	d.Token = d.URL[strings.Index(d.URL, "token=")+len("token="):]
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", d.stderr)
		}
	})
	return d, banner.String()
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop() error {
	if d.cmd.ProcessState != nil {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		d.exited <- err
		return err
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		d.t.Errorf("daemon did not stop within 20s of SIGTERM")
		return fmt.Errorf("killed")
	}
}

// dial connects a client and closes it at cleanup.
func (d *daemon) dial(t *testing.T) *fake.Client {
	t.Helper()
	c, _, err := fake.Dial(ctx(t), d.URL, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// client dials and initializes with clientID.
func (d *daemon) client(t *testing.T, clientID string) *fake.Client {
	t.Helper()
	c := d.dial(t)
	if _, err := c.Initialize(ctx(t), clientID, nil); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// ctx is a per-call deadline generous enough for a loaded CI machine.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func httpGet(t *testing.T, url string, h http.Header) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// gitRepo creates a repository with committed files.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	git(t, dir, "init", "-q", "-b", "main")
	for name, content := range files {
		writeFile(t, dir, name, content)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "core.autocrlf=false", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// replaceFile writes name as an editor that saves atomically does: the
// new content is renamed into place, so no reader sees it half written.
func replaceFile(t *testing.T, dir, name, content string) {
	t.Helper()
	writeFile(t, dir, name+".saving", content)
	if err := os.Rename(filepath.Join(dir, filepath.FromSlash(name+".saving")), filepath.Join(dir, filepath.FromSlash(name))); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
