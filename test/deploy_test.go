package test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/store"
	"github.com/changesetd/changesetd/test/fake"
	"github.com/changesetd/changesetd/uritemplate"
)

// launch runs the daemon binary with exactly args and extra environment
// variables (no flags added), waits for its connect line and stops it at
// cleanup. stateDir is where the test expects its state.
func launch(t *testing.T, stateDir string, env []string, args ...string) (*daemon, string) {
	t.Helper()
	return launchCmd(t, stateDir, func(cmd *exec.Cmd) { cmd.Env = append(cleanEnv(), env...) }, args...)
}

// cleanEnv is the test's environment without CHANGESETD_* variables, so a
// developer's own settings cannot leak into a test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHANGESETD_") {
			env = append(env, kv)
		}
	}
	return env
}

// cli runs the binary with args and env and returns its exit code, stdout
// and stderr.
func cli(t *testing.T, stdin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return -1, "", ""
}

// waitLog waits for the daemon's log to contain s, which it writes
// through a pipe a moment after the event; false after 10s.
func (d *daemon) waitLog(s string) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if d.stderr.contains(s) {
			return true
		}
	}
	return false
}

// waitExit waits for the daemon to exit by itself.
func (d *daemon) waitExit(t *testing.T) error {
	t.Helper()
	select {
	case err := <-d.exited:
		d.exited <- err
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("daemon did not exit within 20s")
		return nil
	}
}

func TestSIGHUPShutsDownGracefully(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	info := filepath.Join(d.StateDir, "daemon.json")
	if _, err := os.Stat(info); err != nil {
		t.Fatalf("daemon.json while running: %v", err)
	}
	c := d.client(t, "hup")
	_ = c
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := d.waitExit(t); err != nil {
		t.Fatalf("exit after SIGHUP: %v (want status 0)\n%s", err, d.stderr)
	}
	if _, err := os.Stat(info); !os.IsNotExist(err) {
		t.Errorf("daemon.json left behind after SIGHUP (stat: %v)", err)
	}
	if !strings.Contains(d.stderr.String(), "msg=stopped") {
		t.Errorf("no graceful shutdown in the log:\n%s", d.stderr)
	}
	// The state it left is good for the next start.
	startDaemonIn(t, d.StateDir)

	// Started under nohup (SIGHUP ignored), it keeps running on SIGHUP.
	state := t.TempDir()
	nohup, _ := launchCmd(t, state, func(cmd *exec.Cmd) {
		cmd.Args = append([]string{"sh", "-c", `trap "" HUP; exec "$0" "$@"`, binary}, cmd.Args[1:]...)
		cmd.Path, _ = exec.LookPath("sh")
	}, "serve", "--listen", "127.0.0.1:0", "--state-dir", state, repo)
	if err := nohup.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if resp := httpGet(t, "http://"+nohup.Addr+"/healthz", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a daemon started with SIGHUP ignored stopped on SIGHUP")
	}
}

func TestTurnTokenAndURLFlags(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	const secret = "s3cret-token"
	d := startDaemon(t, "--token", secret, repo)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "no-state") // no daemon.json, no token
	cases := []struct {
		name string
		env  []string
		args []string
	}{
		{"--token with the state dir's address", nil, []string{"--state-dir", d.StateDir, "--token", secret}},
		{"--token-file", nil, []string{"--state-dir", d.StateDir, "--token-file", tokenFile}},
		{"CHANGESETD_TOKEN", []string{"CHANGESETD_TOKEN=" + secret}, []string{"--state-dir", d.StateDir}},
		{"--url host:port and --token", nil, []string{"--state-dir", elsewhere, "--url", d.Addr, "--token", secret}},
		{"--url with the printed connect URL", nil, []string{"--state-dir", elsewhere, "--url", d.URL}},
		{"CHANGESETD_URL and CHANGESETD_TOKEN_FILE", []string{"CHANGESETD_URL=" + d.Addr, "CHANGESETD_TOKEN_FILE=" + tokenFile}, []string{"--state-dir", elsewhere}},
		{"--token wins over CHANGESETD_TOKEN_FILE", []string{"CHANGESETD_TOKEN_FILE=/nonexistent"}, []string{"--state-dir", d.StateDir, "--token", secret}},
	}
	for _, tc := range cases {
		code, out, errOut := cli(t, "", tc.env, append([]string{"turn", "start", "--dir", repo}, tc.args...)...)
		if code != 0 {
			t.Errorf("%s: turn start exit %d: %s", tc.name, code, errOut)
			continue
		}
		id := strings.TrimSpace(out)
		code, out, errOut = cli(t, "", tc.env, append([]string{"turn", "end", "--dir", repo}, tc.args...)...)
		if code != 0 || strings.TrimSpace(out) != id {
			t.Errorf("%s: turn end exit %d, printed %q (want %q): %s", tc.name, code, out, id, errOut)
		}
	}

	// A wrong token says so, for every way of passing one.
	for _, args := range [][]string{
		{"--state-dir", d.StateDir, "--token", "wrong"},
		{"--state-dir", elsewhere, "--url", "ws://" + d.Addr + "/ahp?token=wrong"},
	} {
		code, _, errOut := cli(t, "", nil, append([]string{"turn", "start", "--dir", repo}, args...)...)
		if code != 1 || !strings.Contains(errOut, "wrong token") || strings.Contains(errOut, "bad handshake") {
			t.Errorf("wrong token %v: exit %d, stderr %q; want 1 and \"wrong token\"", args, code, errOut)
		}
	}
	// Both --token and --token-file is a usage error.
	code, _, errOut := cli(t, "", nil, "turn", "start", "--dir", repo, "--state-dir", d.StateDir, "--token", secret, "--token-file", tokenFile)
	if code != 2 || !strings.Contains(errOut, "--token and --token-file") {
		t.Errorf("--token with --token-file: exit %d, stderr %q", code, errOut)
	}
}

func TestFlagsFromEnvironment(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	state := t.TempDir()
	env := []string{
		"CHANGESETD_LISTEN=127.0.0.1:0",
		"CHANGESETD_STATE_DIR=" + state,
		"CHANGESETD_TOKEN=from-env",
		"CHANGESETD_LOG_FORMAT=json",
		"CHANGESETD_ALLOW_HOST=one.example, two.example",
	}
	d, _ := launch(t, state, env, "serve", repo)
	if d.Token != "from-env" {
		t.Errorf("token %q, want the one from CHANGESETD_TOKEN", d.Token)
	}
	if _, err := os.Stat(filepath.Join(state, "daemon.json")); err != nil {
		t.Errorf("CHANGESETD_STATE_DIR not used: %v", err)
	}
	for _, h := range []string{"one.example", "two.example"} {
		if resp := hostProbe(t, d, h); resp.StatusCode == http.StatusForbidden {
			t.Errorf("Host %s from CHANGESETD_ALLOW_HOST refused", h)
		}
	}
	d.stop()
	if !strings.HasPrefix(strings.TrimSpace(d.stderr.String()), "{") {
		t.Errorf("CHANGESETD_LOG_FORMAT=json not used; log:\n%s", d.stderr)
	}

	// A flag wins over its variable; a bad value names the variable.
	d2, _ := launch(t, state, env, "serve", "--token", "from-flag", "--state-dir", state, repo)
	if d2.Token != "from-flag" {
		t.Errorf("token %q, want the --token flag's over CHANGESETD_TOKEN", d2.Token)
	}
	d2.stop()
	code, _, errOut := cli(t, "", append(env, "CHANGESETD_MAX_CONNS=many"), "serve", repo)
	if code != 2 || !strings.Contains(errOut, "CHANGESETD_MAX_CONNS") {
		t.Errorf("bad CHANGESETD_MAX_CONNS: exit %d, stderr %q", code, errOut)
	}
}

// hostProbe sends an upgrade-less GET /ahp with the token and the given
// Host: 403 means the Host check refused it; anything else got past it.
func hostProbe(t *testing.T, d *daemon, host string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+d.Addr+"/ahp", nil)
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp
}

func TestWildcardListenAndAllowHost(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	state := t.TempDir()
	d, banner := launch(t, state, nil, "serve", "--listen", "0.0.0.0:0", "--state-dir", state, "--allow-host", "changesetd", repo)
	if !strings.HasPrefix(d.URL, "ws://127.0.0.1:") {
		t.Errorf("connect URL %q for a wildcard listen, want a loopback one", d.URL)
	}
	if !strings.Contains(banner, "all interfaces") {
		t.Errorf("banner does not say it listens on all interfaces:\n%s", banner)
	}
	port := d.Addr[strings.LastIndex(d.Addr, ":")+1:]
	// The printed URL works, and so does a service name given with --allow-host.
	d.client(t, "printed-url")
	c, _, err := fake.Dial(ctx(t), d.URL, http.Header{"Host": {"changesetd:" + port}})
	if err != nil {
		t.Fatalf("dial with Host changesetd: %v", err)
	}
	c.Close()
	// Another name is refused with a hint in the body and the log.
	resp := hostProbe(t, d, "other-service:"+port)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "--allow-host other-service") {
		t.Errorf("Host other-service: %d %q; want 403 naming --allow-host other-service", resp.StatusCode, body)
	}
	if !d.waitLog("--allow-host other-service") {
		t.Errorf("the log does not name --allow-host:\n%s", d.stderr)
	}
	// The turn command finds the daemon through daemon.json's loopback address.
	if code, _, errOut := cli(t, "", nil, "turn", "start", "--dir", repo, "--state-dir", state); code != 0 {
		t.Errorf("turn start against a wildcard listener: %s", errOut)
	}
}

func TestProjectSwappedAtSamePathGetsNewSession(t *testing.T) {
	t.Parallel()
	// Every container mounts its project at the same path; here a
	// directory plays /workspace and holds project A, then B, then A again.
	parent := t.TempDir()
	if real, err := filepath.EvalSymlinks(parent); err == nil {
		parent = real
	}
	workspace := filepath.Join(parent, "workspace")
	makeProject := func(name string) {
		t.Helper()
		if err := os.MkdirAll(workspace, 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, workspace, "init", "-q", "-b", "main")
		writeFile(t, workspace, name+".txt", name+"\n")
		git(t, workspace, "add", "-A")
		git(t, workspace, "commit", "-q", "-m", "project "+name)
	}
	sessionOf := func(d *daemon) (string, []string) {
		t.Helper()
		c := d.client(t, "swap")
		s := onlySession(t, c)
		done, _ := chatTurns(t, c, s.Resource)
		return s.Resource, done
	}

	makeProject("a")
	state := t.TempDir()
	d := startDaemonIn(t, state, workspace)
	d.turnCLI(t, "start", "--dir", workspace, "--message", "work on A")
	writeFile(t, workspace, "a.txt", "a changed\n")
	d.turnCLI(t, "end", "--dir", workspace)
	uriA, turnsA := sessionOf(d)
	if len(turnsA) != 1 {
		t.Fatalf("project A's turns: %v", turnsA)
	}
	d.stop()

	// Same project after a restart: same session, same turns.
	d = startDaemonIn(t, state, workspace)
	if uri, turns := sessionOf(d); uri != uriA || len(turns) != 1 {
		t.Fatalf("after a restart: session %s with turns %v, want %s with %v", uri, turns, uriA, turnsA)
	}
	d.stop()

	// Project B at the same path: a new session without A's turns.
	if err := os.Rename(workspace, filepath.Join(parent, "a-away")); err != nil {
		t.Fatal(err)
	}
	makeProject("b")
	d = startDaemonIn(t, state, workspace)
	uriB, turnsB := sessionOf(d)
	if uriB == uriA || len(turnsB) != 0 {
		t.Errorf("project B at A's path: session %s with turns %v; want a new session without turns (A's was %s)", uriB, turnsB, uriA)
	}
	c := d.client(t, "b")
	cat := catalogue(t, c, uriB)
	if files := changesetSummary(t, c, cat["session"].URITemplate, workspace); len(files) != 0 {
		t.Errorf("project B's session changeset inherits A's baseline: %v", files)
	}
	d.stop()
	if !strings.Contains(d.stderr.String(), "another repository") {
		t.Errorf("the log does not say why A's session was not restored:\n%s", d.stderr)
	}

	// A back at its path: its session comes back with its turn.
	if err := os.Rename(workspace, filepath.Join(parent, "b-away")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(parent, "a-away"), workspace); err != nil {
		t.Fatal(err)
	}
	d = startDaemonIn(t, state, workspace)
	if uri, turns := sessionOf(d); uri != uriA || len(turns) != 1 {
		t.Errorf("project A back: session %s with turns %v, want %s with %v", uri, turns, uriA, turnsA)
	}
}

// chatsOf returns the session's chats with their completed turns and the
// active one (as "*id").
func chatsOf(t *testing.T, c *fake.Client, sessionURI string) map[string][]string {
	t.Helper()
	raw, _ := subscribe(t, c, sessionURI)
	var st protocol.SessionState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, ch := range st.Chats {
		raw, _ := subscribe(t, c, ch.Resource)
		var chat protocol.ChatState
		if err := json.Unmarshal(raw, &chat); err != nil {
			t.Fatal(err)
		}
		turns := []string{}
		for _, tr := range chat.Turns {
			turns = append(turns, tr.ID+":"+tr.Message.Text)
		}
		if chat.ActiveTurn != nil {
			turns = append(turns, "*"+chat.ActiveTurn.ID+":"+chat.ActiveTurn.Message.Text)
		}
		out[ch.Resource] = turns
		c.Call(ctx(t), protocol.MethodUnsubscribe, map[string]any{"channel": ch.Resource}, nil)
	}
	c.Call(ctx(t), protocol.MethodUnsubscribe, map[string]any{"channel": sessionURI}, nil)
	return out
}

func TestTwoAgentsInOneDirectoryKeepTheirOwnTurns(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	d := startDaemon(t, repo)
	hook := func(edge, sessionID, prompt string) {
		t.Helper()
		in, _ := json.Marshal(map[string]string{"cwd": repo, "session_id": sessionID, "prompt": prompt, "hook_event_name": "x"})
		code, out, errOut := cli(t, string(in), nil, "turn", edge, "--hook", "--state-dir", d.StateDir)
		if code != 0 || out != "" {
			t.Fatalf("hook %s for %s: exit %d, stdout %q, stderr %q", edge, sessionID, code, out, errOut)
		}
	}
	const agentA, agentB = "0f9c2b1e-aaaa-4c1e-9d3b-111111111111", "7d1e4c2a-bbbb-4f0a-8e2c-222222222222"
	hook("start", agentA, "A: edit a")
	writeFile(t, repo, "a.txt", "a by A\n")
	hook("start", agentB, "B: edit b")
	writeFile(t, repo, "b.txt", "b by B\n")
	hook("end", agentA, "") // A's Stop must not end B's turn
	c := d.client(t, "agents")
	sess := onlySession(t, c).Resource
	chatA, chatB := protocol.ChatURI(sess, agentA), protocol.ChatURI(sess, agentB)
	want := map[string][]string{
		protocol.ChatURI(sess, protocol.DefaultChatID): {},
		chatA: {"turn-1:A: edit a"},
		chatB: {"*turn-2:B: edit b"},
	}
	if got := chatsOf(t, c, sess); !reflect.DeepEqual(got, want) {
		t.Fatalf("chats after A's Stop:\n got %v\nwant %v", got, want)
	}
	hook("end", agentB, "")
	hook("end", agentA, "") // a second Stop of A: nothing running there, not an error
	want[chatB] = []string{"turn-2:B: edit b"}
	if got := chatsOf(t, c, sess); !reflect.DeepEqual(got, want) {
		t.Fatalf("chats after B's Stop:\n got %v\nwant %v", got, want)
	}
	// Each turn's changeset is its own agent's span of time.
	cat := catalogue(t, c, sess)
	turn := func(id string) []string {
		return changesetSummary(t, c, expand(t, cat["turn"].URITemplate, uritemplate.Values{"turnId": id}), repo)
	}
	if got := turn("turn-2"); len(got) != 1 || !strings.Contains(got[0], "b.txt") {
		t.Errorf("B's turn changeset: %v, want b.txt only", got)
	}
	// The chats and their turns survive a restart.
	d.stop()
	d = startDaemonIn(t, d.StateDir, repo)
	c = d.client(t, "agents-again")
	if got := chatsOf(t, c, sess); !reflect.DeepEqual(got, want) {
		t.Errorf("chats after a restart:\n got %v\nwant %v", got, want)
	}
}

func TestPlainDirectoryTurns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for name, content := range map[string]string{
		"a.txt":                   "a\n",
		"src/main.go":             "package main\n",
		".gitignore":              "*.log\nbuild/\n",
		"app.log":                 "log\n",
		"build/out.txt":           "built\n",
		"node_modules/x/index.js": "x\n",
	} {
		writeFile(t, dir, name, content)
	}
	d := startDaemon(t, dir)
	c := d.client(t, "plain")
	sess := onlySession(t, c).Resource
	cat := catalogue(t, c, sess)
	for _, kind := range []string{"session", "turn", "compare-turns"} {
		if _, ok := cat[kind]; !ok {
			t.Errorf("a plain directory's catalogue lacks %s", kind)
		}
	}
	for _, kind := range []string{"uncommitted", "branch"} {
		if _, ok := cat[kind]; ok {
			t.Errorf("a plain directory's catalogue offers %s, which needs git", kind)
		}
	}

	hook := func(edge, prompt string) {
		t.Helper()
		in, _ := json.Marshal(map[string]string{"cwd": dir, "session_id": "agent-1", "prompt": prompt})
		if code, _, errOut := cli(t, string(in), nil, "turn", edge, "--hook", "--state-dir", d.StateDir); code != 0 {
			t.Fatalf("hook %s in a plain directory: %s", edge, errOut)
		}
	}
	hook("start", "edit")
	writeFile(t, dir, "a.txt", "a\nmore\n")
	writeFile(t, dir, "src/new.go", "package main\n\nfunc f() {}\n")
	writeFile(t, dir, "app2.log", "ignored\n")
	writeFile(t, dir, "build/more.txt", "ignored\n")
	writeFile(t, dir, "node_modules/y.js", "heavy, skipped\n")
	writeFile(t, dir, ".venv/lib/z.py", "heavy, skipped\n")
	hook("end", "")
	hook("start", "delete")
	if err := os.Remove(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	hook("end", "")

	turnURI := func(id string) string {
		return expand(t, cat["turn"].URITemplate, uritemplate.Values{"turnId": id})
	}
	want1 := []string{"add src/new.go +3 -0", "modify a.txt +1 -0"}
	if got := changesetSummary(t, c, turnURI("turn-1"), dir); !reflect.DeepEqual(got, want1) {
		t.Errorf("turn 1 in a plain directory = %v, want %v", got, want1)
	}
	cmp := expand(t, cat["compare-turns"].URITemplate, uritemplate.Values{"originalTurnId": "turn-1", "modifiedTurnId": "turn-2"})
	if got := changesetSummary(t, c, cmp, dir); !reflect.DeepEqual(got, []string{"delete a.txt +0 -2"}) {
		t.Errorf("compare turn-1 turn-2 = %v", got)
	}
	wantSession := []string{"add src/new.go +3 -0", "delete a.txt +0 -1"}
	if got := changesetSummary(t, c, cat["session"].URITemplate, dir); !reflect.DeepEqual(got, wantSession) {
		t.Errorf("session changeset of a plain directory = %v, want %v", got, wantSession)
	}

	// It is a real session: it survives a restart with its turns.
	d.stop()
	d = startDaemonIn(t, d.StateDir, dir)
	c = d.client(t, "plain-again")
	if got := changesetSummary(t, c, turnURI("turn-1"), dir); !reflect.DeepEqual(got, want1) {
		t.Errorf("turn 1 after a restart = %v, want %v", got, want1)
	}
}

func TestHookInUnservableDirectoryLeavesNoSession(t *testing.T) {
	t.Parallel()
	// The home directory is not a repository and too broad to snapshot:
	// the hook fails (without exit code 2), and no session stays behind,
	// now or after a restart. Nor does a turn end create a session.
	home := t.TempDir()
	if real, err := filepath.EvalSymlinks(home); err == nil {
		home = real
	}
	writeFile(t, home, "notes.txt", "n\n")
	state := t.TempDir()
	d, _ := launch(t, state, []string{"HOME=" + home}, "serve", "--listen", "127.0.0.1:0", "--state-dir", state)
	in, _ := json.Marshal(map[string]string{"cwd": home, "session_id": "agent-1", "prompt": "hi"})
	code, _, errOut := cli(t, string(in), nil, "turn", "start", "--hook", "--state-dir", state)
	if code != 1 || !strings.Contains(errOut, "snapshot") {
		t.Errorf("hook in the home directory: exit %d, stderr %q; want 1 saying it cannot snapshot", code, errOut)
	}
	count := func(d *daemon) int {
		var res protocol.ListSessionsResult
		if err := d.client(t, "count").Call(ctx(t), protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &res); err != nil {
			t.Fatal(err)
		}
		return len(res.Items)
	}
	if n := count(d); n != 0 {
		t.Errorf("%d sessions after the failed hook, want none", n)
	}
	// A Stop hook where no session is has nothing to end, and creates none.
	project := t.TempDir()
	writeFile(t, project, "p.txt", "p\n")
	stop, _ := json.Marshal(map[string]string{"cwd": project, "session_id": "agent-1"})
	if code, _, errOut := cli(t, string(stop), nil, "turn", "end", "--hook", "--state-dir", state); code != 0 {
		t.Errorf("Stop hook without a session: exit %d, %s", code, errOut)
	}
	if code, _, errOut := cli(t, "", nil, "turn", "end", "--dir", project, "--state-dir", state); code != 1 || !strings.Contains(errOut, "nothing to end") {
		t.Errorf("turn end without a session: exit %d, %q", code, errOut)
	}
	if n := count(d); n != 0 {
		t.Errorf("%d sessions after turn end without one, want none", n)
	}
	d.stop()
	d, _ = launch(t, state, []string{"HOME=" + home}, "serve", "--listen", "127.0.0.1:0", "--state-dir", state)
	if n := count(d); n != 0 {
		t.Errorf("%d sessions after a restart, want none", n)
	}
}

func TestSessionFromEarlierVersionLearnsItsRepository(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	if real, err := filepath.EvalSymlinks(parent); err == nil {
		parent = real
	}
	workspace := filepath.Join(parent, "workspace")
	project := func(name string) {
		t.Helper()
		os.MkdirAll(workspace, 0o755)
		git(t, workspace, "init", "-q", "-b", "main")
		writeFile(t, workspace, name+".txt", name+"\n")
		git(t, workspace, "add", "-A")
		git(t, workspace, "commit", "-q", "-m", name)
	}
	project("a")
	state := t.TempDir()
	d := startDaemonIn(t, state, workspace)
	d.client(t, "v1")
	d.stop()

	// Make the record look like an earlier version's: no repository names,
	// and the path-only id that version gave it.
	db, err := store.Open(filepath.Join(state, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := db.Sessions()
	if len(recs) != 1 {
		t.Fatalf("%d stored sessions", len(recs))
	}
	rec := recs[0]
	db.DeleteSession(rec.ID, "")
	h := sha256.Sum256([]byte(workspace))
	x := hex.EncodeToString(h[:16])
	rec.ID = x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
	rec.URI = protocol.SessionScheme + "/" + rec.ID
	rec.Workspaces[0].Repo, rec.Workspaces[0].Head = "", ""
	if err := db.PutSession(rec); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// The old session is restored and used for the DIR, and learns its
	// repository...
	d = startDaemonIn(t, state, workspace)
	if got := onlySession(t, d.client(t, "v2")).Resource; got != rec.URI {
		t.Fatalf("session %s after the upgrade, want the earlier version's %s", got, rec.URI)
	}
	d.stop()
	// ...so another project at the same path is told apart from then on.
	os.Rename(workspace, filepath.Join(parent, "a-away"))
	project("b")
	d = startDaemonIn(t, state, workspace)
	if got := onlySession(t, d.client(t, "v2-b")).Resource; got == rec.URI {
		t.Errorf("project B at the path of an earlier version's session got that session")
	}
}

// TestCPUProfileFlag: --cpu-profile writes a CPU profile (gzipped
// protobuf, what go tool pprof reads) of the run when the daemon stops.
func TestCPUProfileFlag(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	d := startDaemon(t, "--cpu-profile", prof, repo)
	c := d.client(t, "profiled")
	onlySession(t, c)
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := d.waitExit(t); err != nil {
		t.Fatalf("exit: %v\n%s", err, d.stderr)
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not a gzipped profile: %v", prof, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil || len(b) == 0 {
		t.Fatalf("profile: %d bytes, %v", len(b), err)
	}
}
