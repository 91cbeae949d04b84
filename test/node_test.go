package test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNodeClient runs test/node/client.mjs, a client written in
// JavaScript on Node's ws package, against the real daemon: every error
// path must reach it as {"error":{…}} without "result", with a numeric
// code and a string message, and every success as "result" without
// "error". Outside CI it is skipped when node or the package's
// node_modules (npm ci --prefix test/node) is missing; in CI (CI set) that
// is a failure.
func TestNodeClient(t *testing.T) {
	t.Parallel()
	script, _ := filepath.Abs(filepath.Join("node", "client.mjs"))
	node := nodeOrSkip(t)

	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	writeFile(t, repo, "a.txt", "a, edited\n")
	const maxFrame = "65536"
	d := startDaemon(t, "--max-frame", maxFrame, repo)

	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, node, script, d.URL)
	cmd.Env = append(os.Environ(), "AHP_MAX_FRAME="+maxFrame)
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	summary := lines[len(lines)-1]
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	if !strings.Contains(summary, " 0 failed") {
		t.Fatalf("node client summary %q\n%s", summary, out)
	}
	t.Log(summary)
}

// nodeOrSkip returns the node binary, with test/node's dependencies
// installed; it skips the test when they are missing, and fails it in CI.
func nodeOrSkip(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("node", "node_modules", "ws", "package.json"))
	}
	if err != nil {
		if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
			t.Fatalf("CI=%s and the Node client cannot run (install Node and run npm ci --prefix test/node): %v", ci, err)
		}
		t.Skipf("node client not runnable (install Node and run npm ci --prefix test/node): %v", err)
	}
	return node
}

// nodeProc is a Node script under test/node that the test talks with
// over its standard streams.
type nodeProc struct {
	cmd    *exec.Cmd
	stdin  io.Writer
	stdout io.Reader
	stderr strings.Builder // read only once the script has ended (end)
	done   sync.Once
	err    error
}

// startNode starts test/node's script with args under node, with three
// minutes to run; the test's cleanup kills it if it still runs.
func startNode(t *testing.T, node, script string, args ...string) *nodeProc {
	t.Helper()
	path, _ := filepath.Abs(filepath.Join("node", script))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	p := &nodeProc{cmd: exec.CommandContext(ctx, node, append([]string{path}, args...)...)}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if p.stdout, err = p.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		p.end()
	})
	return p
}

// end waits for the script to exit, once, and returns how it did.
func (p *nodeProc) end() error {
	p.done.Do(func() { p.err = p.cmd.Wait() })
	return p.err
}

// kill ends the script and returns what it wrote to its standard error.
func (p *nodeProc) kill() string {
	p.cmd.Process.Kill()
	p.end()
	return p.stderr.String()
}
