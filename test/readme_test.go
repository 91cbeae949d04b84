package test

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

// mdBlock returns the fenced block of the markdown file (relative to the
// repository's top) whose info string is "<lang> <name>".
func mdBlock(t *testing.T, file, lang, name string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)```" + regexp.QuoteMeta(lang+" "+name) + "\n(.*?)```")
	m := re.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("%s has no ```%s %s block", file, lang, name)
	}
	return string(m[1])
}

// commandLines are a shell block's commands, one a line, without comments.
func commandLines(block string) []string {
	var out []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func TestCIRunsTheREADMEsTestCommand(t *testing.T) {
	t.Parallel()
	lines := commandLines(mdBlock(t, "README.md", "sh", "test"))
	if len(lines) != 1 {
		t.Fatalf("README's test block has %d commands, want one: %q", len(lines), lines)
	}
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "\n"+lines[0]+"\n") {
		t.Errorf(".ci/run does not run the README's test command %q as one line", lines[0])
	}
}

// TestREADMEQuickStart runs the README's install and quick start as a new
// user would, from another project's directory in a temporary HOME.
//
// The module is not fetched from the network: the test publishes this
// checkout (its files as they are, committed or not) as a module version in
// a file:// GOPROXY, next to the local module cache's downloads for the
// dependencies, so that the README's "go install …@latest" runs literally
// and builds what is here. GOCACHE stays the machine's, for speed. The
// daemon listens on a free port through CHANGESETD_LISTEN (the README's
// "serve ." is run as written), since 7878 may be taken on a shared
// machine.
func TestREADMEQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the daemon with go install")
	}
	home := t.TempDir()
	const version = "v0.0.1-readmetest"
	proxy := publishModule(t, version)
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	env := []string{"HOME=" + home, "USER=readme", "GOCACHE=" + goEnv("GOCACHE"),
		"GOPROXY=file://" + proxy + ",file://" + filepath.Join(goEnv("GOMODCACHE"), "cache", "download"),
		"GOSUMDB=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local", "CHANGESETD_LISTEN=127.0.0.1:0",
		"PATH=" + filepath.Join(home, "go", "bin") + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, kv := range cleanEnv() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GO") && !strings.HasPrefix(name, "XDG_") && name != "HOME" && name != "PATH" && name != "USER" {
			env = append(env, kv)
		}
	}
	project := filepath.Join(home, "src", "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, project, "init", "-q", "-b", "main")
	writeFile(t, project, "notes.txt", "notes\n")
	git(t, project, "add", "-A")
	git(t, project, "commit", "-q", "-m", "initial")
	sh := func(line, stdin string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env, cmd.Stdin = project, env, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}

	// Install.
	install := commandLines(mdBlock(t, "README.md", "sh", "install"))
	if len(install) != 2 || install[0] != "go install github.com/changesetd/changesetd/cmd/changesetd@latest" {
		t.Fatalf("README's install block: %q", install)
	}
	mod, _ := os.ReadFile(filepath.Join("..", "go.mod"))
	if !strings.HasPrefix(string(mod), "module github.com/changesetd/changesetd\n") {
		t.Fatalf("the install line's module path is not go.mod's")
	}
	sh(install[0], "")
	if out := sh(install[1], ""); !strings.HasPrefix(out, "changesetd "+version+" ") {
		t.Errorf("changesetd version after go install …@latest printed %q, want the module version %s", out, version)
	}

	// 1. Serve the project, in the background as a terminal would.
	start := commandLines(mdBlock(t, "README.md", "sh", "quick-start"))
	if len(start) != 1 || start[0] != "changesetd serve ." {
		t.Fatalf("README's quick start: %q", start)
	}
	serve := exec.Command("sh", "-c", "exec "+start[0])
	serve.Dir, serve.Env = project, env
	stdout, _ := serve.StdoutPipe()
	var logs lockedWriter
	logs.b = &strings.Builder{}
	serve.Stderr = &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { serve.Wait(); close(exited) }()
	t.Cleanup(func() {
		serve.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			serve.Process.Kill()
			<-exited
		}
	})
	printed := map[string]string{}
	lines := bufio.NewScanner(stdout)
	for len(printed) < 2 && lines.Scan() {
		if k, v, ok := strings.Cut(lines.Text(), ": "); ok && (k == "connect" || k == "review") {
			printed[k] = v
		}
	}
	go io.Copy(io.Discard, stdout)
	if len(printed) < 2 {
		t.Fatalf("serve printed no connect and review URLs; log:\n%s", logs.b)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "state", "changesetd", "token")); err != nil {
		t.Errorf("the token is not in the state dir the README names: %v", err)
	}

	// 2. The review page answers at the printed URL.
	page, _, _ := strings.Cut(printed["review"], "#")
	resp, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<html") {
		t.Errorf("GET %s: %s", page, resp.Status)
	}
	c, _, err := fake.Dial(ctx(t), printed["connect"], nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(ctx(t), "reviewer", nil); err != nil {
		t.Fatal(err)
	}
	sum := onlySession(t, c)

	// 3. The Claude Code hooks, as in docs/agents.md (whose test runs them
	// in more ways).
	settings := mdBlock(t, "README.md", "json", "settings")
	if settings != docBlock(t, "json", "settings") {
		t.Errorf("README's hook settings differ from docs/agents.md's")
	}
	var hooks struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string } `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(settings), &hooks); err != nil {
		t.Fatalf("README's settings block is not JSON: %v", err)
	}
	hook := func(event string, in map[string]any) string {
		t.Helper()
		b, _ := json.Marshal(in)
		return sh(hooks.Hooks[event][0].Hooks[0].Command, string(b))
	}

	// 4. A prompt starts a turn, its stop ends it, and the turn has
	// exactly its change.
	prompt := map[string]any{"session_id": "cc-1", "cwd": project, "hook_event_name": "UserPromptSubmit", "prompt": "Add a line to notes"}
	if out := hook("UserPromptSubmit", prompt); out != "" {
		t.Errorf("the first prompt's hook printed %q", out)
	}
	writeFile(t, project, "notes.txt", "notes\nmore\n")
	hook("Stop", map[string]any{"session_id": "cc-1", "cwd": project, "hook_event_name": "Stop"})
	chat := protocol.ChatURI(sum.Resource, "cc-1")
	turns := chatsOf(t, c, sum.Resource)[chat]
	if len(turns) != 1 || !strings.HasSuffix(turns[0], ":Add a line to notes") {
		t.Fatalf("the agent's chat has turns %v, want the prompt's", turns)
	}
	turnID, _, _ := strings.Cut(turns[0], ":")
	cat := catalogue(t, c, sum.Resource)
	if got := changesetSummary(t, c, expand(t, cat["turn"].URITemplate, map[string]string{"turnId": turnID}), project); len(got) != 1 || got[0] != "modify notes.txt +1 -0" {
		t.Errorf("the turn's changes: %v", got)
	}
	// A comment on its line reaches the agent with the next prompt.
	uri := requireAnnotationsChannel(t, c, sum)
	m := mirrorAnnotations(t, c, uri)
	annotate(t, m, 1, newAnnotation("A1", turnID, "file://"+project+"/notes.txt", lineRange(1, 1, 4), "r1", "Say what kind of notes."))
	prompt["prompt"] = "Next"
	if out := hook("UserPromptSubmit", prompt); !strings.Contains(out, "Say what kind of notes.") || !strings.Contains(out, "notes.txt") {
		t.Errorf("the next prompt's hook handed the agent:\n%s\nwant the comment and its file", out)
	}

	// Without an agent: the shell commands, as written.
	for _, line := range commandLines(mdBlock(t, "README.md", "sh", "no-agent")) {
		out := sh(line, "")
		switch {
		case strings.HasPrefix(line, "changesetd diff"):
			if !strings.Contains(out, "+one more line") {
				t.Errorf("%s printed:\n%s", line, out)
			}
		case strings.HasPrefix(line, "changesetd annotations"):
			if !strings.Contains(out, "Say what kind of notes.") {
				t.Errorf("%s printed:\n%s", line, out)
			}
		}
	}
}

// checkoutFiles lists the files of this checkout as they are, committed
// or not, less what git ignores.
func checkoutFiles(t *testing.T) []string {
	t.Helper()
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = ".."
	out, err := ls.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if fi, err := os.Lstat(filepath.Join("..", name)); err == nil && fi.Mode().IsRegular() {
			files = append(files, name) // not deleted in the work tree
		}
	}
	return files
}

// TestVersionNamesTheCommit builds the daemon as a clone's "go install
// ./cmd/changesetd" does and checks that version names the commit Go
// stamped. The checkout is copied into a fresh repository first, since a
// linked worktree (whose .git is a file) gets no stamp.
func TestVersionNamesTheCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the daemon")
	}
	clone := t.TempDir()
	for _, name := range checkoutFiles(t) {
		b, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, clone, name, string(b))
	}
	git(t, clone, "init", "-q", "-b", "main")
	git(t, clone, "add", "-A")
	git(t, clone, "commit", "-q", "-m", "snapshot")
	head := strings.TrimSpace(git(t, clone, "rev-parse", "HEAD"))
	bin := filepath.Join(t.TempDir(), "changesetd")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/changesetd")
	build.Dir = clone
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	// Go names such a build with a pseudo-version of the commit as well.
	if err != nil || !regexp.MustCompile(`^changesetd \S+ commit `+head[:12]+` \(`).Match(out) {
		t.Errorf("version of a build at %s: %q, %v", head[:12], out, err)
	}
	// A change not committed is said so.
	writeFile(t, clone, "README.md", "changed\n")
	build = exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/changesetd")
	build.Dir = clone
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, _ := exec.Command(bin, "version").Output(); !strings.Contains(string(out), head[:12]+"+dirty") {
		t.Errorf("version of a build with a change: %q", out)
	}
}

// publishModule writes a file:// module proxy holding this checkout as
// version of the module, and returns its directory.
func publishModule(t *testing.T, version string) string {
	t.Helper()
	const path = "github.com/changesetd/changesetd"
	proxy := t.TempDir()
	dir := filepath.Join(proxy, path, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, name := range checkoutFiles(t) {
		b, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(path + "@" + version + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"list":            version + "\n",
		version + ".mod":  string(mod),
		version + ".info": `{"Version":"` + version + `","Time":"2026-12-01T00:00:00Z"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return proxy
}
