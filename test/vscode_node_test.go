package test

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// TestVSCodeAgentsWindow runs test/node/vscode.mjs, which connects to the
// real daemon as VS Code's Agents window does — the printed "vscode:"
// address with ?tkn=, VS Code's Origin, its offered versions, its client
// chatter — and opens a session's Changes view: catalogue, both sides of
// a file, Mark as Viewed, a Revert with its confirmation, a review
// comment, and a reconnect across a restart of the daemon, which this
// test performs on the same address when the script asks. Skipped, as
// TestNodeClient is, when Node or test/node's node_modules is missing
// outside CI.
func TestVSCodeAgentsWindow(t *testing.T) {
	t.Parallel()
	node := nodeOrSkip(t)

	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	d := startDaemon(t, repo)
	d.turnCLI(t, "start", "--dir", repo, "--message", "edit a")
	writeFile(t, repo, "a.txt", "a, edited\n")
	d.turnCLI(t, "end", "--dir", repo)
	if !strings.HasPrefix(d.VSCode, "ws://"+d.Addr+"/ahp?tkn=") || !strings.Contains(d.VSCodeSetting, `"chat.remoteAgentHosts": [{"address":"`+d.Addr+`/ahp","name":"changesetd","connectionToken":"`+d.Token+`"}]`) {
		t.Fatalf("serve printed vscode: %q and vscode setting: %q", d.VSCode, d.VSCodeSetting)
	}

	p := startNode(t, node, "vscode.mjs", d.VSCode)
	runs := []*daemon{d}
	var out strings.Builder
	sc := bufio.NewScanner(p.stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if line != "RESTART" {
			continue
		}
		// The same address, token and state: a restart as VS Code sees it.
		if err := d.stop(); err != nil {
			t.Errorf("stopping the daemon: %v", err)
		}
		d = startDaemonIn(t, d.StateDir, "--listen", d.Addr, repo)
		runs = append(runs, d)
		io.WriteString(p.stdin, "RESTARTED\n")
	}
	err := p.end()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	summary := lines[len(lines)-1]
	if err != nil || !strings.Contains(summary, " 0 failed") {
		t.Fatalf("node vscode.mjs: %v\n%s%s", err, out.String(), p.stderr.String())
	}
	t.Log(summary)
	// The token came as ?tkn= on every connection; no log line has it
	// (the daemons log at debug level here).
	for i, r := range runs {
		if r.stderr.contains(r.Token) {
			t.Errorf("run %d of the daemon logged the token", i+1)
		}
	}
}
