package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

// sessionCount is how many sessions the daemon lists.
func sessionCount(t *testing.T, c *fake.Client) int {
	t.Helper()
	var list protocol.ListSessionsResult
	if err := c.Call(ctx(t), protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &list); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func TestPortInUseNamesTheRunningDaemon(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	code, _, stderr := cli(t, "", nil, "serve", "--listen", d.Addr, "--state-dir", d.StateDir, repo)
	pid := "pid " + strconv.Itoa(d.cmd.Process.Pid)
	if code != 1 || !strings.Contains(stderr, "a changesetd is already running: "+pid) || !strings.Contains(stderr, "--listen") {
		t.Errorf("second serve on %s: exit %d, stderr %q; want 1, the running daemon's %s and --listen", d.Addr, code, stderr, pid)
	}
	// Another state dir knows nothing of the daemon: the port is taken by
	// something else, as far as it can tell.
	code, _, stderr = cli(t, "", nil, "serve", "--listen", d.Addr, "--state-dir", t.TempDir(), repo)
	if code != 1 || !strings.Contains(stderr, "another program, or a changesetd with another state dir") || !strings.Contains(stderr, "--listen") {
		t.Errorf("serve on %s with another state dir: exit %d, stderr %q", d.Addr, code, stderr)
	}
}

func TestServeTakesFlagsAfterItsDirectories(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	state := t.TempDir()
	d, _ := launch(t, state, nil, "serve", repo, "--listen", "127.0.0.1:0", "--state-dir", state, "--log-level", "debug")
	if got := sessionCount(t, d.client(t, "p")); got != 1 {
		t.Errorf("%d sessions, want the one for %s", got, repo)
	}
	if !d.waitLog("level=DEBUG") {
		t.Errorf("--log-level debug after DIR was not applied:\n%s", d.stderr)
	}
}

func TestReadOnlyCommandsCreateNoSession(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	c := d.client(t, "panel")
	plain := t.TempDir() // not a git repository, and no session has it
	for _, args := range [][]string{
		{"diff", "--dir", plain},
		{"diff", "--dir", plain, "--baseline"},
		{"annotations", "--dir", plain},
		{"turn", "end", "--dir", plain},
		{"turn", "status", "--dir", plain},
	} {
		code, _, stderr := cli(t, "", nil, append(args, "--state-dir", d.StateDir)...)
		if code != 1 || !strings.Contains(stderr, "no session of the daemon has") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and that no session has the directory", args, code, stderr)
		}
	}
	if n := sessionCount(t, c); n != 0 {
		t.Errorf("read-only commands left %d sessions", n)
	}
	code, stdout, stderr := cli(t, "", nil, "sessions", "--state-dir", d.StateDir)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "serves no session") {
		t.Errorf("sessions of an empty daemon: exit %d, %q, %q", code, stdout, stderr)
	}
}

func TestSessionsListsAndRemoves(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	c := d.client(t, "panel")
	sum := onlySession(t, c)
	id := strings.TrimPrefix(sum.Resource, protocol.SessionScheme+"/")
	d.turnCLI(t, "start", "--dir", repo, "--message", "work")

	code, stdout, stderr := cli(t, "", nil, "sessions", "--state-dir", d.StateDir)
	if code != 0 {
		t.Fatalf("sessions: exit %d, %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !regexp.MustCompile(`^`+regexp.QuoteMeta(id)+`\s+`+regexp.QuoteMeta(repo)+`\s+\S+\s+1$`).MatchString(lines[1]) {
		t.Errorf("sessions printed:\n%s\nwant a header and %s, %s, its creation time and 1 running turn", stdout, id, repo)
	}

	code, stdout, stderr = cli(t, "", nil, "sessions", "rm", id, "--state-dir", d.StateDir)
	if code != 0 || stdout != "removed "+id+"\n" {
		t.Fatalf("sessions rm: exit %d, %q, %q", code, stdout, stderr)
	}
	if n := sessionCount(t, c); n != 0 {
		t.Errorf("%d sessions after sessions rm", n)
	}
	code, _, stderr = cli(t, "", nil, "sessions", "rm", id, "--state-dir", d.StateDir)
	if code != 1 || !strings.Contains(stderr, id) {
		t.Errorf("removing it again: exit %d, %q; want 1 naming it", code, stderr)
	}
}

func TestStateDirFallbackAndOwnerAreLogged(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	var env []string
	for _, kv := range cleanEnv() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_STATE_HOME=") && !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	env = append(env, "TMPDIR="+tmp)
	d, _ := launchCmd(t, filepath.Join(tmp, "changesetd"), func(cmd *exec.Cmd) { cmd.Env = env }, "serve", "--listen", "127.0.0.1:0")
	if !d.waitLog("keeping state in the temp directory") || !d.stderr.contains("stateDir="+filepath.Join(tmp, "changesetd")) {
		t.Errorf("no warning about the temp-dir state dir:\n%s", d.stderr)
	}
	if _, err := os.Stat(filepath.Join(tmp, "changesetd", "token")); err != nil {
		t.Errorf("the fallback state dir has no token: %v", err)
	}

	if os.Getuid() != 0 {
		t.Skip("a state dir owned by another user needs root to make")
	}
	state := t.TempDir()
	if err := os.Chown(state, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	other, _ := launch(t, state, nil, "serve", "--listen", "127.0.0.1:0", "--state-dir", state)
	if !other.waitLog("the state dir belongs to another user") || !other.stderr.contains("owner=65532") {
		t.Errorf("no warning about a state dir owned by uid 65532:\n%s", other.stderr)
	}
}

func TestHelpConvention(t *testing.T) {
	t.Parallel()
	singleDash := regexp.MustCompile(`(?m)^\s+-[a-z]`)
	for _, args := range [][]string{
		{"serve"}, {"turn", "start"}, {"turn", "end"}, {"turn", "status"}, {"annotations"},
		{"health"}, {"diff"}, {"edits"}, {"sessions"}, {"service", "install"},
	} {
		code, stdout, stderr := cli(t, "", nil, append(args, "--help")...)
		help := stdout + stderr
		if code != 0 || !strings.Contains(help, "Usage:") {
			t.Errorf("%v --help: exit %d\n%s", args, code, help)
			continue
		}
		if m := singleDash.FindString(help); m != "" {
			t.Errorf("%v --help lists a flag as %q; every help says --flag\n%s", args, m, help)
		}
		switch args[0] {
		case "diff", "edits", "turn", "annotations", "sessions":
			for _, v := range []string{"[$CHANGESETD_STATE_DIR]", "[$CHANGESETD_URL]", "[$CHANGESETD_TOKEN]"} {
				if !strings.Contains(help, v) {
					t.Errorf("%v --help does not name %s", args, v)
				}
			}
			if strings.Contains(help, "[$CHANGESETD_TIMEOUT]") {
				t.Errorf("%v --help names CHANGESETD_TIMEOUT, which it does not read", args)
			}
		case "health":
			if strings.Contains(help, "--token") {
				t.Errorf("health needs no token, yet its help lists --token:\n%s", help)
			}
		}
		if args[0] == "diff" && !strings.Contains(help, "--session string") {
			t.Errorf("diff's --session takes the session URI as everywhere else:\n%s", help)
		}
		// A flag the command does not know is named as it was typed.
		code, _, stderr = cli(t, "", nil, append(args, "--no-such-flag")...)
		if code != 2 || !strings.Contains(stderr, "not defined: --no-such-flag") || strings.Contains(stderr, " -no-such-flag") {
			t.Errorf("%v --no-such-flag: exit %d\n%s", args, code, stderr)
		}
	}
}

func TestTurnHookInputIsChecked(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	c := d.client(t, "panel")
	sum := onlySession(t, c)
	for _, tc := range []struct{ stdin, want string }{
		{"", "no hook input on standard input"},
		{"  \n", "no hook input on standard input"},
		{"Rename the helper", "not a JSON object"},
		{`{"cwd": "` + repo + `", "prompt": `, "not valid JSON"},
		{`["cwd"]`, "not a JSON object"},
	} {
		for _, edge := range []string{"start", "end"} {
			cmd := exec.Command(binary, "turn", edge, "--hook", "--dir", repo, "--state-dir", d.StateDir)
			cmd.Stdin = strings.NewReader(tc.stdin)
			out, err := cmd.CombinedOutput()
			ee, _ := err.(*exec.ExitError)
			if ee == nil || ee.ExitCode() != 1 || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "no turn was") {
				t.Errorf("turn %s --hook with %q: %v, %q; want exit 1 and %q", edge, tc.stdin, err, out, tc.want)
			}
		}
	}
	for chat, turns := range chatsOf(t, c, sum.Resource) {
		if len(turns) != 0 {
			t.Errorf("bad hook input left turns %v in %s", turns, chat)
		}
	}
}

func TestTurnStatusAndEndNameOtherChats(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	d := startDaemon(t, repo)
	sum := onlySession(t, d.client(t, "panel"))
	id := strings.TrimPrefix(sum.Resource, protocol.SessionScheme+"/")
	turn := d.turnCLI(t, "start", "--dir", repo, "--agent", "cc-1", "--message", "Fix the parser")

	code, stdout, stderr := cli(t, "", nil, "turn", "status", "--state-dir", d.StateDir)
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + `\s+cc-1\s+` + regexp.QuoteMeta(turn) + `\s+\d{4}-\d\d-\d\dT\S+\s+Fix the parser$`)
	if code != 0 || !row.MatchString(stdout) {
		t.Errorf("turn status: exit %d\n%s%s\nwant session, agent cc-1, %s, since, message", code, stdout, stderr, turn)
	}

	// The default chat has no running turn; the error says where one runs.
	code, _, stderr = cli(t, "", nil, "turn", "end", "--dir", repo, "--state-dir", d.StateDir)
	if code != 1 || !strings.Contains(stderr, "no turn is running") || !strings.Contains(stderr, turn) || !strings.Contains(stderr, "--agent cc-1") {
		t.Errorf("turn end in the default chat: exit %d, %q; want 1 naming %s of --agent cc-1", code, stderr, turn)
	}
	if got := d.turnCLI(t, "end", "--dir", repo, "--agent", "cc-1"); got != turn {
		t.Errorf("turn end --agent cc-1 ended %q, want %q", got, turn)
	}
	code, stdout, stderr = cli(t, "", nil, "turn", "status", "--dir", repo, "--state-dir", d.StateDir)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "no turn is running") {
		t.Errorf("turn status with none running: exit %d, %q, %q", code, stdout, stderr)
	}
}

// TestServiceInstall writes the login service in a temp HOME. systemctl
// and launchctl are stand-ins on PATH that record their arguments, so the
// test never touches the machine's own service manager; without them on
// PATH the command says it did not run them.
func TestServiceInstall(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	bin, err := filepath.EvalSymlinks(binary)
	if err != nil {
		t.Fatal(err)
	}
	tools := t.TempDir()
	calls := filepath.Join(home, "calls")
	for _, name := range []string{"systemctl", "launchctl"} {
		script := "#!/bin/sh\necho " + name + " \"$@\" >> " + calls + "\n"
		if err := os.WriteFile(filepath.Join(tools, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := func(path string) []string {
		var env []string
		for _, kv := range cleanEnv() {
			if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
				env = append(env, kv)
			}
		}
		return append(env, "HOME="+home, "PATH="+path)
	}

	code, stdout, stderr := cli(t, "", env(tools), "service", "install", "--listen", "127.0.0.1:7999", repo)
	unit := filepath.Join(home, ".config", "systemd", "user", "changesetd.service")
	body, err := os.ReadFile(unit)
	if code != 0 || err != nil {
		t.Fatalf("service install: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	if want := "ExecStart=" + bin + " serve --listen 127.0.0.1:7999 " + repo + "\n"; !strings.Contains(string(body), want) {
		t.Errorf("the unit:\n%s\nwant %q", body, want)
	}
	got, _ := os.ReadFile(calls)
	if string(got) != "systemctl --user daemon-reload\nsystemctl --user enable --now changesetd.service\n" {
		t.Errorf("systemctl was called as:\n%s", got)
	}
	if !strings.Contains(stdout, "running: systemctl --user enable --now changesetd.service") {
		t.Errorf("install does not say what it runs:\n%s", stdout)
	}
	if code, stdout, _ := cli(t, "", env(tools), "service", "status"); code != 0 || !strings.Contains(stdout, "installed: "+unit) {
		t.Errorf("service status: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ := cli(t, "", env(tools), "service", "uninstall"); code != 0 || !strings.Contains(stdout, "removed "+unit) {
		t.Errorf("service uninstall: exit %d\n%s", code, stdout)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Errorf("the unit is still there after uninstall: %v", err)
	}
	if code, _, _ := cli(t, "", env(tools), "service", "status"); code != 1 {
		t.Errorf("service status after uninstall: exit %d, want 1", code)
	}

	// launchd, without launchctl on PATH: the agent is written and the
	// command says launchctl was not run.
	empty := t.TempDir()
	code, stdout, stderr = cli(t, "", env(empty), "service", "install", "--manager", "launchd")
	plist := filepath.Join(home, "Library", "LaunchAgents", "io.github.changesetd.plist")
	body, err = os.ReadFile(plist)
	if code != 0 || err != nil || !strings.Contains(string(body), "<string>"+bin+"</string>\n\t\t<string>serve</string>") {
		t.Fatalf("launchd install: exit %d, %v\n%s%s\n%s", code, err, stdout, stderr, body)
	}
	if !strings.Contains(stdout, "launchctl not found: not run: launchctl bootstrap gui/") {
		t.Errorf("install without launchctl does not say so:\n%s", stdout)
	}
}
