package changeset

import (
	"strings"
	"testing"
	"time"
)

// FuzzDiffApply checks that the hunks of any diff rebuild the new text
// from the old one, that the counts balance with git's line counts, and
// that the patch text is deterministic. fallback forces the anchored diff.
func FuzzDiffApply(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nB\nc\n"), false)
	f.Add([]byte("abc"), []byte("abd"), false)
	f.Add([]byte("a"), []byte("a\nb\n"), true)
	f.Add([]byte("a\r\nb\r\n"), []byte("a\nb\n"), false)
	f.Add([]byte(""), []byte("x\n"), false)
	f.Add([]byte("}\n\n}\n\n}\n"), []byte("}\n\n}\n"), true)
	f.Fuzz(func(t *testing.T, a, b []byte, fallback bool) {
		opt := Options{}
		if fallback {
			opt.Budget = time.Nanosecond
		}
		old := &Side{Path: "f", Content: a}
		new := &Side{Path: "f", Content: b}
		r := Compare(old, new, opt)
		if r.Binary {
			if r.Hunks != nil || r.Added != 0 || r.Removed != 0 {
				t.Fatal("binary result with hunks or counts")
			}
			return
		}
		got, err := Apply(a, r.Hunks)
		if err != nil {
			t.Fatalf("Apply: %v\npatch:\n%s", err, r.Patch)
		}
		if string(got) != string(b) {
			t.Fatalf("Apply gives %q, want %q\npatch:\n%s", got, b, r.Patch)
		}
		if r.Added-r.Removed != len(splitLines(string(b)))-len(splitLines(string(a))) {
			t.Fatalf("+%d -%d does not balance the line counts", r.Added, r.Removed)
		}
		if string(a) == string(b) && r.Patch != "" {
			t.Fatal("patch for identical content")
		}
		if !fallback && r.Precise != true {
			t.Fatal("Myers result not precise")
		}
		if r2 := Compare(old, new, opt); r2.Patch != r.Patch {
			t.Fatal("non-deterministic patch")
		}
		if n := strings.Count(r.Patch, "\n@@ "); r.Patch != "" && n+strings.Count(r.Patch[:min(len(r.Patch), 1)], "@") != len(r.Hunks) {
			t.Fatalf("patch has %d hunk headers, Hunks %d", n, len(r.Hunks))
		}
	})
}
