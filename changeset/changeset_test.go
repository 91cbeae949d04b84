package changeset

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

func TestAIRLineCount(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
	}{
		{"A1", "", 0},
		{"A2", "line", 1},
		{"A3", "line\n", 1},
		{"A4", "\n", 1},
		{"A5", "\n\n", 2},
		{"A6", "first\n\nlast\n", 3},
		{"A7", "first\r\n\r\nlast\r\n", 3},
		{"A8", "first\r\rlast\r", 3},
		{"A9", "first\r\nsecond\rthird\n", 3},
		{"A10", "a\rb\r", 2},
		{"A11", "package test.project\n\nclass OldFile {}", 3},
		{"A12", "package test.project\n\nclass NewFile {\n    fun hello() = \"Hello\"\n}\n", 5},
	} {
		if got := AIRLineCount([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: AIRLineCount(%q) = %d, want %d", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestCreateDeleteCounts(t *testing.T) {
	// A11: deletion counts 0/3; A12: creation counts 5/0.
	del := Compare(&Side{Path: "Old.kt", Content: []byte("package test.project\n\nclass OldFile {}")}, nil, Options{})
	if a, r, ok := del.Counts(); !ok || a != 0 || r != 3 {
		t.Errorf("A11: got %d/%d %v, want 0/3", a, r, ok)
	}
	add := Compare(nil, &Side{Path: "New.kt", Content: []byte("package test.project\n\nclass NewFile {\n    fun hello() = \"Hello\"\n}\n")}, Options{})
	if a, r, ok := add.Counts(); !ok || a != 5 || r != 0 {
		t.Errorf("A12: got %d/%d %v, want 5/0", a, r, ok)
	}
	// A lone CR ends a line for AIR but not for git.
	cr := Compare(nil, &Side{Path: "cr", Content: []byte("a\rb\r")}, Options{})
	if cr.Added != 1 {
		t.Errorf("git count of a\\rb\\r = %d, want 1", cr.Added)
	}
	if a, _, _ := cr.Counts(); a != 2 {
		t.Errorf("AIR count of a\\rb\\r = %d, want 2", a)
	}
	// B7: an EOF-newline-only change counts 1/1.
	eof := Compare(&Side{Path: "f", Content: []byte("same")}, &Side{Path: "f", Content: []byte("same\n")}, Options{})
	if a, r, ok := eof.Counts(); !ok || a != 1 || r != 1 {
		t.Errorf("B7: got %d/%d %v, want 1/1", a, r, ok)
	}
}

func TestBlobOIDAndBinary(t *testing.T) {
	if got := BlobOID([]byte("hello\n")); got != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Errorf("BlobOID(hello) = %s", got)
	}
	if got := BlobOID(nil); got != "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391" {
		t.Errorf("BlobOID(empty) = %s", got)
	}
	at := func(i int) []byte {
		b := []byte(strings.Repeat("a", i+10))
		b[i] = 0
		return b
	}
	if !IsBinary(at(0)) || !IsBinary(at(7999)) || IsBinary(at(8000)) || IsBinary(nil) {
		t.Error("IsBinary must look for NUL in exactly the first 8000 bytes")
	}
}

func TestAIRMeta(t *testing.T) {
	r := Compare(&Side{Path: "f", Content: []byte("old\n")}, &Side{Path: "f", Content: []byte("new\nextra\n")}, Options{})
	b, err := json.Marshal(r.AIRMeta())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"jetbrains":{"air":{"diffStats":{"added":2,"removed":1,"version":1},"version":1}}}`
	if string(b) != want {
		t.Errorf("AIRMeta = %s, want %s", b, want)
	}
	meta := protocol.Object{"kind": "update", "jetbrains": protocol.Object{"other": true, "air": protocol.Object{"version": 3, "x": 1}}}
	got := WithAIRMeta(meta, r)
	b, _ = json.Marshal(got)
	const wantMerged = `{"jetbrains":{"air":{"diffStats":{"added":2,"removed":1,"version":1},"version":1,"x":1},"other":true},"kind":"update"}`
	if string(b) != wantMerged {
		t.Errorf("WithAIRMeta = %s, want %s", b, wantMerged)
	}
	if _, ok := meta["jetbrains"].(protocol.Object)["air"].(protocol.Object)["diffStats"]; ok {
		t.Error("WithAIRMeta modified its input")
	}
	// Binary: no stats, and stale stats are dropped.
	bin := Compare(&Side{Path: "b", Content: []byte("\x00a")}, &Side{Path: "b", Content: []byte("\x00b")}, Options{})
	if bin.AIRMeta() != nil || bin.DiffStats() != nil {
		t.Error("binary change must omit stats")
	}
	b, _ = json.Marshal(WithAIRMeta(got, bin))
	if string(b) != `{"jetbrains":{"air":{"version":1,"x":1},"other":true},"kind":"update"}` {
		t.Errorf("WithAIRMeta(binary) = %s", b)
	}
	ds := r.DiffStats()
	if ds == nil || *ds.Added != 2 || *ds.Removed != 1 {
		t.Errorf("DiffStats = %+v", ds)
	}
}

func TestLimits(t *testing.T) {
	old := []byte(plainLines(1000))
	new := []byte(editLines(1000, 5, 500))
	big := Compare(&Side{Path: "f", Content: old}, &Side{Path: "f", Content: new}, Options{MaxFileBytes: 1000})
	if !big.TooLarge || big.Precise || big.Patch != "" || big.DiffStats() != nil || len(big.Hunks) != 0 {
		t.Errorf("too large: %+v", big)
	}
	capped := Compare(&Side{Path: "f", Content: old}, &Side{Path: "f", Content: new}, Options{MaxPatchBytes: 100})
	if !capped.PatchOmitted || capped.Patch != "" || !capped.Precise || capped.Added != 2 || capped.Removed != 2 || len(capped.Hunks) != 2 {
		t.Errorf("patch cap: stats must stay, patch must go: %+v", capped)
	}
}

// TestBudgetFallback forces the search budget to run out: the anchored
// diff must take over, and its counts are still exact for the emitted
// hunks. Lines edited in place need no search (git's line classification
// settles them), so the edit moves a block: its lines match elsewhere.
func TestBudgetFallback(t *testing.T) {
	old := []byte(plainLines(3000))
	ls := splitLines(string(old))
	moved := append(append(append(append([]string(nil), ls[:1000]...), ls[1010:2500]...), ls[1000:1010]...), ls[2500:]...)
	new := []byte(strings.Join(moved, ""))
	if r := Compare(&Side{Path: "f", Content: old}, &Side{Path: "f", Content: new}, Options{}); r.Fallback || r.Added != 10 || r.Removed != 10 {
		t.Errorf("within the budget: Fallback=%v +%d -%d", r.Fallback, r.Added, r.Removed)
	}
	r := Compare(&Side{Path: "f", Content: old}, &Side{Path: "f", Content: new}, Options{Budget: time.Nanosecond})
	if !r.Fallback || !r.Precise || r.Added != 10 || r.Removed != 10 {
		t.Errorf("fallback: Fallback=%v Precise=%v +%d -%d", r.Fallback, r.Precise, r.Added, r.Removed)
	}
	if got, err := Apply(old, r.Hunks); err != nil || string(got) != string(new) {
		t.Errorf("fallback hunks do not apply: %v", err)
	}
	// Only repeated lines: the anchored diff has no anchors and replaces
	// everything, which must not be published as precise.
	rep := func(n int, seed int) []byte {
		var sb strings.Builder
		for i := range n {
			sb.WriteString([]string{"a\n", "b\n", "c\n"}[(i*7+seed*(i/3))%3])
		}
		return []byte(sb.String())
	}
	a, b := rep(600, 1), rep(600, 2)
	d := Compare(&Side{Path: "f", Content: a}, &Side{Path: "f", Content: b}, Options{Budget: time.Nanosecond})
	if !d.Fallback || d.Precise || d.DiffStats() != nil {
		t.Errorf("degenerate fallback: Fallback=%v Precise=%v +%d -%d", d.Fallback, d.Precise, d.Added, d.Removed)
	}
	if got, err := Apply(a, d.Hunks); err != nil || string(got) != string(b) {
		t.Errorf("degenerate hunks do not apply: %v", err)
	}
}

func TestPairRenames(t *testing.T) {
	s := func(p, c string, m uint32) *Side { return &Side{Path: p, Content: []byte(c), Mode: m} }
	body := plainLines(20)
	del := []*Side{
		s("gone.txt", "unrelated\n", 0),
		s("dir/a.txt", body, 0),
		s("other/a.txt", body, 0),
		s("e1", "", 0),
		s("edit.txt", plainLines(30), 0),
		s("link", "target", ModeSymlink),
	}
	add := []*Side{
		s("new/a.txt", body, 0),
		s("e2", "", 0),
		s("edited.txt", editLines(30, 3, 9), 0),
		s("b.txt", body, 0),
		s("link2", "target", 0), // same blob, different type: not an exact rename
	}
	pairs, rd, ra := PairRenames(del, add)
	got := map[string]string{}
	for _, p := range pairs {
		got[p[1].Path] = p[0].Path
	}
	want := map[string]string{"new/a.txt": "dir/a.txt", "b.txt": "other/a.txt", "edited.txt": "edit.txt"}
	if len(got) != len(want) {
		t.Fatalf("pairs = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("pair for %s = %q, want %q", k, got[k], v)
		}
	}
	var names []string
	for _, x := range append(rd, ra...) {
		names = append(names, x.Path)
	}
	if strings.Join(names, ",") != "gone.txt,e1,link,e2,link2" {
		t.Errorf("rest = %v", names)
	}
	r := Compare(pairs[1][0], pairs[1][1], Options{})
	if r.ChangeType() != Renamed || r.Similarity < 50 || r.Similarity >= 100 {
		t.Errorf("rename result: kind %s similarity %d", r.ChangeType(), r.Similarity)
	}
}

func TestApplyRejects(t *testing.T) {
	r := Compare(&Side{Path: "f", Content: []byte("a\nb\nc\n")}, &Side{Path: "f", Content: []byte("a\nB\nc\n")}, Options{})
	if _, err := Apply([]byte("a\nx\nc\n"), r.Hunks); err == nil {
		t.Error("Apply to different content must fail")
	}
	if _, err := Apply([]byte("a\nb\nc"), r.Hunks); err == nil {
		t.Error("Apply must notice a missing final newline")
	}
}

func TestTypeChangeHunks(t *testing.T) {
	old := &Side{Path: "l", Content: []byte("a\nb\n")}
	new := &Side{Path: "l", Content: []byte("target"), Mode: ModeSymlink}
	r := Compare(old, new, Options{})
	if r.ChangeType() != TypeChanged || r.Added != 1 || r.Removed != 2 {
		t.Fatalf("type change: %s +%d -%d", r.ChangeType(), r.Added, r.Removed)
	}
	if got, err := Apply(old.Content, r.Hunks); err != nil || string(got) != "target" {
		t.Errorf("Apply = %q, %v", got, err)
	}
}

// A file's AIR statistics kept as an AIR encode exactly as the maps they
// stand for, alone, inside a file's _meta, and through the fast encoder
// of the file list.
func TestAIREncodesAsItsMaps(t *testing.T) {
	for _, a := range []AIR{{}, {Added: 1}, {Added: 12345, Removed: 678}, {Added: math.MaxInt32, Removed: math.MaxInt32}} {
		want, err := json.Marshal(airMaps(a))
		if err != nil {
			t.Fatal(err)
		}
		if got := a.AppendJSONValue(nil); string(got) != string(want) {
			t.Errorf("%+v: %s, want %s", a, got, want)
		}
		withMaps := protocol.ChangesetState{Files: []protocol.ChangesetFile{{ID: "f", Meta: protocol.Object{"jetbrains": airMaps(a), "x": 1}}}}
		withAIR := protocol.ChangesetState{Files: []protocol.ChangesetFile{{ID: "f", Meta: protocol.Object{"jetbrains": a, "x": 1}}}}
		want, err = json.Marshal(withMaps)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(withAIR)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%+v in a file list: %s, want %s", a, got, want)
		}
	}
}

// airMaps is a as the maps it stands for.
func airMaps(a AIR) protocol.Object {
	return protocol.Object{"air": protocol.Object{
		"version":   AIRVersion,
		"diffStats": protocol.Object{"version": AIRDiffStatsVersion, "added": int(a.Added), "removed": int(a.Removed)},
	}}
}
