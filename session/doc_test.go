package session

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The package doc says the package never touches the file system itself:
// createSession's directories are checked by confine.DirFromURI; file
// reads go through Options.ReadFile and the workspaces. This keeps it so.
func TestOnlyManagerImportsOS(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if slices.Contains([]string{"os", "io", "syscall", "io/ioutil"}, p) {
				t.Errorf("%s imports %s: reading files is the workspaces' and Options.ReadFile's (see doc.go)", f, p)
			}
		}
	}
}
