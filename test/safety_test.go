package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

// osThreads is the Threads line of /proc/<pid>/status.
func (d *daemon) osThreads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc status")
	return 0
}

// A named pipe or socket in the working tree is refused at once by
// resourceRead, never opened for a blocking read: 1,000 reads leave no
// OS thread behind, and the changeset still computes around them.
func TestNonRegularFilesRefused(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	if err := syscall.Mkfifo(filepath.Join(repo, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ln, err := net.Listen("unix", filepath.Join(repo, "sock"))
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer ln.Close()
	writeFile(t, repo, "a.txt", "b\n")
	e := startOps(t, repo)
	e.waitHas("a.txt")

	before := e.d.osThreads(t)
	const reads = 1000
	var wg sync.WaitGroup
	errs := make(chan error, reads)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < reads; i += 8 {
				name := "pipe"
				if i%2 == 1 {
					name = "sock"
				}
				_, err := readResource(t, e.c, fileURI(repo, name))
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		n++
		if err == nil || rpcCode(err) != protocol.CodeNotFound || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("resourceRead of a special file: %v; want a refusal saying it is not a regular file", err)
		}
	}
	if n != reads {
		t.Fatalf("%d answers, want %d", n, reads)
	}
	after := e.d.osThreads(t)
	t.Logf("OS threads: %d before, %d after %d reads", before, after, reads)
	if after > before+4 {
		t.Fatalf("OS threads grew from %d to %d over %d refused reads", before, after, reads)
	}
	// The regular file beside them is still served and the daemon alive.
	if got, err := readResource(t, e.c, fileURI(repo, "a.txt")); err != nil || string(got) != "b\n" {
		t.Fatalf("resourceRead a.txt = %q, %v", got, err)
	}
}

// workingTreeFiles lists the files of repo outside .git.
func workingTreeFiles(t *testing.T, repo string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(repo, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// bigContent is size bytes of numbered lines, different per seed.
func bigContent(size int, seed string) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%s line %08d of a large file under revert\n", seed, i)
	}
	return b.Bytes()
}

// SIGKILL at random points of a large revert never leaves a file in the
// working tree (the temp file lives under .git and is removed at the next
// start), and the daemon's commit-everything after the restart commits
// only the user's files. CHANGESETD_KILL_ROUNDS sets the number of
// random kills (4; a soak by hand runs more).
func TestKillNineDuringRevertLeavesNoTempFile(t *testing.T) {
	const size = 12 << 20
	rounds := 4
	if n, err := strconv.Atoi(os.Getenv("CHANGESETD_KILL_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(size, "base"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "big.txt")
	git(t, repo, "commit", "-q", "-m", "big")
	state := t.TempDir()
	want := []string{"a.txt", "big.txt"}
	tmpDir := filepath.Join(repo, ".git", "changesetd-tmp")
	// How long one revert takes here, so the kills fall inside it.
	var took time.Duration
	{
		if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(size, "timing"), 0o644); err != nil {
			t.Fatal(err)
		}
		d := startDaemonIn(t, state, repo)
		e := attachOps(t, d, repo)
		e.waitHas("big.txt")
		e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
		// A 12 MiB revert under the race detector on a loaded machine
		// can take longer than the harness's usual 30 s per call.
		c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		start := time.Now()
		var res protocol.InvokeChangesetOperationResult
		err := e.c.Call(c, protocol.MethodInvokeChangesetOperation, map[string]any{"channel": e.uri, "operationId": "revert", "target": resTarget(e.id("big.txt"))}, &res)
		took = time.Since(start)
		cancel()
		if err != nil {
			t.Fatalf("the timing revert: %v", err)
		}
		e.c.Close()
		d.stop()
	}
	for round := range rounds {
		if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(size, fmt.Sprintf("round%d", round)), 0o644); err != nil {
			t.Fatal(err)
		}
		d := startDaemonIn(t, state, repo)
		e := attachOps(t, d, repo)
		e.waitHas("big.txt")
		e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
		done := make(chan error, 1)
		go func() {
			_, err := e.invoke("revert", resTarget(e.id("big.txt")), nil)
			done <- err
		}()
		time.Sleep(time.Duration(rand.Int64N(int64(took) + 1))) // the random kill point
		d.kill(t)
		err := <-done
		e.c.Close()
		if got := workingTreeFiles(t, repo); !slices.Equal(got, want) {
			t.Fatalf("round %d: after SIGKILL (revert answered %v) the working tree holds %v, want %v", round, err, got, want)
		}
		left, _ := os.ReadDir(tmpDir)
		t.Logf("round %d: killed within a %v revert; revert answered %v; %d temp files left under .git", round, took, err, len(left))
	}

	// After a restart the leftovers are gone and a commit of everything
	// holds only what the user changed.
	writeFile(t, repo, "user.txt", "mine\n")
	d := startDaemonIn(t, state, repo)
	e := attachOps(t, d, repo)
	e.waitHas("user.txt")
	if ents, err := os.ReadDir(tmpDir); err == nil && len(ents) != 0 {
		t.Errorf("%d leftovers in %s after restart", len(ents), tmpDir)
	}
	e.waitOffered("commit", protocol.ScopeChangeset)
	e.mustInvoke("commit", nil, map[string]any{"message": "after crashes"})
	names := strings.Fields(e.git("show", "--name-only", "--format=", "HEAD"))
	for _, n := range names {
		if n != "user.txt" && n != "big.txt" {
			t.Errorf("the commit after restart holds %s; only user files are allowed: %v", n, names)
		}
	}
	if !slices.Contains(names, "user.txt") {
		t.Errorf("the commit after restart lacks user.txt: %v", names)
	}
	if got := e.git("status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("status after committing everything:\n%s", got)
	}
}

// serveExit runs the daemon on stateDir expecting it to refuse to start,
// and returns its exit code and stderr.
func serveExit(t *testing.T, stateDir string, dirs ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--listen", "127.0.0.1:0", "--state-dir", stateDir}, dirs...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("daemon started on a damaged state.db; stderr:\n%s", stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// A damaged state.db never comes up empty or crashes: with the backup of
// the last clean shutdown it is restored, saying so in the log; without
// one the daemon refuses with exit code 3, naming the file and the fix.
func TestDamagedStateDB(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	state := t.TempDir()
	db := filepath.Join(state, "state.db")

	// A clean run that records a turn; its shutdown writes the backup.
	d := startDaemonIn(t, state, repo)
	c := d.client(t, "agent")
	sessionURI := onlySession(t, c).Resource
	catalogue(t, c, sessionURI) // waits for the session to have started
	for _, m := range []string{protocol.MethodTurnStart, protocol.MethodTurnEnd} {
		if err := c.Call(ctx(t), m, map[string]any{"channel": sessionURI, "turnId": "t1"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(db + ".bak"); err != nil {
		t.Fatalf("no backup after a clean shutdown: %v", err)
	}
	good, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}

	damage := map[string]func(){
		"empty":     func() { os.WriteFile(db, nil, 0o600) },
		"truncated": func() { os.WriteFile(db, good[:8<<10], 0o600) },
		"garbage":   func() { os.WriteFile(db, bytes.Repeat([]byte("x"), len(good)), 0o600) },
	}
	for _, name := range []string{"empty", "truncated", "garbage"} {
		t.Run(name+"/recovered", func(t *testing.T) {
			damage[name]()
			d := startDaemonIn(t, state, repo)
			c := d.client(t, "agent")
			done, _ := chatTurns(t, c, sessionURI)
			if !slices.Contains(done, "t1") {
				t.Fatalf("turn t1 lost after recovery from the backup; turns %v", done)
			}
			c.Close()
			d.stop()
			if log := d.stderr.String(); !strings.Contains(log, "recovered from its backup") || !strings.Contains(log, db) {
				t.Fatalf("the log does not report the recovery:\n%s", log)
			}
		})
		t.Run(name+"/refused", func(t *testing.T) {
			for _, b := range []string{".bak", ".bak.1"} {
				os.Remove(db + b)
			}
			damage[name]()
			code, stderr := serveExit(t, state, repo)
			if code != 3 {
				t.Fatalf("exit code %d, want 3; stderr:\n%s", code, stderr)
			}
			for _, bad := range []string{"panic", "SIGBUS", "goroutine "} {
				if strings.Contains(stderr, bad) {
					t.Fatalf("stderr holds %q:\n%s", bad, stderr)
				}
			}
			if !strings.Contains(stderr, db) || !strings.Contains(stderr, "move it away") {
				t.Fatalf("the refusal does not name the file and the fix:\n%s", stderr)
			}
			t.Logf("refusal: %s", strings.TrimSpace(stderr))
			// Put the good file back for the next case; its clean
			// shutdown in the next subtest rewrites the backup.
			if err := os.WriteFile(db, good, 0o600); err != nil {
				t.Fatal(err)
			}
			d := startDaemonIn(t, state, repo)
			d.stop()
		})
	}
}

// A range revert is bound to the content its lines were picked on: with
// _meta.expectedNonce naming a version that is no longer the published
// one it is refused (-32011) and changes nothing; with the current nonce
// it runs.
func TestStaleRangeRevertRefused(t *testing.T) {
	t.Parallel()
	orig := numbered(60)
	seen := slices.Clone(orig)
	seen[40] = "line 41 changed"
	repo := gitRepo(t, map[string]string{"long.txt": joinLines(orig)})
	writeFile(t, repo, "long.txt", joinLines(seen))
	e := startOps(t, repo)
	st := e.waitHas("long.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	n1 := findFile(st, repo, "long.txt").Edit.After.Content.Nonce

	// The file changes after the reviewer saw it: 30 lines go.
	now := slices.Concat(seen[:5], seen[35:])
	now[len(now)-1] = "line 60 changed"
	writeFile(t, repo, "long.txt", joinLines(now))
	// The write truncates first, so the daemon may publish an empty
	// version on the way: wait for the one written.
	n2 := hashObject(t, joinLines(now))
	e.m.Wait("long.txt republished", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "long.txt")
		return ready(st) && f != nil && f.Edit.After.Content.Nonce == n2
	})

	_, err := e.invoke("revert", lineTarget(e.id("long.txt"), 0, 40), map[string]any{"expectedNonce": n1})
	if rpcCode(err) != protocol.CodeConflict || !strings.Contains(err.Error(), "expectedNonce") {
		t.Fatalf("stale range revert: %v; want -32011 naming expectedNonce", err)
	}
	if got := string(e.disk("long.txt")); got != joinLines(now) {
		t.Fatalf("a refused range revert changed the file:\n%s", got)
	}

	// On the current version it applies: only the last line's hunk goes
	// back.
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	last := len(now) - 1
	e.mustInvoke("revert", lineTarget(e.id("long.txt"), last, last), map[string]any{"expectedNonce": n2})
	want := slices.Clone(now)
	want[last] = orig[len(orig)-1]
	if got := string(e.disk("long.txt")); got != joinLines(want) {
		t.Fatalf("range revert on the current version:\n%s\nwant:\n%s", got, joinLines(want))
	}
}

// Operations on one working tree queue rather than refuse each other:
// two clients staging different files at once both succeed, and so do
// many stages at once.
func TestConcurrentStagesOfDifferentFilesAllSucceed(t *testing.T) {
	t.Parallel()
	const n = 12
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("f%02d.txt", i)] = "old\n"
	}
	repo := gitRepo(t, files)
	for name := range files {
		writeFile(t, repo, name, "new "+name+"\n")
	}
	e := startOps(t, repo)
	e.m.Wait("all files changed", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == n })
	e.waitOffered("stage", protocol.ScopeResource, protocol.ScopeRange)
	other := e.d.client(t, "ide-2")
	mirrorChangeset(t, other, e.uri).Wait("ready", ready)

	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		c := e.c
		if i%2 == 1 {
			c = other
		}
		wg.Go(func() {
			_, errs[i] = invokeOn(t, c, e.uri, "stage", resTarget(e.id(fmt.Sprintf("f%02d.txt", i))), nil)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("stage f%02d.txt: %v", i, err)
		}
	}
	staged := strings.Fields(e.git("diff", "--cached", "--name-only"))
	if len(staged) != n {
		t.Fatalf("%d files staged, want %d: %v", len(staged), n, staged)
	}
	e.m.Wait("stage idle again", func(st protocol.ChangesetState) bool {
		o := opIn(st, "stage")
		return o != nil && o.Status == protocol.OpIdle
	})
}

// inotifyWatches counts the inotify watches the daemon holds, from the
// fdinfo of its inotify descriptors.
func (d *daemon) inotifyWatches(t *testing.T) int {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(d.cmd.Process.Pid)
	fds, err := os.ReadDir(dir + "/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if l, _ := os.Readlink(dir + "/fd/" + fd.Name()); l != "anon_inode:inotify" {
			continue
		}
		b, _ := os.ReadFile(dir + "/fdinfo/" + fd.Name())
		n += strings.Count(string(b), "inotify wd:")
	}
	return n
}

func createSession(t *testing.T, c *fake.Client, uri, dir string) {
	t.Helper()
	if err := c.Call(ctx(t), protocol.MethodCreateSession, map[string]any{"channel": uri, "workingDirectories": []string{"file://" + dir}}, nil); err != nil {
		t.Fatal(err)
	}
}

func disposeSession(t *testing.T, c *fake.Client, uri string) {
	t.Helper()
	if err := c.Call(ctx(t), protocol.MethodDisposeSession, map[string]any{"channel": uri}, nil); err != nil {
		t.Fatal(err)
	}
}

// A session that had a turn keeps a watcher; disposing it releases every
// inotify watch, and creating and disposing it again adds none.
func TestDisposeReleasesWatches(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("d%02d/sub/f.txt", i)] = "x\n"
	}
	repo := gitRepo(t, files)
	d := startDaemon(t)
	c := d.client(t, "ide")
	base := d.inotifyWatches(t)
	const uri = "ahp-session:/3f2a9c1e-0000-4000-8000-0000000000aa"
	for round := range 2 {
		createSession(t, c, uri, repo)
		cs := expand(t, catalogue(t, c, uri)["uncommitted"].URITemplate, nil)
		mirrorChangeset(t, c, cs).Wait("ready", ready)
		turnStart(t, c, uri, "work")
		turnEnd(t, c, uri)
		if n := d.inotifyWatches(t); n <= base {
			t.Fatalf("round %d: %d inotify watches with a watched session, %d before; the count does not see them", round, n, base)
		}
		disposeSession(t, c, uri)
		if n := d.inotifyWatches(t); n != base {
			t.Fatalf("round %d: %d inotify watches after dispose, %d before the session", round, n, base)
		}
	}
}

// invokeChangesetOperation answers promptly when its session is disposed
// while the operation runs, and the daemon then stops without waiting out
// its drain deadline.
func TestDisposeDuringOperationReturns(t *testing.T) {
	t.Parallel()
	const size = 24 << 20
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(size, "base"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "big.txt")
	git(t, repo, "commit", "-q", "-m", "big")
	if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(size, "changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startOps(t, repo)
	e.waitHas("big.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	answered := make(chan error, 1)
	go func() {
		_, err := e.invoke("revert", resTarget(e.id("big.txt")), nil)
		answered <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the revert start; not an assertion
	other := e.d.client(t, "admin")
	disposeSession(t, other, e.sess)
	select {
	case err := <-answered:
		t.Logf("revert answered %v", err)
	case <-time.After(time.Minute):
		// A deadline for a hang, not a timing: under the race detector
		// on two busy cores, the baseline and the revert of 24 MiB take
		// seconds before the answer can come.
		t.Fatal("invokeChangesetOperation did not answer within a minute of its session's dispose")
	}
	start := time.Now()
	if err := e.d.stop(); err != nil {
		t.Fatal(err)
	}
	// Under a shutdown step's 10 s budget: a stop that waited for the
	// disposed session's operation would use it all.
	if took := time.Since(start); took > 9*time.Second {
		t.Fatalf("shutdown took %v after a dispose during an operation", took)
	}
}

// A session disposed while its baseline snapshot is taken does not come
// back after a restart.
func TestDisposeDuringBaselineStaysDisposed(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(16<<20, "untracked"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	d := startDaemonIn(t, state)
	c := d.client(t, "ide")
	var uris []string
	for i := range 5 {
		uri := fmt.Sprintf("ahp-session:/3f2a9c1e-0000-4000-8000-0000000001%02d", i)
		uris = append(uris, uri)
		createSession(t, c, uri, repo)
		disposeSession(t, c, uri) // while the baseline is being taken
	}
	c.Close()
	d.stop()
	d = startDaemonIn(t, state)
	c = d.client(t, "ide")
	var list protocol.ListSessionsResult
	if err := c.Call(ctx(t), protocol.MethodListSessions, map[string]any{"channel": protocol.RootURI}, &list); err != nil {
		t.Fatal(err)
	}
	for _, it := range list.Items {
		if slices.Contains(uris, it.Resource) {
			t.Errorf("disposed session %s is back after the restart", it.Resource)
		}
	}
}

// vmHWM is the daemon's peak resident set size in MiB.
func (d *daemon) vmHWM(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// The daemon's peak memory with one huge modified file, at ready and
// after staging it. A measurement for the README, not run by default:
//
//	CHANGESETD_HUGE_MB=300 go test ./test -run TestHugeFileMemory -v -count=1
func TestHugeFileMemory(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("CHANGESETD_HUGE_MB"))
	if mb <= 0 {
		t.Skip("set CHANGESETD_HUGE_MB to measure")
	}
	repo := gitRepo(t, map[string]string{"a.txt": "a\n", "big.txt": "small\n"})
	if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(mb<<20, "huge"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startOps(t, repo)
	st := e.waitHas("big.txt")
	atReady := e.d.vmHWM(t)
	meta, _ := json.Marshal(findFile(st, repo, "big.txt").Meta)
	if !strings.Contains(string(meta), `"tooLarge":true`) {
		t.Errorf("big.txt is not marked tooLarge: %s", meta)
	}
	e.waitOffered("stage", protocol.ScopeResource, protocol.ScopeRange)
	start := time.Now()
	e.mustInvoke("stage", resTarget(e.id("big.txt")), nil)
	staged := time.Since(start)
	afterStage := e.d.vmHWM(t)
	t.Logf("%d MiB file: peak RSS %.0f MiB at ready, %.0f MiB after staging it (stage took %v)", mb, atReady, afterStage, staged.Round(time.Millisecond))
}

// SIGTERM during an operation: the listener closes at once, the running
// operation finishes and answers, a new one is refused, then the daemon
// exits cleanly.
func TestShutdownDrainsThenCloses(t *testing.T) {
	t.Parallel()
	size := 24 << 20
	if raceEnabled {
		size = 2 << 20 // the race detector slows the revert past the 10 s drain limit
	}
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(size, "base"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "big.txt")
	git(t, repo, "commit", "-q", "-m", "big")
	if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(size, "changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "a.txt", "changed\n")
	e := startOps(t, repo)
	e.waitHas("big.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)
	answered := make(chan error, 1)
	go func() {
		_, err := e.invoke("revert", resTarget(e.id("big.txt")), nil)
		answered <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the revert start; not an assertion
	_ = e.d.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.d.stderr.String(), "draining") {
		select {
		case <-answered:
			t.Skip("the revert ended before the shutdown began; nothing to drain")
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no drain logged within 10s of SIGTERM")
		}
	}
	// New work on an open connection is refused while the revert drains
	// (or the connection is already closed once it has).
	if _, err := e.invoke("stage", resTarget(e.id("a.txt")), nil); err == nil {
		t.Error("an operation started after SIGTERM was run")
	}
	select {
	case err := <-answered:
		if err != nil {
			t.Errorf("the operation running at SIGTERM answered %v, want its result", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the operation running at SIGTERM did not answer")
	}
	select {
	case err := <-e.d.exited:
		e.d.exited <- err
		if err != nil {
			t.Fatalf("daemon exit: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("daemon did not exit after SIGTERM")
	}
	if got := string(e.disk("big.txt")); got != string(bigContent(size, "base")) {
		t.Error("the drained revert did not complete")
	}
	if _, _, err := fake.Dial(ctx(t), e.d.URL, nil); err == nil {
		t.Error("a connection was accepted after shutdown")
	}
}

// A range revert is bound to the version it names (the one published
// when it was invoked, as a client shows it): queued behind another
// operation while the file changes on disk, it is refused and writes
// nothing.
func TestRangeRevertQueuedWhileFileChangesRefused(t *testing.T) {
	t.Parallel()
	const size = 24 << 20 // long enough a revert for the file to change behind it
	orig := numbered(60)
	seen := slices.Clone(orig)
	seen[40] = "line 41 changed"
	repo := gitRepo(t, map[string]string{"long.txt": joinLines(orig)})
	if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(size, "base"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "big.txt")
	git(t, repo, "commit", "-q", "-m", "big")
	if err := os.WriteFile(filepath.Join(repo, "big.txt"), bigContent(size, "changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "long.txt", joinLines(seen))
	e := startOps(t, repo)
	e.waitHas("big.txt")
	e.waitHas("long.txt")
	e.waitOffered("revert", protocol.ScopeResource, protocol.ScopeRange)

	// The big revert holds the tree; the range revert queues behind it.
	bigDone := make(chan error, 1)
	go func() {
		_, err := e.invoke("revert", resTarget(e.id("big.txt")), nil)
		bigDone <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the big revert take the tree; not an assertion
	rangeDone := make(chan error, 1)
	go func() {
		_, err := e.invoke("revert", lineTarget(e.id("long.txt"), 40, 40), nil)
		rangeDone <- err
	}()
	time.Sleep(20 * time.Millisecond)
	now := slices.Concat(seen[:5], seen[35:]) // 30 lines go; line 40 is another line now
	writeFile(t, repo, "long.txt", joinLines(now))
	if err := <-bigDone; err != nil {
		t.Fatalf("big revert: %v", err)
	}
	err := <-rangeDone
	if err == nil {
		if got := string(e.disk("long.txt")); got != joinLines(now) {
			t.Fatalf("the range revert ran on content it was not computed on:\n%s", got)
		}
		t.Skip("the range revert ran before the file changed; nothing to check")
	}
	if rpcCode(err) != protocol.CodeConflict || !strings.Contains(err.Error(), "changed on disk") {
		t.Fatalf("queued range revert on a changed file: %v; want -32011 saying it changed on disk", err)
	}
	if got := string(e.disk("long.txt")); got != joinLines(now) {
		t.Fatalf("a refused range revert changed the file:\n%s", got)
	}
}

// trackedNumstat is git's view of the uncommitted changes of a repository
// without untracked files: path -> "added removed".
func trackedNumstat(t *testing.T, repo string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rec := range strings.Split(string(gitOut(t, repo, "diff", "HEAD", "--numstat", "--no-renames", "-z")), "\x00") {
		f := strings.SplitN(rec, "\t", 3)
		if len(f) == 3 {
			out[f[2]] = f[0] + " " + f[1]
		}
	}
	return out
}

// sameAsNumstat reports whether st is ready with exactly git's files and
// line counts.
func sameAsNumstat(st protocol.ChangesetState, repo string, want map[string]string) bool {
	if !ready(st) || len(st.Files) != len(want) {
		return false
	}
	for p, n := range want {
		f := fileByPath(st, repo, p)
		if f == nil || f.Edit.Diff == nil || f.Edit.Diff.Added == nil || f.Edit.Diff.Removed == nil {
			return false
		}
		if fmt.Sprintf("%d %d", *f.Edit.Diff.Added, *f.Edit.Diff.Removed) != n {
			return false
		}
	}
	return true
}

// TestBurstCatchesUpSlowReaders changes 10,000 files at once, as a
// checkout does, and puts them back, under three subscribers of which one
// takes its frames in slowly and the send queue is small: the slow one is
// caught up with a snapshot rather than disconnected, and every one of
// them ends with git's view.
func TestBurstCatchesUpSlowReaders(t *testing.T) {
	t.Parallel()
	n := 10000
	if raceEnabled {
		// The race detector makes every reduction of the mirrors and the
		// daemon's refreshes several times slower; a quarter of the burst
		// still overflows a send queue of 64 many times over.
		n = 2500
	}
	repo := t.TempDir()
	if real, err := filepath.EvalSymlinks(repo); err == nil {
		repo = real
	}
	git(t, repo, "init", "-q", "-b", "main")
	for i := range n {
		writeFile(t, repo, fmt.Sprintf("d%02d/f%05d.txt", i%50, i), "one\ntwo\n")
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	d := startDaemon(t, "--send-queue", "64", repo)
	c1 := d.client(t, "fast-1")
	uri := expand(t, catalogue(t, c1, onlySession(t, c1).Resource)["uncommitted"].URITemplate, nil)
	var mirrors []*changesetMirror
	var clients []*fake.Client
	for i, id := range []string{"fast-1", "fast-2", "slow"} {
		c := c1
		if i > 0 {
			c = d.client(t, id)
		}
		if id == "slow" {
			c.SetReadDelay(time.Millisecond)
		}
		clients = append(clients, c)
		m := mirrorChangeset(t, c, uri)
		m.Wait("clean", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 0 })
		mirrors = append(mirrors, m)
	}

	// converge polls each mirror's state: reducing thousands of
	// envelopes on every frame, as Wait does, would cost more than the
	// daemon's whole burst.
	converge := func(what string) {
		t.Helper()
		want := trackedNumstat(t, repo)
		deadline := time.Now().Add(3 * time.Minute)
		for i, m := range mirrors {
			for !sameAsNumstat(m.State(), repo, want) {
				if closed, code, reason := clients[i].Closed(); closed {
					t.Fatalf("%s: subscriber %d was disconnected: %d %s", what, i, code, reason)
				}
				if time.Now().After(deadline) {
					st := m.State()
					t.Fatalf("%s: subscriber %d has %d files (%s), git %d", what, i, len(st.Files), st.Status, len(want))
				}
				time.Sleep(50 * time.Millisecond) // polling for a state, not timing anything
			}
		}
	}
	for i := range n {
		writeFile(t, repo, fmt.Sprintf("d%02d/f%05d.txt", i%50, i), "one\n2\nthree\n")
	}
	start := time.Now()
	converge("after changing every file")
	t.Logf("converged after the change in %v", time.Since(start))
	start = time.Now()
	git(t, repo, "checkout", "-q", "--", ".")
	converge("after checking them out again")
	t.Logf("converged after the checkout in %v", time.Since(start))
	if d.stderr.contains("send queue overflow") {
		t.Errorf("a subscriber was disconnected as too slow:\n%s", d.stderr)
	}
	t.Logf("catch-ups: %d", strings.Count(d.stderr.String(), "backlog on a channel is replaced"))
}

// TestReadsAndAnnotationsStayInTheWorkingTree: resourceRead serves the
// working tree and stored objects but nothing under .git, nor a file
// reached through a directory link that leads outside; an annotation on a
// path through such a link, or with a NUL byte, is refused saying why.
func TestReadsAndAnnotationsStayInTheWorkingTree(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	outside := t.TempDir()
	writeFile(t, outside, "secret.txt", "secret\n")
	if err := os.Symlink(outside, filepath.Join(repo, "out")); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, repo)
	c := d.client(t, "reader")
	sum := onlySession(t, c)
	read := func(uri string) error {
		return c.Call(ctx(t), protocol.MethodResourceRead, map[string]any{"channel": protocol.RootURI, "uri": uri}, nil)
	}
	if err := read("file://" + repo + "/a.txt"); err != nil {
		t.Fatalf("working-tree file: %v", err)
	}
	for _, rel := range []string{".git/config", ".git/HEAD", "out/secret.txt"} {
		err := read("file://" + repo + "/" + rel)
		if rpcCode(err) != protocol.CodePermissionDenied {
			t.Errorf("%s: %v, want -32009 permission denied", rel, err)
		}
	}
	if err := read("file://" + repo + "/a.txt%00.png"); rpcCode(err) != protocol.CodeInvalidParams {
		t.Errorf("a path with NUL: %v, want -32602", err)
	}

	uri := protocol.AnnotationsURI(sum.Resource)
	subscribe(t, c, uri)
	for i, tc := range []struct{ resource, want string }{
		{"file://" + repo + "/out/secret.txt", "symbolic link"},
		{"file://" + repo + "/out/new.txt", "symbolic link"},
		{"file://" + repo + "/a.txt%00", "NUL"},
	} {
		seq := int64(i + 1)
		dispatchOn(t, c, uri, seq, map[string]any{"type": "annotations/set", "annotation": map[string]any{
			"id": fmt.Sprintf("n%d", i), "turnId": "baseline", "resource": tc.resource, "resolved": false, "entries": []any{map[string]any{"id": "e", "text": "x"}}}})
		if reason := rejectionOf(t, c, uri, seq); !strings.Contains(reason, tc.want) {
			t.Errorf("annotation on %s: rejected with %q, want it to name %q", tc.resource, reason, tc.want)
		}
	}
}

// openFDs counts the daemon's open file descriptors.
func (d *daemon) openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(ents)
}

// TestIdleHTTPConnectionsAreBounded opens 3,000 keep-alive connections
// that each ask /healthz once and then idle, as a flood needing no token
// can: the daemon keeps only a bounded number of them open, and a client
// with the token is still served.
func TestIdleHTTPConnectionsAreBounded(t *testing.T) {
	t.Parallel()
	const flood = 3000
	d := startDaemon(t, t.TempDir())
	before := d.openFDs(t)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range flood {
		c, err := net.Dial("tcp", d.Addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", d.Addr); err != nil {
			continue // closed already: that is the bound at work
		}
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 512)
		_, _ = c.Read(buf) // the answer, or EOF once the daemon closed it
	}
	if n := d.openFDs(t) - before; n > 200 {
		t.Errorf("the daemon holds %d more descriptors after %d idle HTTP connections; want them bounded", n, flood)
	}
	c := d.client(t, "legitimate")
	if err := c.Call(ctx(t), protocol.MethodPing, map[string]any{"channel": protocol.RootURI}, nil); err != nil {
		t.Fatalf("a client with the token is not served: %v", err)
	}
	if resp := httpGet(t, "http://"+d.Addr+"/healthz", nil); resp.StatusCode != 200 {
		t.Errorf("/healthz: %s", resp.Status)
	}
}
