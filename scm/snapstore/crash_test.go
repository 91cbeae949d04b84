package snapstore

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const crashHelperEnv = "SNAPSTORE_CRASH_HELPER_DIR"

// crashHelper runs in a child process: it writes snapshots to the store
// named by the environment until it is killed, printing each tree id once
// Overlay has returned.
func crashHelper() {
	s, err := Open(os.Getenv(crashHelperEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))
	base := ""
	for i := 0; ; i++ {
		var changes []Change
		for j := range 4 {
			b := make([]byte, 16<<10+r.IntN(64<<10))
			for k := range b {
				b[k] = byte(r.Uint32())
			}
			changes = append(changes, Change{Path: fmt.Sprintf("d%d/e%d/f%d", r.IntN(8), j, r.IntN(4)), Content: b})
		}
		tree, err := s.Overlay(context.Background(), base, changes)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		base = tree
		fmt.Printf("ok %s\n", tree)
	}
}

// TestCrashLeavesNoPartialObjects kills a writer with SIGKILL in the middle
// of its work and checks that every object under a final name is complete
// and that every tree the writer reported is whole.
func TestCrashLeavesNoPartialObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir() + "/snapshots.git"
	var reported []string
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		// Let it finish a varying number of snapshots, then kill it while
		// it is writing the next.
		for n := 0; n < 3+round*2 && sc.Scan(); n++ {
			reported = append(reported, strings.TrimPrefix(sc.Text(), "ok "))
		}
		cmd.Process.Kill()
		for sc.Scan() {
			reported = append(reported, strings.TrimPrefix(sc.Text(), "ok "))
		}
		cmd.Wait()
		if stderr.Len() > 0 {
			t.Fatalf("helper: %s", stderr.String())
		}
	}
	if len(reported) < 9 {
		t.Fatalf("helper reported only %d trees", len(reported))
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range looseObjects(t, dir) {
		typ, b, err := readLoose(s.own.loosePath(mustHash(id)))
		if err != nil {
			t.Errorf("object %s: %v", id, err)
			continue
		}
		if got := hashObject(typ, b).String(); got != id {
			t.Errorf("object %s hashes to %s", id, got)
		}
	}
	for _, tree := range reported {
		ds, err := s.DiffTrees(context.Background(), "", tree)
		if err != nil {
			t.Fatalf("reported tree %s: %v", tree, err)
		}
		for _, d := range ds {
			if _, err := s.ReadBlob(d.New.OID); err != nil {
				t.Errorf("reported tree %s: %s: %v", tree, d.Path, err)
			}
		}
	}
	t.Logf("%d trees, %d objects, %d leftover temporary files", len(reported), len(looseObjects(t, dir)), len(tmpFiles(t, dir)))
}
