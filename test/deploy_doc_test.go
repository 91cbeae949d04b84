package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// jsonc turns JSON with comments (// and /* */) and trailing commas, as
// dev containers allow, into JSON.
func jsonc(src string) []byte {
	var out []byte
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inString:
			out = append(out, c)
			if c == '\\' && i+1 < len(src) {
				i++
				out = append(out, src[i])
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			out = append(out, c)
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 3
		default:
			out = append(out, c)
		}
	}
	return regexp.MustCompile(`,(\s*[}\]])`).ReplaceAll(out, []byte("$1"))
}

// dockerfile is what the tests read from the Dockerfile.
type dockerfile struct {
	stages  []string          // stage names (FROM … AS name)
	env     map[string]string // the final stage's ENV
	args    []string          // ARG names
	expose  string
	user    string // the final stage's USER
	cmdDir  string // the directory CMD serves
	output  string // the go build's -o
	binPath string // where the final stage puts the binary
	users   map[string]string
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	src := strings.ReplaceAll(readDoc(t, "Dockerfile"), "\\\n", " ")
	d := dockerfile{env: map[string]string{}, users: map[string]string{}}
	stage := ""
	for _, l := range strings.Split(src, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "FROM":
			stage = f[1]
			if len(f) == 4 && strings.EqualFold(f[2], "AS") {
				stage = f[3]
				d.stages = append(d.stages, f[3])
			}
		case "ARG":
			name, _, _ := strings.Cut(f[1], "=")
			d.args = append(d.args, name)
		case "ENV":
			for _, kv := range f[1:] {
				if k, v, ok := strings.Cut(kv, "="); ok {
					d.env[k] = v
				}
			}
		case "EXPOSE":
			d.expose = f[1]
		case "USER":
			d.user = f[1]
			d.users[stage] = f[1]
		case "CMD":
			var cmd []string
			json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(l), "CMD ")), &cmd)
			d.cmdDir = cmd[len(cmd)-1]
		case "COPY":
			if strings.HasPrefix(f[1], "--from=") && strings.HasSuffix(f[len(f)-1], "/changesetd") {
				d.binPath = f[len(f)-1]
			}
		case "RUN":
			if i := slices.Index(f, "-o"); i > 0 && strings.Contains(l, "go build") {
				d.output = f[i+1]
			}
		}
	}
	return d
}

// TestDeploymentFiles checks the files docs/deployment.md describes
// against the Dockerfile, since no container engine runs here.
func TestDeploymentFiles(t *testing.T) {
	t.Parallel()
	df := readDockerfile(t)
	if df.output == "" || df.binPath != "/usr/local/bin/changesetd" || df.cmdDir != "/workspace" || df.env["CHANGESETD_STATE_DIR"] != "/state" || df.expose != "7878" || df.user != "65532:65532" {
		t.Fatalf("the Dockerfile is not as the tests read it: %+v", df)
	}
	if !slices.Contains(df.args, "VERSION") || !slices.Contains(df.args, "COMMIT") {
		t.Errorf("the Dockerfile takes no VERSION and COMMIT build arguments: %v", df.args)
	}
	serveVars := map[string]bool{"CHANGESETD_WATCH": true, "CHANGESETD_POLL_INTERVAL": true}
	for _, f := range helpFlags(t, "serve") {
		serveVars[f.env] = true
	}

	// The dev container: the build stage of the Dockerfile, its binary,
	// paths, port and variables.
	var dc struct {
		Build struct {
			Dockerfile, Context, Target string
			Args                        map[string]string
		}
		WorkspaceMount   string            `json:"workspaceMount"`
		WorkspaceFolder  string            `json:"workspaceFolder"`
		Mounts           []string          `json:"mounts"`
		ContainerEnv     map[string]string `json:"containerEnv"`
		ForwardPorts     []any             `json:"forwardPorts"`
		PostStartCommand string            `json:"postStartCommand"`
		ContainerUser    string            `json:"containerUser"`
		RemoteUser       string            `json:"remoteUser"`
	}
	raw := jsonc(readDoc(t, ".devcontainer/devcontainer.json"))
	if err := json.Unmarshal(raw, &dc); err != nil {
		t.Fatalf(".devcontainer/devcontainer.json: %v\n%s", err, raw)
	}
	if filepath.Clean(filepath.Join(".devcontainer", dc.Build.Dockerfile)) != "Dockerfile" || dc.Build.Context != ".." {
		t.Errorf("the dev container is not built from the Dockerfile at the top: %+v", dc.Build)
	}
	if !slices.Contains(df.stages, dc.Build.Target) {
		t.Errorf("the dev container's target %q is not a stage of the Dockerfile (%v)", dc.Build.Target, df.stages)
	}
	for k := range dc.Build.Args {
		if !slices.Contains(df.args, k) {
			t.Errorf("the dev container passes build argument %s, which the Dockerfile does not take", k)
		}
	}
	// The stage runs as root (it has no USER), and the dev container as
	// that stage's user.
	if df.users[dc.Build.Target] != "" || dc.ContainerUser != "" || dc.RemoteUser != "" {
		t.Errorf("users: the stage's %q, the dev container's %q/%q", df.users[dc.Build.Target], dc.ContainerUser, dc.RemoteUser)
	}
	if !strings.Contains(dc.PostStartCommand, df.output+" serve "+df.cmdDir) {
		t.Errorf("the dev container starts %q, not the stage's binary %s on %s", dc.PostStartCommand, df.output, df.cmdDir)
	}
	if dc.WorkspaceFolder != df.cmdDir || !strings.Contains(dc.WorkspaceMount, "target="+df.cmdDir+",") {
		t.Errorf("the dev container's workspace %q / %q is not %s", dc.WorkspaceFolder, dc.WorkspaceMount, df.cmdDir)
	}
	if dc.ContainerEnv["CHANGESETD_STATE_DIR"] != df.env["CHANGESETD_STATE_DIR"] || len(dc.Mounts) != 1 || !strings.Contains(dc.Mounts[0], "target="+df.env["CHANGESETD_STATE_DIR"]+",") {
		t.Errorf("the dev container's state: %q, mounts %q", dc.ContainerEnv["CHANGESETD_STATE_DIR"], dc.Mounts)
	}
	if !strings.HasSuffix(dc.ContainerEnv["CHANGESETD_LISTEN"], ":"+df.expose) || len(dc.ForwardPorts) != 1 || dc.ForwardPorts[0] != float64(7878) {
		t.Errorf("the dev container listens on %q and forwards %v; the image exposes %s", dc.ContainerEnv["CHANGESETD_LISTEN"], dc.ForwardPorts, df.expose)
	}
	for k := range dc.ContainerEnv {
		if strings.HasPrefix(k, "CHANGESETD_") && !serveVars[k] {
			t.Errorf("the dev container sets %s, which serve does not read", k)
		}
	}

	// .dockerignore keeps out what the build must not see.
	ignore := strings.Fields(readDoc(t, ".dockerignore"))
	for _, p := range []string{".git", "test/node/node_modules", "/changesetd"} {
		if !slices.Contains(ignore, p) {
			t.Errorf(".dockerignore lacks %s", p)
		}
	}

	// The agent's image copies the binary from where the image has it.
	agent := readDoc(t, "examples/agent.Dockerfile")
	if !strings.Contains(agent, "COPY --from=changesetd "+df.binPath+" ") {
		t.Errorf("examples/agent.Dockerfile does not copy %s from the changesetd image", df.binPath)
	}
	if !strings.Contains(readDoc(t, "docs/deployment.md"), "COPY --from=changesetd "+df.binPath+" ") {
		t.Errorf("docs/deployment.md does not show the COPY --from= line")
	}

	// The compose file: the image's paths, port and user; the agent built
	// from the daemon's image.
	compose := readDoc(t, "examples/compose.yaml")
	for _, want := range []string{
		"- ..:" + df.cmdDir, "- changesetd-state:" + df.env["CHANGESETD_STATE_DIR"], `"127.0.0.1:7878:` + df.expose + `"`,
		"dockerfile: examples/agent.Dockerfile", "changesetd: service:changesetd", "CHANGESETD_URL: changesetd:" + df.expose,
		"CHANGESETD_ALLOW_HOST: changesetd", "uid " + strings.Split(df.user, ":")[0], "condition: service_healthy",
	} {
		if !strings.Contains(compose, want) {
			t.Errorf("examples/compose.yaml lacks %q", want)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+#?\s*(CHANGESETD_[A-Z_]+):`).FindAllStringSubmatch(compose, -1) {
		if !serveVars[m[1]] && m[1] != "CHANGESETD_URL" {
			t.Errorf("examples/compose.yaml sets %s, which changesetd does not read", m[1])
		}
	}
	if !strings.Contains(readDoc(t, "examples/.gitignore"), "changesetd-token.txt") {
		t.Errorf("the compose file's token file is not kept out of git")
	}
}

// TestDeploymentDocService runs the "At login" commands of
// docs/deployment.md in a temporary HOME, with a systemctl on PATH that
// records its arguments instead of reaching the machine's user manager,
// and compares the unit written with the one the doc shows.
func TestDeploymentDocService(t *testing.T) {
	t.Parallel()
	home, env := docEnv(t)
	tools := t.TempDir()
	calls := filepath.Join(home, "calls")
	writeFile(t, tools, "systemctl", "#!/bin/sh\necho systemctl \"$@\" >> "+calls+"\n")
	os.Chmod(filepath.Join(tools, "systemctl"), 0o755)
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + tools + string(os.PathListSeparator) + p
		}
	}
	out := runBlock(t, mdBlock(t, "docs/deployment.md", "sh", "service"), home, env)
	unit := filepath.Join(home, ".config", "systemd", "user", "changesetd.service")
	if !strings.Contains(out, "wrote "+unit) || !strings.Contains(out, "installed: "+unit) {
		t.Errorf("service install and status printed:\n%s", out)
	}
	got, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := filepath.EvalSymlinks(binary)
	body := strings.SplitN(string(got), "\n", 2)[1] // past the comment that says what wrote it
	want := strings.Replace(mdBlock(t, "docs/deployment.md", "ini", "unit"), "/home/me/go/bin/changesetd", bin, 1)
	if body != want {
		t.Errorf("the unit written:\n%s\nthe doc's:\n%s", body, want)
	}
	if c, _ := os.ReadFile(calls); !strings.Contains(string(c), "systemctl --user enable --now changesetd.service\n") {
		t.Errorf("systemctl calls:\n%s", c)
	}
}

// TestReviewDocKeys checks the review page's keys that docs/review.md and
// the README name.
func TestReviewDocKeys(t *testing.T) {
	t.Parallel()
	app := readDoc(t, "web/static/keys.js")
	for _, doc := range []string{"docs/review.md", "README.md"} {
		text := readDoc(t, doc)
		for _, k := range []string{"j", "k", "x", "s", "c"} {
			if !strings.Contains(text, "`"+k+"`") {
				t.Errorf("%s does not name the key %s", doc, k)
			}
			if !strings.Contains(app, "e.key === '"+k+"'") {
				t.Errorf("the page has no key %s, which %s names", k, doc)
			}
		}
	}
}
