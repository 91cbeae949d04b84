package test

// The daemon binary is built by TestMain, which go test's result cache
// cannot see. Importing the packages it is made of, and reading the
// command's own sources (see touchSources), puts them in the cache key so
// a change to the daemon re-runs these tests.
import (
	"os"
	"path/filepath"

	_ "github.com/changesetd/changesetd/agent"
	_ "github.com/changesetd/changesetd/ahpclient"
	_ "github.com/changesetd/changesetd/changeset"
	_ "github.com/changesetd/changesetd/confine"
	_ "github.com/changesetd/changesetd/hub"
	_ "github.com/changesetd/changesetd/metrics"
	_ "github.com/changesetd/changesetd/protocol"
	_ "github.com/changesetd/changesetd/reducer"
	_ "github.com/changesetd/changesetd/scm"
	_ "github.com/changesetd/changesetd/scm/fswatch"
	_ "github.com/changesetd/changesetd/scm/snapstore"
	_ "github.com/changesetd/changesetd/server"
	_ "github.com/changesetd/changesetd/session"
	_ "github.com/changesetd/changesetd/session/annotation"
	_ "github.com/changesetd/changesetd/session/attrib"
	_ "github.com/changesetd/changesetd/session/ops"
	_ "github.com/changesetd/changesetd/session/view"
	_ "github.com/changesetd/changesetd/source"
	_ "github.com/changesetd/changesetd/store"
	_ "github.com/changesetd/changesetd/uritemplate"
	_ "github.com/changesetd/changesetd/web"
)

func touchSources() {
	files, _ := filepath.Glob(filepath.Join("..", "cmd", "changesetd", "*.go"))
	for _, f := range files {
		if b, err := os.Open(f); err == nil {
			b.Close()
		}
	}
}
