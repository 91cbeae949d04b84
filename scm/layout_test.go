package scm

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layoutRepo makes a repository with a few commits on main and a feature
// branch, plus uncommitted edits, an untracked file and a staged file.
func layoutRepo(t *testing.T) string {
	t.Helper()
	dir := newGitRepo(t)
	writeFile(t, dir, "a.txt", "one\ntwo\n")
	writeFile(t, dir, "sub/b.txt", "b\n")
	writeFile(t, dir, "sub/deep/c.txt", "c\n")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "one")
	gitRun(t, dir, "checkout", "-q", "-b", "feature")
	writeFile(t, dir, "sub/b.txt", "b\nfeature\n")
	gitRun(t, dir, "commit", "-q", "-am", "two")
	return dir
}

// dirty edits the working tree of a layoutRepo clone.
func dirty(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, dir, "a.txt", "one\n2\n")
	writeFile(t, dir, "new.txt", "new\n")
	writeFile(t, dir, "sub/deep/staged.txt", "s\n")
	gitRun(t, dir, "add", "sub/deep/staged.txt")
	if err := os.Remove(filepath.Join(dir, "sub/deep/c.txt")); err != nil {
		t.Fatal(err)
	}
}

func TestLayouts(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, src string) string // returns the worktree
	}{
		{"shared clone", func(t *testing.T, src string) string {
			dst := filepath.Join(t.TempDir(), "c")
			gitRun(t, src, "clone", "-q", "--shared", src, dst)
			return dst
		}},
		{"reference clone", func(t *testing.T, src string) string {
			dst := filepath.Join(t.TempDir(), "c")
			gitRun(t, src, "clone", "-q", "--reference", src, "file://"+src, dst)
			return dst
		}},
		{"split index", func(t *testing.T, src string) string {
			gitRun(t, src, "update-index", "--split-index")
			return src
		}},
		{"core.splitIndex", func(t *testing.T, src string) string {
			gitRun(t, src, "config", "core.splitIndex", "true")
			gitRun(t, src, "config", "splitIndex.maxPercentChange", "100")
			gitRun(t, src, "update-index", "--refresh")
			return src
		}},
		{"manyFiles", func(t *testing.T, src string) string {
			gitRun(t, src, "config", "feature.manyFiles", "true")
			gitRun(t, src, "update-index", "--index-version", "4")
			gitRun(t, src, "update-index", "--untracked-cache")
			gitRun(t, src, "status", "--porcelain")
			return src
		}},
		{"gc aggressive", func(t *testing.T, src string) string {
			gitRun(t, src, "gc", "-q", "--aggressive", "--prune=now")
			return src
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.make(t, layoutRepo(t))
			dirty(t, dir)
			if tc.name == "core.splitIndex" || tc.name == "split index" {
				// Another index write leaves some entries only in the
				// shared index and the rest in the split one.
				writeFile(t, dir, "sub/more.txt", "m\n")
				gitRun(t, dir, "add", "sub/more.txt")
				// A replaced and a deleted shared entry.
				writeFile(t, dir, "sub/deep/staged.txt", "s2\n")
				gitRun(t, dir, "add", "sub/deep/staged.txt")
				gitRun(t, dir, "update-index", "--assume-unchanged", "sub/more.txt")
				gitRun(t, dir, "rm", "-q", "sub/b.txt")
				if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
					m, _ := filepath.Glob(filepath.Join(dir, ".git", "sharedindex.*"))
					if len(m) == 0 {
						t.Fatalf("no shared index written")
					}
				}
			}
			checkIndexAgainstGit(t, dir)
			r := openRepo(t, dir)
			st := status(t, r)
			checkAgainstGit(t, dir, st, "")
			base, err := r.DefaultBaseBranch()
			if err != nil {
				t.Fatal(err)
			}
			ba, err := r.StatusAgainst(context.Background(), base)
			if err != nil {
				t.Fatalf("status against %s: %v", base, err)
			}
			checkAgainstGit(t, dir, ba, strings.TrimSpace(gitRun(t, dir, "merge-base", base, "HEAD")))
			for _, c := range st.Changes {
				if c.Head != nil {
					if _, err := r.ReadBlob(c.Head.OID); err != nil {
						t.Errorf("read %s: %v", c.Path, err)
					}
				}
			}
			// Staging writes an index git reads back with the same entries
			// plus the staged file.
			if err := r.StagePath(context.Background(), "new.txt"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(gitRun(t, dir, "ls-files", "--stage", "new.txt"), "new.txt") {
				t.Errorf("new.txt not staged for git")
			}
			checkIndexAgainstGit(t, dir)
			checkAgainstGit(t, dir, status(t, r), "")
		})
	}
}

// checkIndexAgainstGit compares our decoding of the index with git
// ls-files --stage, and the assume-valid bits with ls-files -v.
func checkIndexAgainstGit(t *testing.T, dir string) {
	t.Helper()
	gd := strings.TrimSpace(gitRun(t, dir, "rev-parse", "--absolute-git-dir"))
	x, err := readIndexFile(filepath.Join(gd, "index"), gd)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range x.entries {
		// ls-files -v: M unmerged, S skip-worktree, H otherwise;
		// lower case when assume-valid.
		av := "H"
		switch {
		case e.Stage != stageMerged:
			av = "M"
		case e.SkipWorktree:
			av = "S"
		}
		if x.assumeValid[e] {
			av = strings.ToLower(av)
		}
		got = append(got, fmt.Sprintf("%s %o %s %d\t%s", av, e.Mode, e.Hash, e.Stage, e.Name))
	}
	stage := strings.Split(strings.TrimSpace(gitRun(t, dir, "ls-files", "--stage")), "\n")
	tags := strings.Split(strings.TrimSpace(gitRun(t, dir, "ls-files", "-v")), "\n")
	var want []string
	for i, l := range stage {
		want = append(want, tags[i][:1]+" "+l)
	}
	if d := diffLines(want, got); d != "" {
		t.Errorf("index entries (-git +ours):\n%s", d)
	}
}

// TestSplitIndexEdits checks the merge of a split index into its shared
// index with entries replaced, deleted and added, against git.
func TestSplitIndexEdits(t *testing.T) {
	dir := newGitRepo(t)
	for i := range 40 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%02d.txt", i%3, i), fmt.Sprintf("%d\n", i))
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "files")
	gitRun(t, dir, "config", "splitIndex.maxPercentChange", "90")
	gitRun(t, dir, "update-index", "--split-index")
	gitRun(t, dir, "rm", "-q", "d1/f10.txt")
	gitRun(t, dir, "rm", "-q", "d0/f33.txt")
	writeFile(t, dir, "d2/f20.txt", "changed\n")
	writeFile(t, dir, "d2/new.txt", "new\n")
	writeFile(t, dir, "a-first.txt", "first\n")
	gitRun(t, dir, "add", "d2/f20.txt", "d2/new.txt", "a-first.txt")
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	_, link, err := decodeIndexOnly(b)
	if err != nil {
		t.Fatal(err)
	}
	if link == nil || len(link.delete) == 0 || len(link.replace) == 0 {
		t.Fatalf("git did not write deletions and replacements: %+v", link)
	}
	checkIndexAgainstGit(t, dir)
	r := openRepo(t, dir)
	checkAgainstGit(t, dir, status(t, r), "")

	// Staging rewrites the index whole; git reads it and the entries are
	// the split index's plus the staged file.
	want := gitRun(t, dir, "ls-files", "--stage")
	writeFile(t, dir, "d0/later.txt", "later\n")
	if err := r.StagePath(context.Background(), "d0/later.txt"); err != nil {
		t.Fatal(err)
	}
	got := gitRun(t, dir, "ls-files", "--stage")
	if wantPlus := strings.TrimSpace(gitRun(t, dir, "ls-files", "--stage", "d0/later.txt")); !strings.Contains(got, wantPlus) || strings.Replace(got, wantPlus+"\n", "", 1) != want {
		t.Errorf("after staging, ls-files --stage:\n%s\nbefore:\n%s", got, want)
	}
	checkAgainstGit(t, dir, status(t, r), "")
}

// TestEWAHBits decodes a hand-made bitmap in git's serialisation with a
// run of ones, a run of zeros and literal words.
func TestEWAHBits(t *testing.T) {
	rlw := func(run bool, runLen, lits uint64) uint64 {
		w := runLen<<1 | lits<<33
		if run {
			w |= 1
		}
		return w
	}
	words := []uint64{rlw(true, 2, 1), 0b101, rlw(false, 1, 1), 1 << 63}
	b := binary.BigEndian.AppendUint32(nil, 320)
	b = binary.BigEndian.AppendUint32(b, uint32(len(words)))
	for _, w := range words {
		b = binary.BigEndian.AppendUint64(b, w)
	}
	b = binary.BigEndian.AppendUint32(b, 2) // position of the last RLW
	b = append(b, 0xff)                     // what follows is not read
	got, n, err := ewahBits(b)
	if err != nil || n != len(b)-1 {
		t.Fatalf("ewahBits: n %d of %d, %v", n, len(b)-1, err)
	}
	var want []int
	for i := range 128 {
		want = append(want, i)
	}
	want = append(want, 128, 130, 319)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bits %v, want %v", got, want)
	}
	if _, _, err := ewahBits(b[:20]); err == nil {
		t.Errorf("truncated bitmap decoded")
	}
}
