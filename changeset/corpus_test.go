package changeset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// corpusEnv turns TestCorpusCountsAgainstGit on. Its value is "1" for
// the default modules, or a comma-separated list of module[@n] (the last
// n released versions, default 31).
const corpusEnv = "CHANGESETD_CORPUS"

var defaultCorpus = []string{"golang.org/x/mod@31", "github.com/stretchr/testify@31", "github.com/prometheus/client_golang@31"}

// TestCorpusCountsAgainstGit commits successive released versions of real
// Go modules (fetched with go mod download) one after another into a
// scratch repository and compares, for every file that changed between
// consecutive versions, our counts with git diff --numstat's. It needs
// the network (the Go module proxy) and takes minutes, so it runs only
// when CHANGESETD_CORPUS is set:
//
//	CHANGESETD_CORPUS=1 go test ./changeset -run TestCorpusCountsAgainstGit -v -timeout 30m
func TestCorpusCountsAgainstGit(t *testing.T) {
	spec := os.Getenv(corpusEnv)
	if spec == "" {
		t.Skipf("set %s=1 (or module@n,...) to run; it downloads modules", corpusEnv)
	}
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	mods := defaultCorpus
	if spec != "1" {
		mods = strings.Split(spec, ",")
	}
	cache := t.TempDir()
	var total, equal int
	for _, m := range mods {
		path, n := m, 31
		if i := strings.LastIndexByte(m, '@'); i > 0 {
			path = m[:i]
			v, err := strconv.Atoi(m[i+1:])
			if err != nil {
				t.Fatalf("%s: %v", m, err)
			}
			n = v
		}
		tot, eq := corpusModule(t, cache, path, n)
		total += tot
		equal += eq
	}
	if total == 0 {
		t.Fatal("no files compared")
	}
	t.Logf("all modules: %d of %d changed files have git's counts (%.3f%%)", equal, total, 100*float64(equal)/float64(total))
}

// corpusModule runs the comparison on the last n versions of one module
// and returns the files compared and those with git's counts.
func corpusModule(t *testing.T, cache, module string, n int) (total, equal int) {
	t.Helper()
	var list struct{ Versions []string }
	out := goCmd(t, cache, "list", "-m", "-versions", "-json", module)
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, v := range list.Versions {
		if !strings.Contains(v, "-") { // releases only, no pre-releases
			versions = append(versions, v)
		}
	}
	if len(versions) > n {
		versions = versions[len(versions)-n:]
	}
	if len(versions) < 2 {
		t.Fatalf("%s: %d versions", module, len(versions))
	}
	repo := newGitRepo(t)
	commits := make([]string, len(versions))
	for i, v := range versions {
		var dl struct{ Dir, Error string }
		if err := json.Unmarshal(goCmd(t, cache, "mod", "download", "-json", module+"@"+v), &dl); err != nil || dl.Error != "" {
			t.Fatalf("download %s@%s: %v %s", module, v, err, dl.Error)
		}
		replaceTree(t, repo.dir, dl.Dir)
		repo.run(nil, "add", "-A", "-f")
		repo.run(nil, "commit", "-q", "--allow-empty", "-m", v)
		commits[i] = strings.TrimSpace(repo.run(nil, "rev-parse", "HEAD"))
	}
	var bad []string
	for i := 1; i < len(versions); i++ {
		out := repo.run(nil, "-c", "diff.algorithm=myers", "diff", "--no-renames", "--numstat", "-z", commits[i-1], commits[i])
		recs := strings.Split(out, "\x00")
		var specs []string
		for _, rec := range recs {
			if f := strings.SplitN(rec, "\t", 3); len(f) == 3 {
				specs = append(specs, commits[i-1]+":"+f[2], commits[i]+":"+f[2])
			}
		}
		blobs := catBlobs(t, repo, specs)
		for _, rec := range recs {
			if rec == "" {
				continue
			}
			f := strings.SplitN(rec, "\t", 3)
			if len(f) != 3 {
				t.Fatalf("numstat record %q", rec)
			}
			if f[0] == "-" {
				continue // binary for git
			}
			ga, _ := strconv.Atoi(f[0])
			gr, _ := strconv.Atoi(f[1])
			var old, cur *Side
			if b, ok := blobs[commits[i-1]+":"+f[2]]; ok {
				old = &Side{Path: f[2], Content: b}
			}
			if b, ok := blobs[commits[i]+":"+f[2]]; ok {
				cur = &Side{Path: f[2], Content: b}
			}
			r := Compare(old, cur, Options{})
			if r.Binary || r.TooLarge {
				continue
			}
			total++
			if r.Added == ga && r.Removed == gr {
				equal++
			} else if len(bad) < 20 {
				bad = append(bad, fmt.Sprintf("%s..%s %s: +%d -%d, git %d %d (fallback %v)", versions[i-1], versions[i], f[2], r.Added, r.Removed, ga, gr, r.Fallback))
			}
		}
	}
	t.Logf("%s: %d versions %s..%s, %d of %d changed files have git's counts (%.3f%%)",
		module, len(versions), versions[0], versions[len(versions)-1], equal, total, 100*float64(equal)/float64(total))
	for _, b := range bad {
		t.Errorf("%s: %s", module, b)
	}
	return total, equal
}

func goCmd(t *testing.T, cache string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = cache
	cmd.Env = append(os.Environ(), "GOMODCACHE="+filepath.Join(cache, "mod"), "GOFLAGS=-modcacherw", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// replaceTree makes the worktree of repo (all but .git) a copy of src.
func replaceTree(t *testing.T, repo, src string) {
	t.Helper()
	ents, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(repo, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(repo, rel)
		switch {
		case d.IsDir():
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(dst, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// catBlobs reads rev:path blobs with one git cat-file --batch; absent
// paths are left out of the map.
func catBlobs(t *testing.T, r *gitRepo, specs []string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	if len(specs) == 0 {
		return out
	}
	c := r.cmd([]byte(strings.Join(specs, "\n")+"\n"), "cat-file", "--batch")
	b, err := c.Output()
	if err != nil {
		t.Fatalf("git cat-file --batch: %v", err)
	}
	for _, spec := range specs {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			t.Fatalf("cat-file: short output at %s", spec)
		}
		head := strings.Fields(string(b[:nl]))
		b = b[nl+1:]
		if len(head) == 2 && head[1] == "missing" {
			continue
		}
		if len(head) != 3 {
			t.Fatalf("cat-file header %q", head)
		}
		size, err := strconv.Atoi(head[2])
		if err != nil || size+1 > len(b) {
			t.Fatalf("cat-file header %q", head)
		}
		out[spec] = b[:size]
		b = b[size+1:]
	}
	return out
}
