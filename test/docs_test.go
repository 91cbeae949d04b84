package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// readDoc returns a file of the repository (a path from its top).
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// helpFlag is a flag as a command's --help lists it.
type helpFlag struct {
	env, def string
}

// helpFlags runs "changesetd args... --help" and returns its flags.
func helpFlags(t *testing.T, args ...string) map[string]helpFlag {
	t.Helper()
	code, stdout, stderr := cli(t, "", nil, append(args, "--help")...)
	if code != 0 {
		t.Fatalf("%v --help: exit %d\n%s", args, code, stderr)
	}
	flags := map[string]helpFlag{}
	lines := strings.Split(stdout+stderr, "\n")
	name := regexp.MustCompile(`^  --([a-z-]+)`)
	for i, l := range lines {
		m := name.FindStringSubmatch(l)
		if m == nil || i+1 >= len(lines) {
			continue
		}
		var f helpFlag
		if e := regexp.MustCompile(`\[\$(CHANGESETD_[A-Z_]+)\]`).FindStringSubmatch(lines[i+1]); e != nil {
			f.env = e[1]
		}
		if d := regexp.MustCompile(`\(default "?([^")]*)"?\)`).FindStringSubmatch(lines[i+1]); d != nil {
			f.def = d[1]
		}
		flags[m[1]] = f
	}
	return flags
}

// TestCLIDocFlagTables compares each command's flag table in docs/cli.md
// with its --help: the same flags, the same environment variables, and
// the same defaults where the doc gives a literal one.
func TestCLIDocFlagTables(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/cli.md")
	sections := regexp.MustCompile("(?m)^## `changesetd ([^`]+)`\n").FindAllStringSubmatchIndex(doc, -1)
	row := regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\| ([^|]+) \\| ([^|]+) \\|")
	tables := 0
	for i, s := range sections {
		end := len(doc)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		body := doc[s[1]:end]
		// "turn start|end" is "turn start"; "service install|…" "service install".
		var args []string
		for _, w := range strings.Fields(doc[s[2]:s[3]]) {
			w, _, _ = strings.Cut(w, "|")
			args = append(args, w)
		}
		rows := row.FindAllStringSubmatch(body, -1)
		if len(rows) == 0 {
			if args[0] != "version" {
				t.Errorf("docs/cli.md: the section on %q has no flag table", args)
			}
			continue
		}
		tables++
		help := helpFlags(t, args...)
		seen := map[string]bool{}
		for _, r := range rows {
			name, env, def := r[1], strings.Trim(strings.TrimSpace(r[2]), "`"), strings.TrimSpace(r[3])
			seen[name] = true
			h, ok := help[name]
			if !ok {
				t.Errorf("docs/cli.md lists --%s for %v, which its --help does not have", name, args)
				continue
			}
			if env == "—" {
				env = ""
			}
			if env != h.env {
				t.Errorf("%v --%s: the doc says variable %q, --help %q", args, name, env, h.env)
			}
			if lit, ok := strings.CutPrefix(def, "`"); ok && strings.HasSuffix(lit, "`") && !strings.Contains(def, ",") {
				lit = strings.TrimSuffix(lit, "`")
				want := h.def
				if want == "" {
					want = "false" // flags whose zero value --help leaves out
				}
				if lit != want && !(want == "false" && lit == "false") {
					if dl, err1 := time.ParseDuration(lit); err1 != nil || dl.String() != want {
						t.Errorf("%v --%s: the doc says default %s, --help %q", args, name, lit, h.def)
					}
				}
			}
		}
		for name := range help {
			if !seen[name] {
				t.Errorf("%v --help has --%s, which docs/cli.md does not list", args, name)
			}
		}
	}
	if tables < 9 {
		t.Errorf("docs/cli.md has %d flag tables, want one for each command", tables)
	}
	// Every command of the usage reaches a section.
	code, _, usage := cli(t, "", nil)
	if code != 2 {
		t.Fatalf("changesetd without a command: exit %d", code)
	}
	for _, m := range regexp.MustCompile(`(?m)^  changesetd ([a-z]+)`).FindAllStringSubmatch(usage, -1) {
		if !strings.Contains(doc, "## `changesetd "+m[1]) {
			t.Errorf("docs/cli.md has no section on changesetd %s", m[1])
		}
	}
}

// docEnv is a temporary HOME with the daemon binary on PATH, for running
// the docs' commands as a user would.
func docEnv(t *testing.T) (home string, env []string) {
	home = t.TempDir()
	for _, kv := range cleanEnv() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "HOME" && name != "PATH" && !strings.HasPrefix(name, "XDG_") {
			env = append(env, kv)
		}
	}
	return home, append(env, "HOME="+home, "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
}

// runBlock runs a doc's shell block as one script (set -e) in dir.
func runBlock(t *testing.T, block, dir string, env []string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", block)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s\n--- output:\n%s", err, block, out)
	}
	return string(out)
}

func TestCLIDocTour(t *testing.T) {
	t.Parallel()
	home, env := docEnv(t)
	out := runBlock(t, mdBlock(t, "docs/cli.md", "sh", "cli-tour"), home, env)
	for _, want := range []string{"ID  ", filepath.Join(home, "demo"), "AGENT", "demo", "Add a line"} {
		if !strings.Contains(out, want) {
			t.Errorf("the tour's output lacks %q:\n%s", want, out)
		}
	}
}

// TestProtocolDocErrors compares the error table of docs/protocol.md with
// the protocol package's codes.
func TestProtocolDocErrors(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/protocol.md")
	known := map[int]bool{}
	for _, c := range []int{protocol.CodeParseError, protocol.CodeInvalidRequest, protocol.CodeMethodNotFound, protocol.CodeInvalidParams, protocol.CodeInternalError,
		protocol.CodeSessionNotFound, protocol.CodeProviderNotFound, protocol.CodeSessionAlreadyExists, protocol.CodeUnsupportedProtocolVersion,
		protocol.CodeNotFound, protocol.CodePermissionDenied, protocol.CodeConflict, protocol.CodeOverloaded} {
		known[c] = true
	}
	rows := regexp.MustCompile("(?m)^\\| `(-32\\d{3})` \\| ([^|]+) \\|").FindAllStringSubmatch(doc, -1)
	listed := map[int]bool{}
	for _, r := range rows {
		var code int
		json.Unmarshal([]byte(r[1]), &code)
		listed[code] = true
		if !known[code] {
			t.Errorf("docs/protocol.md lists %d (%s), which the daemon does not send", code, r[2])
		}
	}
	for c := range known {
		if !listed[c] {
			t.Errorf("docs/protocol.md's error table lacks %d", c)
		}
	}
	if !strings.Contains(doc, "`-32011` is upstream AHP's `Conflict`") {
		t.Errorf("docs/protocol.md does not say that -32011 is upstream AHP's Conflict")
	}
	// The _meta keys it documents are ones the daemon writes.
	src := ""
	for _, dir := range []string{"session", "session/view", "session/ops", "session/annotation", "source", "changeset", "protocol", "server"} {
		files, _ := filepath.Glob(filepath.Join("..", dir, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				b, _ := os.ReadFile(f)
				src += string(b)
			}
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| (?:annotation|entry) \\| `changesetd/([a-zA-Z]+)`|^\\| `([a-zA-Z]+)` \\|").FindAllStringSubmatch(doc, -1) {
		key := m[1] + m[2]
		if strings.HasPrefix(key, "-") || key == "uncommitted" || key == "branch" || key == "session" || key == "turn" || key == "revert" || key == "stage" || key == "unstage" || key == "commit" || key == "undo" || key == "protocol" {
			continue
		}
		if !strings.Contains(src, `"`+key+`"`) && !strings.Contains(src, `/`+key+`"`) {
			t.Errorf("docs/protocol.md documents _meta key %q, which no source file writes", key)
		}
	}
}

func TestSafetyDocState(t *testing.T) {
	t.Parallel()
	home, env := docEnv(t)
	repo := filepath.Join(home, "project")
	os.MkdirAll(repo, 0o755)
	git(t, repo, "init", "-q", "-b", "main")
	writeFile(t, repo, "a.txt", "a\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "initial")
	d, _ := launchCmd(t, filepath.Join(home, ".local", "state", "changesetd"), func(cmd *exec.Cmd) { cmd.Env = env }, "serve", "--listen", "127.0.0.1:0", repo)
	_ = d
	runBlock(t, "changesetd turn start --message one && echo b > b.txt && changesetd turn end", repo, env)
	out := runBlock(t, mdBlock(t, "docs/safety.md", "sh", "state"), repo, env)
	for _, want := range []string{"daemon.json", "snapshots.git", "state.db", "token", "count: ", repo} {
		if !strings.Contains(out, want) {
			t.Errorf("the state block's output lacks %q:\n%s", want, out)
		}
	}
}

// TestPerformanceDocCommands checks that the commands docs/performance.md
// quotes still run what they say: their packages, tests, benchmarks and
// flags exist. (They are measurements, run by hand.)
func TestPerformanceDocCommands(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/performance.md")
	cmds := regexp.MustCompile("`((?:[A-Z_]+=\\S+ )*go (?:test|run) [^`]+)`").FindAllStringSubmatch(doc, -1)
	if len(cmds) < 10 {
		t.Fatalf("docs/performance.md quotes %d go commands", len(cmds))
	}
	funcs := func(pkg string) string {
		files, _ := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		var b strings.Builder
		for _, f := range files {
			src, _ := os.ReadFile(f)
			b.Write(src)
		}
		return b.String()
	}
	for _, m := range cmds {
		words := strings.Fields(m[1])
		for len(words) > 0 && strings.Contains(words[0], "=") {
			words = words[1:]
		}
		var pkg string
		for _, w := range words[2:] {
			if strings.HasPrefix(w, "./") {
				pkg = strings.TrimPrefix(w, "./")
			}
		}
		if pkg == "" {
			t.Errorf("%q names no package", m[1])
			continue
		}
		src := funcs(pkg)
		if src == "" {
			t.Errorf("%q: no package %s", m[1], pkg)
			continue
		}
		for i := 2; i < len(words); i++ {
			w := words[i]
			if !strings.HasPrefix(w, "-") || i+1 >= len(words) {
				continue
			}
			val := strings.Trim(words[i+1], "'\"")
			switch {
			case words[1] == "test" && (w == "-run" || w == "-bench"):
				prefix := "Test"
				if w == "-bench" {
					prefix = "Benchmark"
				}
				if val == "^$" || val == "XXX" {
					continue
				}
				for _, alt := range strings.Split(val, "|") {
					if !regexp.MustCompile(`func ` + prefix + `\w*` + regexp.QuoteMeta(strings.TrimPrefix(alt, prefix))).MatchString(src) {
						t.Errorf("%q: %s has no %s matching %q", m[1], pkg, prefix, alt)
					}
				}
			case words[1] == "run":
				name := strings.TrimLeft(w, "-")
				if !strings.Contains(src, `"`+name+`"`) {
					t.Errorf("%q: %s has no flag -%s", m[1], pkg, name)
				}
			}
		}
	}
}

// slug is GitHub's anchor for a heading.
func slug(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = regexp.MustCompile("[^a-z0-9 _-]").ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// TestDocLinks checks every relative link of the README and docs/: the
// file exists, and an #anchor names one of its headings.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	docs, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	docs = append(docs, filepath.Join("..", "README.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading := regexp.MustCompile("(?m)^#+ (.+)$")
	fence := regexp.MustCompile("(?s)```.*?```")
	for _, doc := range docs {
		b, _ := os.ReadFile(doc)
		text := fence.ReplaceAllString(string(b), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				if _, serr := os.Stat(path); serr == nil {
					continue // a directory
				}
				t.Errorf("%s links to %s, which does not exist", doc, target)
				continue
			}
			if anchor == "" {
				continue
			}
			found := false
			for _, h := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(body), ""), -1) {
				found = found || slug(h[1]) == anchor
			}
			if !found {
				t.Errorf("%s links to %s: no heading has the anchor #%s", doc, target, anchor)
			}
		}
	}
}
