package scm

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPackOrderIsGitsOffsetOrder: PackOrder puts the blobs of a pack in
// the order of their offsets as git verify-pack lists them, whatever
// order they are asked in; a loose object and an id that is not an
// object come last, in the order given.
func TestPackOrderIsGitsOffsetOrder(t *testing.T) {
	dir := newGitRepo(t)
	var body strings.Builder
	for i := range 200 {
		fmt.Fprintf(&body, "line %d of a file that the repack deltas against its neighbours\n", i)
	}
	for i := range 40 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%02d.txt", i%4, i), body.String()+strconv.Itoa(i)+"\n")
	}
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "commit", "-q", "-m", "files")
	gitRun(t, dir, "repack", "-q", "-adf")
	loose := strings.TrimSpace(gitRunIn(t, dir, "not in the pack\n", "hash-object", "-w", "--stdin"))

	// git's own offsets of the packed objects.
	idx, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
	if err != nil || len(idx) != 1 {
		t.Fatalf("packs: %v %v", idx, err)
	}
	offset := map[string]int64{}
	for line := range strings.SplitSeq(gitRun(t, dir, "verify-pack", "-v", idx[0]), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && len(f[0]) == 40 {
			off, err := strconv.ParseInt(f[4], 10, 64)
			if err != nil {
				t.Fatalf("verify-pack line %q: %v", line, err)
			}
			offset[f[0]] = off
		}
	}
	var oids []string
	for line := range strings.SplitSeq(strings.TrimSpace(gitRun(t, dir, "ls-tree", "-r", "HEAD")), "\n") {
		oids = append(oids, strings.Fields(line)[2])
	}
	rng := rand.New(rand.NewPCG(5, 6))
	rng.Shuffle(len(oids), func(i, j int) { oids[i], oids[j] = oids[j], oids[i] })
	oids = append(oids[:10], append([]string{loose, "not-an-id"}, oids[10:]...)...)

	r := openRepo(t, dir)
	order := r.PackOrder(oids)
	if len(order) != len(oids) {
		t.Fatalf("%d indexes for %d ids", len(order), len(oids))
	}
	seen := map[int]bool{}
	for _, i := range order {
		seen[i] = true
	}
	if len(seen) != len(oids) {
		t.Fatalf("order %v is not a permutation of %d ids", order, len(oids))
	}
	n := len(order)
	if oids[order[n-2]] != loose || oids[order[n-1]] != "not-an-id" {
		t.Errorf("last two: %s, %s; want the loose object, then the bad id", oids[order[n-2]], oids[order[n-1]])
	}
	for k := 1; k < n-2; k++ {
		a, b := oids[order[k-1]], oids[order[k]]
		oa, okA := offset[a]
		ob, okB := offset[b]
		if !okA || !okB {
			t.Fatalf("%s or %s is not in git's list of the pack", a, b)
		}
		if oa >= ob {
			t.Errorf("%s at %d comes before %s at %d", a, oa, b, ob)
		}
	}
}
