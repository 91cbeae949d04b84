package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// repo is the synthetic working tree: what was committed, what the
// benchmark changed and the file it saves repeatedly.
type repo struct {
	dir       string   // absolute, symlinks resolved
	tracked   int      // committed files
	bytes     int64    // committed content size
	modified  []string // slash paths of edited tracked files
	untracked []string // slash paths of new files
	saveFile  string   // a tracked, unmodified file for the save test
}

// expected lists the paths the uncommitted changeset must contain.
func (r *repo) expected() []string {
	return append(append([]string(nil), r.modified...), r.untracked...)
}

// gitCmd runs git with a neutral configuration, so the user's config
// (fsmonitor, untracked cache, hooks) does not change what is measured.
func gitCmd(dir string, args ...string) *exec.Cmd {
	full := append([]string{"-c", "user.name=Bench", "-c", "user.email=bench@example.com", "-c", "core.autocrlf=false", "-c", "commit.gpgsign=false"}, args...)
	cmd := exec.Command("git", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	return cmd
}

func git(dir string, args ...string) (string, error) {
	out, err := gitCmd(dir, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// codeFile returns n lines of Go-like text; rng decides the details.
func codeFile(rng *rand.Rand, name string, n int) []string {
	lines := []string{"package " + name, ""}
	for f := 0; len(lines) < n; f++ {
		lines = append(lines, fmt.Sprintf("// fn%d does step %d of %s.", f, rng.IntN(100), name),
			fmt.Sprintf("func fn%d(ctx context.Context, x int) (int, error) {", f))
		for s := range 2 + rng.IntN(7) {
			switch rng.IntN(4) {
			case 0:
				lines = append(lines, "\tif err := check(ctx, x); err != nil {", "\t\treturn 0, err", "\t}")
			case 1:
				lines = append(lines, fmt.Sprintf("\tx += %d // step %d", rng.IntN(100000), s))
			case 2:
				lines = append(lines, "")
			default:
				lines = append(lines, fmt.Sprintf("\tlog.Printf(\"fn%d step %d: %%d\", x)", f, s))
			}
		}
		lines = append(lines, "\treturn x, nil", "}", "")
	}
	return lines[:n]
}

func joinLines(lines []string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

// editLines changes a few scattered lines: two replaced, one inserted,
// one deleted (tag keeps each edit distinct).
func editLines(rng *rand.Rand, lines []string, tag string) []string {
	out := append([]string(nil), lines...)
	for k := range 2 {
		i := 2 + rng.IntN(len(out)-2)
		out[i] = fmt.Sprintf("\tx = x*%d + %d // edited %s.%d", 3+k, rng.IntN(1000), tag, k)
	}
	i := 2 + rng.IntN(len(out)-2)
	out = append(out[:i], append([]string{"\tx-- // inserted " + tag}, out[i:]...)...)
	i = 2 + rng.IntN(len(out)-2)
	return append(out[:i], out[i+1:]...)
}

func filePath(i, dirs int) string {
	d := i % dirs
	return fmt.Sprintf("mod%02d/pkg%04d/file%06d.go", d%10, d, i)
}

// fileLines regenerates file i's committed content deterministically.
func fileLines(i int) []string {
	rng := rand.New(rand.NewPCG(uint64(i), 42))
	return codeFile(rng, fmt.Sprintf("pkg%d", i), 20+rng.IntN(41))
}

// makeRepo writes files committed in one commit through git fast-import
// (no loose objects, no second hashing pass by "git add"), builds the
// index with "git reset", then edits modified files and adds untracked
// ones. It prints how long the steps took.
func makeRepo(parent string, files, dirs, modified int) (*repo, error) {
	if dirs < 1 || files < 1 || modified < 0 || modified >= files {
		return nil, fmt.Errorf("need files >= 1, dirs >= 1 and 0 <= modified < files")
	}
	dir := filepath.Join(parent, "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	r := &repo{dir: dir, tracked: files}
	start := time.Now()
	if _, err := git(dir, "init", "-q", "-b", "main"); err != nil {
		return nil, err
	}
	fi := gitCmd(dir, "fast-import", "--quiet", "--done")
	var fiOut bytes.Buffer
	fi.Stdout, fi.Stderr = &fiOut, &fiOut
	pipe, err := fi.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := fi.Start(); err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(pipe, 1<<20)
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 8\ninitial\n")
	// Four writers: creating files is syscall-bound and the main loop
	// also feeds fast-import.
	type file struct {
		rel     string
		content []byte
	}
	queue := make(chan file, 256)
	writeErr := make(chan error, 4)
	for range 4 {
		go func() {
			var first error
			for f := range queue {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(f.rel)), f.content, 0o644); err != nil && first == nil {
					first = err
				}
			}
			writeErr <- first
		}()
	}
	put := func(rel string, content []byte) {
		queue <- file{rel, content}
		fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n", rel, len(content))
		w.Write(content)
		r.bytes += int64(len(content))
	}
	for d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(filePath(d, dirs))), 0o755); err != nil {
			return nil, err
		}
	}
	// An ignored build directory keeps the ignore rules honest.
	put(".gitignore", []byte("/build/\n*.log\n"))
	for i := range files {
		put(filePath(i, dirs), joinLines(fileLines(i)))
	}
	close(queue)
	for range 4 {
		if err := <-writeErr; err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(w, "\ndone\n")
	if err := w.Flush(); err != nil {
		return nil, err
	}
	pipe.Close()
	if err := fi.Wait(); err != nil {
		return nil, fmt.Errorf("git fast-import: %v\n%s", err, fiOut.String())
	}
	written := time.Since(start)
	// Files written in the same second as the index would be "racily
	// clean" and re-hashed by every later status; keep them apart.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	idx := time.Now()
	// read-tree writes the index's cache-tree, as a clone, a checkout or
	// a commit does; reset then records the files' stat data.
	if _, err := git(dir, "read-tree", "HEAD"); err != nil {
		return nil, err
	}
	if _, err := git(dir, "reset", "-q"); err != nil {
		return nil, err
	}
	indexed := time.Since(idx)

	for i := range 50 {
		p := filepath.Join(dir, "build", fmt.Sprintf("out%02d.o", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("ignored build output\n"), 0o644); err != nil {
			return nil, err
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	stride := files / max(modified, 1)
	for k := range modified {
		i := k * stride
		rel := filePath(i, dirs)
		if err := os.WriteFile(filepath.Join(dir, rel), joinLines(editLines(rng, fileLines(i), fmt.Sprint(k))), 0o644); err != nil {
			return nil, err
		}
		r.modified = append(r.modified, rel)
	}
	for k := range 5 {
		rel := fmt.Sprintf("new/untracked%d.go", k)
		if k%2 == 1 {
			rel = fmt.Sprintf("mod%02d/pkg%04d/untracked%d.go", k%10, k%dirs, k)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, rel), joinLines(codeFile(rng, "fresh", 30)), 0o644); err != nil {
			return nil, err
		}
		r.untracked = append(r.untracked, rel)
	}
	r.saveFile = filePath(1, dirs) // stride >= 2, so file 1 is never edited
	if stride < 2 {
		r.saveFile = filePath(files-1, dirs)
	}
	// The tree just written is written back to the disk now rather than
	// in the kernel's own time (dirty pages expire after 30 s): at a
	// million files that was a gigabyte flushed in the middle of the
	// timed saves, whose writes then waited for it.
	synced := time.Now()
	syscall.Sync()
	fmt.Printf("setup: %d files (%.0f MB) in %d dirs committed in %s (write + fast-import %s, git reset %s, sync %s); %d modified, %d untracked\n",
		files, float64(r.bytes)/1e6, dirs, fmtDur(time.Since(start)), fmtDur(written), fmtDur(indexed), fmtDur(time.Since(synced)), len(r.modified), len(r.untracked))
	return r, nil
}
