package test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/changesetd/changesetd/"

// layers lists, for each package of the daemon, the packages of this
// module it may depend on (directly or not), as the README's layout table
// describes them: the wire types and pure reducers at the bottom, the
// engine packages and the sequencer (hub) beside them, session above
// those, the source of a
// session's changes (the engine adapted to session) and the transport
// above session and apart from each other, and the command wiring
// everything. thirdParty says whether it may use modules other than the
// standard library.
var layers = map[string]struct {
	allowed    []string
	thirdParty bool
}{
	"protocol":      {nil, false},
	"reducer":       {[]string{"protocol"}, false},
	"uritemplate":   {[]string{"protocol"}, true},
	"changeset":     {[]string{"protocol"}, true},
	"confine":       {nil, false},
	"agent":         {[]string{"protocol", "confine"}, false},
	"metrics":       {nil, true},
	"store":         {nil, true},
	"scm":           {[]string{"scm/internal/gitobj", "scm/internal/getdents"}, true},
	"scm/fswatch":   {[]string{"scm/internal/getdents"}, true},
	"scm/snapstore": {[]string{"scm", "scm/internal/gitobj", "scm/internal/getdents"}, true},
	// git's object files read without go-git's pack maps: below scm.
	"scm/internal/gitobj": {nil, true},
	// Directories listed without an allocation per entry: below scm and
	// the watcher.
	"scm/internal/getdents": {nil, true},
	"hub":                   {[]string{"protocol"}, false},
	"session/ops":           {[]string{"protocol"}, false},
	"session/view":          {[]string{"protocol", "reducer"}, false},
	"session":               {[]string{"protocol", "reducer", "uritemplate", "changeset", "confine", "store", "hub", "session/annotation", "session/attrib", "session/ops", "session/view"}, true},
	"source":                {[]string{"protocol", "reducer", "uritemplate", "changeset", "confine", "metrics", "store", "hub", "session", "session/annotation", "session/attrib", "session/ops", "session/view", "scm", "scm/fswatch", "scm/snapstore", "scm/internal/gitobj", "scm/internal/getdents"}, true},
	// The page: esbuild bundles its modules (bundle.go).
	"web":       {nil, true},
	"server":    {[]string{"protocol", "reducer", "uritemplate", "changeset", "confine", "metrics", "store", "hub", "session", "session/annotation", "session/attrib", "session/ops", "session/view", "web"}, true},
	"ahpclient": {[]string{"protocol"}, true},

	// Who wrote each hunk: pure, below session.
	"session/attrib": {[]string{"protocol", "changeset"}, true},
	// Annotations apart from the actor (checks, stamps, placement): pure,
	// below session; never the actor, the store, the hub or the server.
	"session/annotation": {[]string{"protocol", "changeset"}, true},
}

// TestLayering enforces the layering with go list -deps, so an import
// that crosses a layer fails here rather than in review.
func TestLayering(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	for pkg, rule := range layers {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for dep := range strings.FieldsSeq(string(out)) {
			own, internal := strings.CutPrefix(dep, module)
			switch {
			case dep == module+pkg:
			case internal && !slices.Contains(rule.allowed, own):
				t.Errorf("%s depends on %s; it may depend on %v only", pkg, own, rule.allowed)
			case !internal && !rule.thirdParty:
				t.Errorf("%s depends on %s; it may use the standard library only", pkg, dep)
			}
		}
	}
}

// TestEveryDaemonPackageIsCovered: every package the daemon is built from
// has a layering rule, and deps_test.go imports it, so go test's cache
// re-runs the end-to-end tests when any of them changes.
func TestEveryDaemonPackageIsCovered(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../cmd/changesetd").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	src, err := os.ReadFile("deps_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		own, internal := strings.CutPrefix(dep, module)
		if !internal || own == "cmd/changesetd" {
			continue
		}
		if _, ok := layers[own]; !ok {
			t.Errorf("the daemon is built from %s, which has no layering rule", own)
		}
		// An internal package cannot be imported from here; importing
		// the package it belongs to puts it in the cache key all the same.
		if !strings.Contains(string(src), `"`+dep+`"`) && !strings.Contains(own, "/internal/") {
			t.Errorf("deps_test.go does not import %s: a change there would not re-run these tests", own)
		}
	}
}

// goList runs go list -f format over pkgs (relative to the module root)
// and returns its lines.
func goList(t *testing.T, format string, pkgs ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", append([]string{"list", "-f", format}, pkgs...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", pkgs, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestSessionDoesNoFileIO: session imports neither os nor syscall. Session
// keeps the state of a session; reading and writing files belongs to
// source, which adapts the engine to it, and checking a client's
// directories to confine.
func TestSessionDoesNoFileIO(t *testing.T) {
	t.Parallel()
	files := goList(t, `{{join .GoFiles "\n"}}`, "./session")
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join("..", "session", name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "os" || path == "syscall" {
				t.Errorf("session/%s imports %s: file I/O belongs to source", name, path)
			}
		}
	}
}

// cmdImports is what cmd/changesetd may import of this module: the
// packages it wires into the daemon (store, snapstore, session, source,
// server, metrics), the client the client commands speak through, what
// those commands build requests and follow channels with as any client
// would (the wire types, URI helpers, the pure reducers), and the hooks'
// logic (agent). The engine itself (changeset, scm, fswatch) is reached
// only through source and session.
var cmdImports = []string{
	"store", "scm/snapstore", "metrics", "session", "source", "server",
	"ahpclient", "protocol", "uritemplate", "confine", "reducer", "agent",
}

// TestCommandOnlyWires: cmd/changesetd imports no engine internals.
func TestCommandOnlyWires(t *testing.T) {
	t.Parallel()
	imports := goList(t, `{{join .Imports "\n"}}`, "./cmd/changesetd")
	for _, imp := range imports {
		if own, internal := strings.CutPrefix(imp, module); internal && !slices.Contains(cmdImports, own) {
			t.Errorf("cmd/changesetd imports %s; it may import %v only", own, cmdImports)
		}
	}
}

// websocketUsers are the packages that may import the WebSocket library:
// the transport, and the client through which everything else speaks
// AHP. The end-to-end tests also import it in their test files, to write
// frames a client never would (binary, malformed, out of order) and to
// name close codes.
// The benchmark's burst subscribers are a hundred clients on the same two
// cores as the daemon: they read raw frames and scan only the fields they
// check (bench/burstsub.go), so that what is measured is the daemon's
// delivery rather than the clients' decoding.
var websocketUsers = map[string]bool{"server": true, "ahpclient": true, "bench": true}

const websocketLib = "github.com/gorilla/websocket"

// TestOnlyTheClientDialsAHP: no package but server, ahpclient and the
// benchmark imports the WebSocket library outside its tests.
func TestOnlyTheClientDialsAHP(t *testing.T) {
	t.Parallel()
	for _, line := range goList(t, `{{.ImportPath}} {{join .Imports " "}} | {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...") {
		pkg, rest, _ := strings.Cut(line, " ")
		code, tests, _ := strings.Cut(rest, "|")
		own := strings.TrimPrefix(pkg, module)
		if websocketUsers[own] {
			continue
		}
		if slices.Contains(strings.Fields(code), websocketLib) {
			t.Errorf("%s imports %s: dial AHP through ahpclient", own, websocketLib)
		}
		if own != "test" && slices.Contains(strings.Fields(tests), websocketLib) {
			t.Errorf("the tests of %s import %s: dial AHP through ahpclient", own, websocketLib)
		}
	}
}

// pure are the packages that are values in and values out: no
// goroutines, no locks, no files. The session's actor runs them.
var pure = []string{"session/annotation", "session/view", "session/ops"}

// TestPurePackagesStayPure: the pure packages start no goroutine and
// import neither os, syscall nor sync (the layering keeps the store, the
// hub and the actor out of them).
func TestPurePackagesStayPure(t *testing.T) {
	t.Parallel()
	for _, pkg := range pure {
		files := goList(t, `{{join .GoFiles "\n"}}`, "./"+pkg)
		fset := token.NewFileSet()
		for _, name := range files {
			f, err := parser.ParseFile(fset, filepath.Join("..", pkg, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); path == "os" || path == "syscall" || path == "sync" {
					t.Errorf("%s/%s imports %s: the package is pure", pkg, name, path)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s: a go statement in the pure package %s", fset.Position(g.Pos()), pkg)
				}
				return true
			})
		}
	}
}
