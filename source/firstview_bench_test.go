package source

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/scm/snapstore"
	"github.com/changesetd/changesetd/session"
)

// firstViewRepo returns a repository shaped like bench -scale's: n files
// of 20 to 60 lines in n/100 directories, committed through git
// fast-import with a cache-tree in the index, 1% of them edited in four
// lines (the scale bench edits 5%: SOURCE_BENCH_EVERY=20 does the same)
// and 5 untracked. SOURCE_BENCH_DIR keeps it between runs.
func firstViewRepo(b *testing.B, n int) string {
	return benchRepo(b, "first", n)
}

// benchRepo is firstViewRepo kept under its own name: a benchmark that
// rewrites files (and leaves them with new mtimes) uses a copy of its own.
func benchRepo(b *testing.B, name string, n int) string {
	b.Helper()
	keep := os.Getenv("SOURCE_BENCH_DIR")
	var dir string
	if keep != "" {
		dir = filepath.Join(keep, name+"-"+strconv.Itoa(n))
		if e := benchEvery(); e != 100 {
			dir += "-every" + strconv.Itoa(e)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git", "bench-done")); err == nil {
			return dir
		}
		os.RemoveAll(dir)
	} else {
		dir = b.TempDir()
	}
	must(b, os.MkdirAll(dir, 0o755))
	gitRun(b, dir, "init", "-q", "-b", "main")
	dirs := max(n/100, 1)
	path := func(i int) string {
		d := i % dirs
		return fmt.Sprintf("mod%02d/pkg%04d/file%06d.go", d%10, d, i)
	}
	lines := func(i int) []string {
		out := []string{fmt.Sprintf("package p%d", i), ""}
		for k := 0; len(out) < 20+i%41; k++ {
			out = append(out, fmt.Sprintf("func f%d_%d(x int) int {", i, k), fmt.Sprintf("\tx += %d", (i*31+k)%1000), "\treturn x", "}", "")
		}
		return out[:20+i%41]
	}
	join := func(l []string) string { return strings.Join(l, "\n") + "\n" }
	cmd := exec.Command("git", "fast-import", "--quiet", "--done")
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	must(b, err)
	must(b, cmd.Start())
	w := bufio.NewWriterSize(in, 1<<20)
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter B <b@example.com> 1700000000 +0000\ndata 4\ninit\n")
	for d := range dirs {
		must(b, os.MkdirAll(filepath.Join(dir, filepath.Dir(path(d))), 0o755))
	}
	for i := range n {
		c := join(lines(i))
		must(b, os.WriteFile(filepath.Join(dir, path(i)), []byte(c), 0o644))
		fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", path(i), len(c), c)
	}
	fmt.Fprintf(w, "done\n")
	must(b, w.Flush())
	in.Close()
	must(b, cmd.Wait())
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond))) // not racily clean
	gitRun(b, dir, "read-tree", "HEAD")
	gitRun(b, dir, "reset", "-q")
	for i := 0; i < n; i += benchEvery() {
		l := lines(i)
		l[3], l[8] = "\tx = x*3 // edited", "\tx = x*5 // edited"
		l = append(l[:5], append([]string{"\tx-- // inserted"}, l[5:]...)...)
		l = append(l[:12], l[13:]...)
		must(b, os.WriteFile(filepath.Join(dir, path(i)), []byte(join(l)), 0o644))
	}
	for k := range 5 {
		writeFile(b, dir, fmt.Sprintf("new/u%d.go", k), "package u\n")
	}
	if keep != "" {
		must(b, os.WriteFile(filepath.Join(dir, ".git", "bench-done"), nil, 0o644))
	}
	return dir
}

// benchEvery is one in how many files benchRepo edits: 100, or
// SOURCE_BENCH_EVERY.
func benchEvery() int {
	if n, err := strconv.Atoi(os.Getenv("SOURCE_BENCH_EVERY")); err == nil && n > 0 {
		return n
	}
	return 100
}

// wantChanged fails b unless list holds every file benchRepo changed.
func wantChanged(b *testing.B, list *session.ChangeList) {
	b.Helper()
	if n := benchFiles() / benchEvery(); len(list.Files) < n {
		b.Fatalf("%d files changed, want %d", len(list.Files), n+5)
	}
}

func benchFiles() int {
	if n, err := strconv.Atoi(os.Getenv("SOURCE_BENCH_FILES")); err == nil && n > 0 {
		return n
	}
	return 20000
}

// BenchmarkFirstView is a daemon's first view of a working tree: open
// the workspace (the first scan, the watcher armed) and compute the
// uncommitted changeset with every changed file diffed.
//
//	SOURCE_BENCH_DIR=/tmp/sb SOURCE_BENCH_FILES=100000 go test ./source -run '^$' -bench FirstView -benchtime 3x -cpuprofile cpu.prof
func BenchmarkFirstView(b *testing.B) {
	dir := firstViewRepo(b, benchFiles())
	b.ResetTimer()
	before := cpuTime()
	for range b.N {
		w := open(b, dir).(*gitWorkspace)
		list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
		must(b, err)
		wantChanged(b, list)
		w.Close()
	}
	b.ReportMetric(float64((cpuTime()-before).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkRestartView is BenchmarkFirstView on a state directory the
// previous iteration left: what a restart on the unchanged tree does.
func BenchmarkRestartView(b *testing.B) {
	dir := firstViewRepo(b, benchFiles())
	snaps, err := snapstore.Open(b.TempDir())
	must(b, err)
	defer snaps.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	view := func() {
		ws, err := Opener(quiet, snaps)(dir)
		must(b, err)
		w := ws.(*gitWorkspace)
		list, err := w.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
		must(b, err)
		wantChanged(b, list)
		must(b, w.Close())
	}
	view() // the run before the restart
	b.ResetTimer()
	for range b.N {
		view()
	}
}

// BenchmarkSave is what one save costs the workspace once the view is
// up: the file re-checked and diffed, as the session asks after a
// watcher batch. Its allocations should not grow with the tree.
func BenchmarkSave(b *testing.B) {
	dir := firstViewRepo(b, benchFiles())
	w := open(b, dir).(*gitWorkspace)
	defer w.Close()
	ctx := context.Background()
	_, err := w.Changes(ctx, session.Query{View: protocol.KindUncommitted})
	must(b, err)
	rel := "mod01/pkg0001/file000001.go"
	orig, err := os.ReadFile(filepath.Join(dir, rel))
	must(b, err)
	defer os.WriteFile(filepath.Join(dir, rel), orig, 0o644)
	i := 0
	for b.Loop() {
		i++
		must(b, os.WriteFile(filepath.Join(dir, rel), append(orig, fmt.Sprintf("// save %d\n", i)...), 0o644))
		list, err := w.Changes(ctx, session.Query{View: protocol.KindUncommitted, Paths: []string{rel}})
		must(b, err)
		if len(list.Files) != 1 {
			b.Fatalf("%d files", len(list.Files))
		}
	}
}

// BenchmarkBurst is what a burst costs the workspace once the view is
// up: half the tree (10,000 of the 20,000 files, by default) rewritten
// at once, then re-checked and diffed by path, as the session asks after
// the watcher's batch. Only the computation is timed, not the writes.
//
//	SOURCE_BENCH_DIR=/tmp/sb go test ./source -run '^$' -bench Burst -benchtime 3x -benchmem -cpuprofile cpu.prof
func BenchmarkBurst(b *testing.B) {
	n := benchFiles()
	dir := benchRepo(b, "burst", n)
	w := open(b, dir).(*gitWorkspace)
	defer w.Close()
	ctx := context.Background()
	_, err := w.Changes(ctx, session.Query{View: protocol.KindUncommitted})
	must(b, err)
	dirs := max(n/100, 1)
	var paths []string
	orig := map[string][]byte{}
	for i := 0; len(paths) < n/2 && i < n; i++ {
		if i%benchEvery() == 0 {
			continue // edited already
		}
		d := i % dirs
		p := fmt.Sprintf("mod%02d/pkg%04d/file%06d.go", d%10, d, i)
		c, err := os.ReadFile(filepath.Join(dir, p))
		must(b, err)
		paths, orig[p] = append(paths, p), c
	}
	defer func() {
		for p, c := range orig {
			os.WriteFile(filepath.Join(dir, p), c, 0o644)
		}
	}()
	i := 0
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		i++
		for _, p := range paths {
			must(b, os.WriteFile(filepath.Join(dir, p), append(orig[p], fmt.Sprintf("// burst %d\n", i)...), 0o644))
		}
		b.StartTimer()
		before := cpuTime()
		list, err := w.Changes(ctx, session.Query{View: protocol.KindUncommitted, Paths: paths})
		cpu += cpuTime() - before
		must(b, err)
		if len(list.Files) != len(paths) {
			b.Fatalf("%d files changed, want %d", len(list.Files), len(paths))
		}
	}
	// On a shared machine the wall time follows the load; the CPU time
	// spent (user + system, the whole process) follows the work.
	b.ReportMetric(float64(cpu.Milliseconds())/float64(i), "cpu-ms/op")
}

// cpuTime is the process's user + system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLastKnown is a restart up to the last-known view: the
// workspace opened on the state the run before left, its view decoded.
//
//	SOURCE_BENCH_DIR=/tmp/sb go test ./source -run '^$' -bench LastKnown -cpuprofile cpu.prof
func BenchmarkLastKnown(b *testing.B) {
	dir := firstViewRepo(b, benchFiles())
	snaps, err := snapstore.Open(b.TempDir())
	must(b, err)
	defer snaps.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ws, err := Opener(quiet, snaps)(dir)
	must(b, err)
	_, err = ws.Changes(context.Background(), session.Query{View: protocol.KindUncommitted})
	must(b, err)
	must(b, ws.Close())
	b.ResetTimer()
	for range b.N {
		ws, err := Opener(quiet, snaps)(dir)
		must(b, err)
		list, ok := ws.(session.LastKnower).LastKnown()
		if !ok {
			b.Fatal("no last-known view")
		}
		wantChanged(b, list)
		b.StopTimer()
		must(b, ws.Close())
		b.StartTimer()
	}
}
