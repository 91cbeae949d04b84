package test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/changesetd/changesetd/"

// layers lists, for each package of the daemon, the packages of this
// module it may depend on (directly or not), as the README's layout table
// describes them: the wire types and pure reducers at the bottom, the
// engine packages beside them, session above those, the source of a
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
	"scm":           {nil, true},
	"scm/fswatch":   {nil, true},
	"scm/snapstore": {[]string{"scm"}, true},
	"session":       {[]string{"protocol", "reducer", "uritemplate", "changeset", "confine", "store"}, true},
	"source":        {[]string{"protocol", "reducer", "uritemplate", "changeset", "confine", "metrics", "store", "session", "scm", "scm/fswatch", "scm/snapstore"}, true},
	"web":           {nil, false},
	"server":        {[]string{"protocol", "reducer", "uritemplate", "changeset", "confine", "metrics", "store", "session", "web"}, true},
}

// TestLayering enforces the layering with go list -deps, so an import
// that crosses a layer fails here rather than in review.
func TestLayering(t *testing.T) {
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
		if !strings.Contains(string(src), `"`+dep+`"`) {
			t.Errorf("deps_test.go does not import %s: a change there would not re-run these tests", own)
		}
	}
}
