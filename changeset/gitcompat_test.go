package changeset

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// These tests build two trees in a scratch repository with the git binary
// and compare Compare's output with "git diff" between them: the numstat
// always, the patch text byte for byte unless a case says why git's
// equally valid choice differs, and in every case that "git apply
// --cached" of our patch turns the old tree into the new one.

type fileSpec struct {
	path    string
	content string
	mode    uint32 // 0 = 100644; gitlink: content is the commit hex
}

type gitCase struct {
	name     string
	old, new []fileSpec
	renames  bool     // git -M and PairRenames
	opt      Options  // our options
	gitArgs  []string // extra "git diff" arguments, e.g. -U0
	quote    bool     // git's default core.quotePath=true and Options.QuoteNonASCII
	inexact  string   // why the patch text may differ from git's; "" = byte-exact
	wantNum  string   // expected "added removed" (git numstat, summed), "" = git's
	wantAIR  string   // expected AIR counts "added removed", "-" = omitted, "" = don't check
	contains []string // substrings our patch must contain
}

type gitRepo struct {
	t   testing.TB
	dir string
}

func newGitRepo(t testing.TB) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not found")
	}
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.run(nil, "init", "-q")
	r.run(nil, "config", "user.name", "changeset test")
	r.run(nil, "config", "user.email", "test@example.com")
	r.run(nil, "config", "core.autocrlf", "false")
	return r
}

func (r *gitRepo) cmd(stdin []byte, args ...string) *exec.Cmd {
	c := exec.Command("git", args...)
	c.Dir = r.dir
	c.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+r.dir,
		"LC_ALL=C", "GIT_INDEX_FILE="+filepath.Join(r.dir, ".git", "scratch-index"))
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	return c
}

func (r *gitRepo) run(stdin []byte, args ...string) string {
	r.t.Helper()
	c := r.cmd(stdin, args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// tree writes files as a tree object and returns its id.
func (r *gitRepo) tree(files []fileSpec) string {
	r.t.Helper()
	r.run(nil, "read-tree", "--empty")
	var info bytes.Buffer
	for _, f := range files {
		mode := f.mode
		if mode == 0 {
			mode = ModeRegular
		}
		oid := f.content
		if mode != ModeGitlink {
			oid = strings.TrimSpace(r.run([]byte(f.content), "hash-object", "-w", "--stdin"))
			if want := BlobOID([]byte(f.content)); oid != want {
				r.t.Fatalf("BlobOID(%q) = %s, git hash-object = %s", f.path, want, oid)
			}
		}
		fmt.Fprintf(&info, "%o %s\t%s\x00", mode, oid, f.path)
	}
	if info.Len() > 0 {
		r.run(info.Bytes(), "update-index", "-z", "--index-info")
	}
	return strings.TrimSpace(r.run(nil, "write-tree"))
}

func (r *gitRepo) diff(quote bool, extra []string, args ...string) string {
	base := []string{"-c", "core.quotepath=false", "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false"}
	if quote {
		base = []string{"-c", "diff.noprefix=false"}
	}
	base = append(base, "diff", "--no-color", "--no-ext-diff", "--full-index")
	if !slices.Contains(extra, "--numstat") {
		base = append(base, "--binary") // --binary would add a patch to --numstat
	}
	base = append(base, extra...)
	return r.run(nil, append(base, args...)...)
}

// numstat sums git's numstat; binary rows give "- -".
func numstat(out string) string {
	a, d := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, "\t", 3)
		if f[0] == "-" {
			return "- -"
		}
		x, _ := strconv.Atoi(f[0])
		y, _ := strconv.Atoi(f[1])
		a += x
		d += y
	}
	return fmt.Sprintf("%d %d", a, d)
}

func sideOf(f fileSpec) *Side {
	return &Side{Path: f.path, Content: []byte(f.content), Mode: f.mode}
}

// ours computes the results for the change from old to new, sorted by path
// as git sorts them for these cases.
func ours(old, new []fileSpec, renames bool, opt Options) []Result {
	om := map[string]fileSpec{}
	nm := map[string]fileSpec{}
	for _, f := range old {
		om[f.path] = f
	}
	for _, f := range new {
		nm[f.path] = f
	}
	var res []Result
	var del, add []*Side
	for _, f := range old {
		if _, ok := nm[f.path]; !ok {
			del = append(del, sideOf(f))
		}
	}
	for _, f := range new {
		if _, ok := om[f.path]; !ok {
			add = append(add, sideOf(f))
		}
	}
	if renames {
		var pairs [][2]*Side
		pairs, del, add = PairRenames(del, add)
		for _, p := range pairs {
			res = append(res, Compare(p[0], p[1], opt))
		}
	}
	for _, s := range del {
		res = append(res, Compare(s, nil, opt))
	}
	for _, s := range add {
		res = append(res, Compare(nil, s, opt))
	}
	for _, f := range old {
		if g, ok := nm[f.path]; ok {
			res = append(res, Compare(sideOf(f), sideOf(g), opt))
		}
	}
	key := func(r Result) string {
		if r.New != nil {
			return r.New.Path
		}
		return r.Old.Path
	}
	sort.SliceStable(res, func(i, j int) bool { return key(res[i]) < key(res[j]) })
	return res
}

func runGitCase(t *testing.T, repo *gitRepo, c gitCase) {
	t.Helper()
	t1, t2 := repo.tree(c.old), repo.tree(c.new)
	renameArg := "--no-renames"
	if c.renames {
		renameArg = "-M"
	}
	extra := append([]string{renameArg}, c.gitArgs...)
	want := repo.diff(c.quote, extra, t1, t2)
	gotNum := numstat(repo.diff(c.quote, []string{renameArg, "--numstat"}, t1, t2))

	opt := c.opt
	opt.QuoteNonASCII = c.quote
	res := ours(c.old, c.new, c.renames, opt)
	var patch strings.Builder
	a, d, binary := 0, 0, false
	for _, r := range res {
		patch.WriteString(r.Patch)
		a += r.Added
		d += r.Removed
		binary = binary || r.Binary
	}
	ourNum := fmt.Sprintf("%d %d", a, d)
	if binary {
		ourNum = "- -"
	}
	if c.wantNum != "" && gotNum != c.wantNum {
		t.Errorf("git numstat = %s, case expects %s", gotNum, c.wantNum)
	}
	if ourNum != gotNum {
		t.Errorf("numstat: ours %s, git %s", ourNum, gotNum)
	}
	if c.wantAIR != "" {
		got := "-"
		if len(res) == 1 {
			if x, y, ok := res[0].Counts(); ok {
				got = fmt.Sprintf("%d %d", x, y)
			}
		}
		if got != c.wantAIR {
			t.Errorf("AIR counts = %s, want %s", got, c.wantAIR)
		}
	}
	for _, s := range c.contains {
		if !strings.Contains(patch.String(), s) {
			t.Errorf("patch lacks %q", s)
		}
	}
	if binary && c.inexact == "" && strings.Contains(want, "GIT binary patch") {
		// Same header; git's zlib level and its choice of a delta over a
		// literal give other bytes for the same images.
		c.inexact = "binary images are encoded by another zlib"
		if a, b := strings.Index(want, "GIT binary patch"), strings.Index(patch.String(), "GIT binary patch"); a != b || want[:a] != patch.String()[:b] {
			t.Errorf("binary patch header differs from git\n--- ours\n%s\n--- git\n%s", patch.String(), want)
		}
	}
	if patch.String() != want {
		if c.inexact == "" {
			t.Errorf("patch differs from git\n--- ours\n%s\n--- git\n%s", patch.String(), want)
		} else {
			t.Logf("patch differs from git (%s)", c.inexact)
		}
	}
	checkApply(t, repo, t1, t2, patch.String(), opt.context() == 0)
}

// checkApply applies patch to the index of tree t1 with git and checks
// that the result is tree t2.
func checkApply(t *testing.T, repo *gitRepo, t1, t2, patch string, zeroContext bool) {
	t.Helper()
	if patch == "" {
		if t1 != t2 {
			t.Errorf("empty patch for different trees")
		}
		return
	}
	repo.run(nil, "read-tree", t1)
	args := []string{"apply", "--cached", "--whitespace=nowarn"}
	if zeroContext {
		args = append(args, "--unidiff-zero")
	}
	c := repo.cmd([]byte(patch), append(args, "-")...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("git apply --cached: %v\n%s\npatch:\n%s", err, out, patch)
		return
	}
	if got := strings.TrimSpace(repo.run(nil, "write-tree")); got != t2 {
		t.Errorf("git apply of our patch gives tree %s, want %s", got, t2)
	}
}

// binBlob is n deterministic bytes of a binary file: a NUL, then a
// pseudo-random mix that zlib cannot shrink much.
func binBlob(seed, n int) string {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	b[0] = 0
	return string(b)
}

func one(path, content string) []fileSpec { return []fileSpec{{path: path, content: content}} }

func numbered(n int, f func(i int) string) string {
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		sb.WriteString(f(i))
	}
	return sb.String()
}

func plainLines(n int) string {
	return numbered(n, func(i int) string { return fmt.Sprintf("line %d\n", i) })
}

// editLines changes the given 1-based lines of plainLines(n).
func editLines(n int, at ...int) string {
	set := map[int]bool{}
	for _, i := range at {
		set[i] = true
	}
	return numbered(n, func(i int) string {
		if set[i] {
			return fmt.Sprintf("LINE %d changed\n", i)
		}
		return fmt.Sprintf("line %d\n", i)
	})
}

const goSrc = `package demo

import "fmt"

// Greeter greets.
type Greeter struct {
	name string
}

func (g Greeter) Hello() string {
	return "hello " + g.name
}

func (g Greeter) Bye() string {
	return "bye " + g.name
}

func main() {
	g := Greeter{name: "x"}
	fmt.Println(g.Hello())
	fmt.Println(g.Bye())
}
`

func gitCases() []gitCase {
	hex1 := "1111111111111111111111111111111111111111"
	hex2 := "2222222222222222222222222222222222222222"
	a7999 := strings.Repeat("a", 7999) + "\x00\n"
	a8001 := strings.Repeat("a", 8001) + "\x00\n"
	long := "func " + strings.Repeat("VeryLongName", 10) + "() {\n"
	return []gitCase{
		{name: "modify middle", old: one("f.txt", plainLines(20)), new: one("f.txt", editLines(20, 10)), wantNum: "1 1"},
		{name: "add at start", old: one("f.txt", plainLines(10)), new: one("f.txt", "first\n"+plainLines(10)), wantNum: "1 0"},
		{name: "add at end", old: one("f.txt", plainLines(10)), new: one("f.txt", plainLines(10)+"last\n"), wantNum: "1 0"},
		{name: "delete all lines", old: one("f.txt", plainLines(5)), new: one("f.txt", ""), wantNum: "0 5", wantAIR: "0 5"},
		{name: "fill empty file", old: one("f.txt", ""), new: one("f.txt", plainLines(2)), wantNum: "2 0"},
		{name: "E1 create", new: one("p", "new\n"), wantNum: "1 0", wantAIR: "1 0",
			contains: []string{"new file mode 100644\nindex 0000000000000000000000000000000000000000..3e757656cf36eca53338e520d134963a44f793f8\n--- /dev/null\n+++ b/p\n@@ -0,0 +1 @@\n"}},
		{name: "E2 delete", old: one("p", "gone\n"), wantNum: "0 1", wantAIR: "0 1",
			contains: []string{"deleted file mode 100644", "+++ /dev/null\n@@ -1 +0,0 @@\n"}},
		{name: "E3 create empty", new: one("p", ""), wantNum: "0 0", wantAIR: "0 0"},
		{name: "delete empty", old: one("p", ""), wantNum: "0 0", wantAIR: "0 0"},
		{name: "E4 mode only", old: []fileSpec{{path: "x.sh", content: "echo\n"}}, new: []fileSpec{{path: "x.sh", content: "echo\n", mode: ModeExecutable}}, wantNum: "0 0", wantAIR: "0 0"},
		{name: "mode and content", old: []fileSpec{{path: "x.sh", content: "echo\n"}}, new: []fileSpec{{path: "x.sh", content: "echo hi\n", mode: ModeExecutable}}, wantNum: "1 1"},
		{name: "E5 no newline both", old: one("f", "abc"), new: one("f", "abd"), wantNum: "1 1"},
		{name: "no newline old only", old: one("f", "a\nb\nc"), new: one("f", "a\nb\nc\n"), wantNum: "1 1", wantAIR: "1 1"},
		{name: "no newline new only", old: one("f", "a\nb\nc\n"), new: one("f", "a\nb\nc"), wantNum: "1 1"},
		{name: "E6", old: one("f", "a"), new: one("f", "a\nb\n"), wantNum: "2 1"},
		{name: "E7 marker after context", old: one("f", "x\ny\nz"), new: one("f", "X\ny\nz"), wantNum: "1 1"},
		{name: "create no newline", new: one("f", "one\ntwo"), wantNum: "2 0", wantAIR: "2 0"},
		{name: "E8 CRLF", old: one("f", "a\r\nb\r\n"), new: one("f", "a\r\nB\r\n"), wantNum: "1 1"},
		{name: "E9 CRLF to LF", old: one("f", "a\r\nb\r\n"), new: one("f", "a\nb\n"), wantNum: "2 2"},
		{name: "E10 lone CR", old: one("f", "first\rold\r"), new: one("f", "first\rnew\r"), wantNum: "1 1"},
		{name: "A10 create lone CR", new: one("f", "a\rb\r"), wantNum: "1 0", wantAIR: "2 0"},
		{name: "A9 delete mixed", old: one("f", "first\r\nsecond\rthird\n"), wantNum: "0 2", wantAIR: "0 3"},
		{name: "E11 binary", old: one("p", a7999), new: one("p", a7999+"x\n"), wantNum: "- -", wantAIR: "-"},
		{name: "E12 NUL after 8000", old: one("p", a8001), new: one("p", a8001+"x\n"), wantNum: "1 0"},
		{name: "binary create", new: one("b.bin", "\x00\x01\x02"), wantNum: "- -", wantAIR: "-"},
		{name: "binary delete", old: one("b.bin", "\x00\x01\x02"), wantNum: "- -"},
		{name: "binary modify", old: one("b.bin", binBlob(1, 3000)), new: one("b.bin", binBlob(2, 3100)), wantNum: "- -", contains: []string{"GIT binary patch\nliteral 3100\n"}},
		{name: "binary to text", old: one("b", "\x00\x01"), new: one("b", "text\n"), wantNum: "- -"},
		{name: "binary rename with edit", renames: true, old: one("r1.bin", binBlob(3, 4000)), new: one("r2.bin", binBlob(3, 4000)+"\x00tail"), wantNum: "- -", contains: []string{"GIT binary patch\ndelta "}},
		{name: "binary empty side", old: one("b.bin", ""), new: one("b.bin", "\x00"), wantNum: "- -", contains: []string{"literal 1\n", "literal 0\n"}},
		{name: "binary mode only", old: one("b.bin", "\x00\x01"), new: []fileSpec{{path: "b.bin", content: "\x00\x01", mode: ModeExecutable}}, wantNum: "- -"},
		{name: "E13 symlink retarget", old: []fileSpec{{path: "l", content: "target1", mode: ModeSymlink}}, new: []fileSpec{{path: "l", content: "target2", mode: ModeSymlink}}, wantNum: "1 1", wantAIR: "1 1"},
		{name: "symlink create", new: []fileSpec{{path: "l", content: "some/where", mode: ModeSymlink}}, wantNum: "1 0"},
		{name: "E14 file to symlink", old: one("l", "text\n"), new: []fileSpec{{path: "l", content: "target", mode: ModeSymlink}}, wantNum: "1 1", wantAIR: "1 1"},
		{name: "symlink to file", old: []fileSpec{{path: "l", content: "target", mode: ModeSymlink}}, new: one("l", "a\nb\n"), wantNum: "2 1"},
		{name: "E22 submodule bump", old: []fileSpec{{path: "sub", content: hex1, mode: ModeGitlink}}, new: []fileSpec{{path: "sub", content: hex2, mode: ModeGitlink}}, wantNum: "1 1", wantAIR: "1 1"},
		{name: "submodule add", new: []fileSpec{{path: "sub", content: hex2, mode: ModeGitlink}}, wantNum: "1 0"},
		{name: "E19 space", old: one("sp ace.txt", "a\n"), new: one("sp ace.txt", "b\n"), contains: []string{"+++ b/sp ace.txt\t\n"}},
		{name: "space create", new: one("sp ace.txt", "b\n")},
		{name: "E20 quote", old: one(`quo"te.txt`, "a\n"), new: one(`quo"te.txt`, "b\n"), contains: []string{`diff --git "a/quo\"te.txt" "b/quo\"te.txt"`}},
		{name: "backslash and tab", old: one("back\\sl\tash.txt", "a\n"), new: one("back\\sl\tash.txt", "b\n")},
		{name: "E21 unicode raw", old: one("ünï.txt", "a\n"), new: one("ünï.txt", "b\n"), contains: []string{"diff --git a/ünï.txt b/ünï.txt"}},
		{name: "E21 unicode quoted", quote: true, old: one("ünï.txt", "a\n"), new: one("ünï.txt", "b\n"), contains: []string{`"a/\303\274n\303\257.txt"`}},
		{name: "unicode space quote", quote: true, new: one("dir/ü \"x\".txt", "a\n")},
		{name: "nested dir", old: one("a/b/c.txt", "1\n2\n"), new: one("a/b/c.txt", "1\n3\n")},
		// Hunk merging at the 3-line context boundary: changes 7 lines
		// apart (6 unchanged between) share a hunk, 8 apart do not.
		{name: "gap 6 merges", old: one("f", plainLines(40)), new: one("f", editLines(40, 10, 17)), wantNum: "2 2"},
		{name: "gap 7 splits", old: one("f", plainLines(40)), new: one("f", editLines(40, 10, 18)), wantNum: "2 2"},
		{name: "many hunks", old: one("f", plainLines(400)), new: one("f", editLines(400, 1, 2, 9, 16, 24, 33, 100, 106, 107, 200, 207, 215, 398, 400))},
		{name: "E16 U0 insert top", gitArgs: []string{"-U0"}, opt: Options{Context: -1}, old: one("f", "b\nc\n"), new: one("f", "a\nb\nc\n")},
		{name: "E17 U0 insert after 2", gitArgs: []string{"-U0"}, opt: Options{Context: -1}, old: one("f", "a\nb\nc\n"), new: one("f", "a\nb\nX\nc\n")},
		{name: "E18 U0 delete 2", gitArgs: []string{"-U0"}, opt: Options{Context: -1}, old: one("f", "a\nb\nc\n"), new: one("f", "a\nc\n")},
		{name: "U1", gitArgs: []string{"-U1"}, opt: Options{Context: 1}, old: one("f", plainLines(30)), new: one("f", editLines(30, 5, 8, 12))},
		{name: "U5", gitArgs: []string{"-U5"}, opt: Options{Context: 5}, old: one("f", plainLines(60)), new: one("f", editLines(60, 5, 16, 28, 40))},
		{name: "funcname", old: one("main.go", goSrc), new: one("main.go", strings.Replace(goSrc, `"bye "`, `"goodbye "`, 1))},
		{name: "funcname kept across hunks", old: one("main.go", goSrc+plainLines(30)), new: one("main.go", strings.Replace(goSrc, `"bye "`, `"goodbye "`, 1)+editLines(30, 25))},
		{name: "funcname long line", old: one("f.go", long+plainLines(10)), new: one("f.go", long+editLines(10, 8))},
		{name: "insert function (indent heuristic)", old: one("main.go", goSrc),
			new: one("main.go", strings.Replace(goSrc, "func (g Greeter) Bye", "func (g Greeter) Hi() string {\n\treturn \"hi\"\n}\n\nfunc (g Greeter) Bye", 1))},
		{name: "delete function (indent heuristic)", old: one("main.go", goSrc),
			new: one("main.go", strings.Replace(goSrc, "func (g Greeter) Bye() string {\n\treturn \"bye \" + g.name\n}\n\n", "", 1))},
		{name: "duplicate line slides", old: one("f", "a\nb\nb\nb\nc\n"), new: one("f", "a\nb\nb\nb\nb\nc\n"), wantNum: "1 0"},
		{name: "blank line slides", old: one("f", "x\n\n\ny\n"), new: one("f", "x\n\n\n\ny\n")},
		{name: "rename pure", renames: true, old: one("ren_src.txt", plainLines(10)), new: one("ren_dst.txt", plainLines(10)), wantNum: "0 0", wantAIR: "0 0",
			contains: []string{"similarity index 100%\nrename from ren_src.txt\nrename to ren_dst.txt\n"}},
		{name: "E15 rename with edit", renames: true, old: one("ren_src.txt", plainLines(10)), new: one("ren_dst.txt", editLines(10, 4)), wantNum: "1 1", wantAIR: "1 1"},
		{name: "rename with edit and mode", renames: true, old: one("a.sh", plainLines(12)), new: []fileSpec{{path: "b.sh", content: editLines(12, 7), mode: ModeExecutable}}, wantNum: "1 1"},
		{name: "rename into dir with CRLF", renames: true, old: one("x.txt", strings.ReplaceAll(plainLines(30), "\n", "\r\n")),
			new: one("d/x.txt", strings.ReplaceAll(editLines(30, 3, 20), "\n", "\r\n"))},
		{name: "rename below threshold", renames: true, old: one("a.txt", plainLines(4)), new: one("b.txt", editLines(4, 1, 2, 3))},
		{name: "rename quoted names", renames: true, quote: true, old: one("ä \"q\".txt", plainLines(8)), new: one("b ö.txt", editLines(8, 2))},
		{name: "rename symlink exact", renames: true, old: []fileSpec{{path: "l1", content: "tgt", mode: ModeSymlink}}, new: []fileSpec{{path: "l2", content: "tgt", mode: ModeSymlink}}},
		{name: "empty files not paired", renames: true, old: one("e1", ""), new: one("e2", ""),
			inexact: "git pairs two empty files as an exact rename; PairRenames never pairs empty blobs (brief §4.2)"},
	}
}

func TestGitCompat(t *testing.T) {
	repo := newGitRepo(t)
	for _, c := range gitCases() {
		t.Run(c.name, func(t *testing.T) {
			repo.t = t
			runGitCase(t, repo, c)
		})
	}
}

var extHeader = regexp.MustCompile(`(?m)^(new file mode|deleted file mode|old mode|new mode|similarity index|rename from|rename to) .*\n`)

// TestGitCompatPrefixes: PatchWith with absolute prefixes (an ACP v2
// git_patch) gives what git diff --src-prefix=/p/ --dst-prefix=/p/ does.
func TestGitCompatPrefixes(t *testing.T) {
	repo := newGitRepo(t)
	opt := Options{SrcPrefix: "/work/my proj/", DstPrefix: "/work/my proj/"}
	for _, c := range gitCases() {
		if c.inexact != "" || c.gitArgs != nil || c.opt != (Options{}) || c.quote {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			repo.t = t
			t1, t2 := repo.tree(c.old), repo.tree(c.new)
			renameArg := "--no-renames"
			if c.renames {
				renameArg = "-M"
			}
			want := repo.diff(false, []string{renameArg, "--src-prefix=" + opt.SrcPrefix, "--dst-prefix=" + opt.DstPrefix}, t1, t2)
			// git (2.39 at least) garbles the extended header lines
			// (modes, renames) when the prefix is an absolute path; they
			// are left out here and TestGitCompat checks them with git's
			// default prefixes.
			want = extHeader.ReplaceAllString(want, "")
			var got strings.Builder
			binary := false
			for _, r := range ours(c.old, c.new, c.renames, Options{}) {
				got.WriteString(extHeader.ReplaceAllString(r.PatchWith(opt), ""))
				binary = binary || r.Binary
			}
			if binary {
				if a, b := strings.Index(want, "GIT binary patch"), strings.Index(got.String(), "GIT binary patch"); a != b || want[:max(a, 0)] != got.String()[:max(b, 0)] {
					t.Errorf("binary header differs\n--- ours\n%s\n--- git\n%s", got.String(), want)
				}
				return
			}
			if got.String() != want {
				t.Errorf("patch differs from git\n--- ours\n%s\n--- git\n%s", got.String(), want)
			}
		})
	}
}
