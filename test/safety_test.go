package test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/changesetd/changesetd/protocol"
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
