package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// The page's modules are written one per view and served as one file:
// on a reload the browser opened the page's socket only after it had
// started fetching all of them (the preload scanner asks for them
// first), and then read and linked each in turn, all while the snapshot
// waited. The bundle is made from the embedded modules the first time
// the page is asked for, in memory; there is no build step.

const (
	bundleName = "app.bundle.js"
	mapName    = "app.bundle.js.map"
)

// bundled is the page's modules as one, and its source map.
type bundled struct {
	js, sourceMap []byte
	inputs        []string // the modules it holds
}

// bundle bundles app.js and every module it imports from files. The
// highlighter's grammars (hljs-*.js) stay separate files, loaded when a
// diff needs them.
func bundle(files fs.FS) (bundled, error) {
	embedded := api.Plugin{
		Name: "embedded",
		Setup: func(b api.PluginBuild) {
			b.OnResolve(api.OnResolveOptions{Filter: `.*`}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
				name := path.Clean(strings.TrimPrefix(a.Path, "./"))
				if strings.HasPrefix(name, "hljs-") {
					return api.OnResolveResult{Path: a.Path, External: true}, nil
				}
				if strings.Contains(name, "/") || !strings.HasSuffix(name, ".js") {
					return api.OnResolveResult{}, fmt.Errorf("%s: only modules beside it can be imported", a.Path)
				}
				return api.OnResolveResult{Path: name, Namespace: "embedded"}, nil
			})
			b.OnLoad(api.OnLoadOptions{Filter: `.*`, Namespace: "embedded"}, func(a api.OnLoadArgs) (api.OnLoadResult, error) {
				src, err := fs.ReadFile(files, a.Path)
				if err != nil {
					return api.OnLoadResult{}, err
				}
				s := string(src)
				return api.OnLoadResult{Contents: &s, Loader: api.LoaderJS}, nil
			})
		},
	}
	r := api.Build(api.BuildOptions{
		EntryPoints:      []string{"app.js"},
		Bundle:           true,
		Format:           api.FormatESModule,
		Target:           api.ES2022,
		Outfile:          bundleName,
		Sourcemap:        api.SourceMapLinked,
		MinifyWhitespace: true,
		MinifySyntax:     true,
		LegalComments:    api.LegalCommentsNone,
		Metafile:         true,
		Plugins:          []api.Plugin{embedded},
		LogLevel:         api.LogLevelSilent,
		Write:            false,
		// Names the output files' paths only: every module is read from
		// files through the plugin, and nothing is written.
		AbsWorkingDir: "/",
	})
	if len(r.Errors) > 0 || len(r.Warnings) > 0 {
		var msgs []string
		for _, m := range append(r.Errors, r.Warnings...) {
			msgs = append(msgs, m.Text)
		}
		return bundled{}, errors.New("bundling the page: " + strings.Join(msgs, "; "))
	}
	var out bundled
	for _, f := range r.OutputFiles {
		switch {
		case strings.HasSuffix(f.Path, "/"+mapName):
			out.sourceMap = f.Contents
		case strings.HasSuffix(f.Path, "/"+bundleName):
			out.js = f.Contents
		}
	}
	if out.js == nil || out.sourceMap == nil {
		return bundled{}, errors.New("bundling the page: no output")
	}
	out.inputs = metafileInputs(r.Metafile)
	return out, nil
}

// metafileInputs is the modules esbuild's metafile lists, by name.
func metafileInputs(meta string) []string {
	var m struct {
		Inputs map[string]json.RawMessage `json:"inputs"`
	}
	if json.Unmarshal([]byte(meta), &m) != nil {
		return nil
	}
	var out []string
	for k := range m.Inputs {
		out = append(out, strings.TrimPrefix(k, "embedded:"))
	}
	slices.Sort(out)
	return out
}
