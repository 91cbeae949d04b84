package scm

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// pastRacy waits until every file written so far is older than the stat
// cache's racy window, so that hashing them fills the cache (a file
// written within it is hashed again by every scan, by design).
func pastRacy(t *testing.T, dir string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		for {
			fi, err := os.Stat(filepath.Join(dir, rel))
			must(t, err)
			st := statOf(fi)
			if time.Now().UnixNano()-max(st.mtime, st.ctime) > 2*racySlack.Nanoseconds() {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// stateRepo is baseRepo with two files modified and hashed by a status,
// and the state saved; it returns the directory and the state's path.
func stateRepo(t *testing.T) (dir, state string) {
	t.Helper()
	dir = baseRepo(t)
	writeFile(t, dir, "a.txt", "alpha, modified\n")
	writeFile(t, dir, "dir/c.txt", "charlie, modified\n")
	pastRacy(t, dir, "a.txt", "dir/c.txt")
	r := openRepo(t, dir)
	checkAgainstGit(t, dir, status(t, r), "")
	if r.hashes != 2 {
		t.Fatalf("first status hashed %d files, want 2", r.hashes)
	}
	state = filepath.Join(t.TempDir(), "wt.state")
	must(t, r.SaveState(state))
	return dir, state
}

// TestStateSkipsUnchangedFiles: after a restart on the unchanged tree,
// the files hashed before are not read again.
func TestStateSkipsUnchangedFiles(t *testing.T) {
	dir, state := stateRepo(t)
	r := openRepo(t, dir)
	n, err := r.LoadState(state)
	must(t, err)
	if n != 2 {
		t.Errorf("trusted %d entries, want 2", n)
	}
	checkAgainstGit(t, dir, status(t, r), "")
	if r.hashes != 0 {
		t.Errorf("status after loading the state hashed %d files, want 0", r.hashes)
	}
}

// TestStateEditWhileStopped: a file edited while the daemon was stopped
// (same size, so only its stat data tells) is hashed again.
func TestStateEditWhileStopped(t *testing.T) {
	dir, state := stateRepo(t)
	writeFile(t, dir, "a.txt", "ALPHA, MODIFIED\n")
	pastRacy(t, dir, "a.txt")
	r := openRepo(t, dir)
	_, err := r.LoadState(state)
	must(t, err)
	st := status(t, r)
	checkAgainstGit(t, dir, st, "")
	if r.hashes != 1 {
		t.Errorf("hashed %d files, want 1 (the edited one)", r.hashes)
	}
}

// TestStateRacyEntryRehashed: an entry whose file was last written in the
// state file's own tick is not trusted (it may have changed after it was
// hashed): the state file's mtime is put back onto that file's.
func TestStateRacyEntryRehashed(t *testing.T) {
	dir, state := stateRepo(t)
	fi, err := os.Stat(filepath.Join(dir, "a.txt"))
	must(t, err)
	st := statOf(fi)
	tick := time.Unix(0, max(st.mtime, st.ctime))
	must(t, os.Chtimes(state, tick, tick))
	r := openRepo(t, dir)
	n, err := r.LoadState(state)
	must(t, err)
	if n >= 2 {
		t.Errorf("trusted %d entries, want the racy one dropped", n)
	}
	checkAgainstGit(t, dir, status(t, r), "")
	if r.hashes < 1 {
		t.Errorf("the racy entry's file was not hashed again")
	}
}

// TestStateNotTrustedElsewhere: a state written before a commit, a
// staging, an edit of the ignore or attribute inputs, for another
// repository, or damaged, is not used at all.
func TestStateNotTrustedElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir, state string) string // returns the state to load
		stale  bool
	}{
		{"commit", func(t *testing.T, dir, state string) string {
			gitRun(t, dir, "commit", "-q", "--allow-empty", "-m", "more")
			return state
		}, true},
		{"checkout", func(t *testing.T, dir, state string) string {
			gitRun(t, dir, "checkout", "-q", "-b", "other")
			writeFile(t, dir, "new.txt", "n\n")
			gitRun(t, dir, "add", "new.txt")
			gitRun(t, dir, "commit", "-q", "-m", "other")
			gitRun(t, dir, "checkout", "-q", "main")
			gitRun(t, dir, "checkout", "-q", "other")
			return state
		}, true},
		{"staging", func(t *testing.T, dir, state string) string {
			gitRun(t, dir, "add", "a.txt")
			return state
		}, true},
		{"info/exclude", func(t *testing.T, dir, state string) string {
			writeFile(t, dir, ".git/info/exclude", "*.tmp\n")
			return state
		}, true},
		{"core.excludesFile", func(t *testing.T, dir, state string) string {
			gitRun(t, dir, "config", "core.excludesFile", filepath.Join(t.TempDir(), "x"))
			return state
		}, true},
		{"info/attributes", func(t *testing.T, dir, state string) string {
			writeFile(t, dir, ".git/info/attributes", "*.txt text eol=crlf\n")
			return state
		}, true},
		{"another repository", func(t *testing.T, dir, state string) string {
			other, otherState := stateRepo(t)
			_ = other
			return otherState
		}, false},
		{"a flipped byte", func(t *testing.T, dir, state string) string {
			b, err := os.ReadFile(state)
			must(t, err)
			b[len(b)/2] ^= 0x40
			must(t, os.WriteFile(state, b, 0o600))
			return state
		}, false},
		{"truncated", func(t *testing.T, dir, state string) string {
			b, err := os.ReadFile(state)
			must(t, err)
			must(t, os.WriteFile(state, b[:len(b)-7], 0o600))
			return state
		}, false},
		{"not a state", func(t *testing.T, dir, state string) string {
			must(t, os.WriteFile(state, []byte("{}"), 0o600))
			return state
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, state := stateRepo(t)
			load := tc.change(t, dir, state)
			r := openRepo(t, dir)
			n, err := r.LoadState(load)
			if err == nil || n != 0 {
				t.Fatalf("loaded %d entries, err %v; want none and an error", n, err)
			}
			if tc.stale != errors.Is(err, ErrStateStale) {
				t.Errorf("error %v: stale %v, want %v", err, errors.Is(err, ErrStateStale), tc.stale)
			}
			if len(r.cache) != 0 {
				t.Errorf("%d cache entries after a refused state", len(r.cache))
			}
			checkAgainstGit(t, dir, status(t, r), "")
		})
	}
}

// TestStateKilledWhileWriting: a process killed with SIGKILL while it
// writes the state over and over leaves a state that loads whole (the
// old or the new one), and no temporary file once loaded.
func TestStateKilledWhileWriting(t *testing.T) {
	dir, state := stateRepo(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStateWriterProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SCM_STATE_WRITER_DIR="+dir, "SCM_STATE_WRITER_FILE="+state,
		"SCM_STATE_WRITER_HOME="+os.Getenv("HOME"), "SCM_STATE_WRITER_XDG="+os.Getenv("XDG_CONFIG_HOME"))
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	sc := bufio.NewScanner(out)
	for saved := 0; saved < 3; {
		if !sc.Scan() {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the writer stopped: %v", sc.Err())
		}
		if sc.Text() == "saved" {
			saved++
		}
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()

	r := openRepo(t, dir)
	n, err := r.LoadState(state)
	must(t, err)
	if n < 2 {
		t.Errorf("trusted %d entries, want the writer's", n)
	}
	checkAgainstGit(t, dir, status(t, r), "")
	if temps, _ := filepath.Glob(state + ".tmp-*"); len(temps) != 0 {
		t.Errorf("temporary files left: %v", temps)
	}
}

// TestStateWriterProcess is TestStateKilledWhileWriting's writer, run in
// a process of its own: it saves a large state again and again.
func TestStateWriterProcess(t *testing.T) {
	dir, state := os.Getenv("SCM_STATE_WRITER_DIR"), os.Getenv("SCM_STATE_WRITER_FILE")
	if dir == "" {
		t.Skip("the writer of TestStateKilledWhileWriting")
	}
	// The same user configuration as the test that started it (TestMain
	// gives each process a home of its own).
	t.Setenv("HOME", os.Getenv("SCM_STATE_WRITER_HOME"))
	t.Setenv("XDG_CONFIG_HOME", os.Getenv("SCM_STATE_WRITER_XDG"))
	r := openRepo(t, dir)
	_, err := r.LoadState(state)
	must(t, err)
	// Many entries (for paths that do not exist) make each write long
	// enough for the kill to land inside one.
	for i := range 300000 {
		r.cache[fmt.Sprintf("gone/%07d", i)] = cacheEntry{st: fileStat{mtime: 1, size: int64(i), mode: fs.FileMode(0o644)}, oid: plumbing.ComputeHash(plumbing.BlobObject, []byte{byte(i)})}
	}
	for {
		must(t, r.SaveState(state))
		fmt.Println("saved")
	}
}

// TestStateKeepsExtraBytes: the caller's bytes come back with a state
// that is trusted, and not with one written before a commit; the state
// key names the state they were saved under and changes with HEAD.
func TestStateKeepsExtraBytes(t *testing.T) {
	dir, state := stateRepo(t)
	r := openRepo(t, dir)
	_, err := r.LoadState(state)
	must(t, err)
	key, err := r.StateKey()
	must(t, err)
	must(t, r.SaveStateWith(state, []byte("the view")))

	r2 := openRepo(t, dir)
	n, extra, err := r2.LoadStateWith(state)
	must(t, err)
	if n != 2 || string(extra) != "the view" {
		t.Errorf("loaded %d entries and %q, want 2 and %q", n, extra, "the view")
	}
	if k, err := r2.StateKey(); err != nil || k != key {
		t.Errorf("state key of the same repository: %q, %v; want %q", k, err, key)
	}

	gitRun(t, dir, "commit", "-q", "-am", "more")
	r3 := openRepo(t, dir)
	_, extra, err = r3.LoadStateWith(state)
	if !errors.Is(err, ErrStateStale) || extra != nil {
		t.Errorf("after a commit: %q, %v; want nothing and ErrStateStale", extra, err)
	}
	if k, err := r3.StateKey(); err != nil || k == key {
		t.Errorf("the state key did not change with a commit: %q, %v", k, err)
	}
}
