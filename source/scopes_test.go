package source

import "testing"

func TestPathScopesCovers(t *testing.T) {
	ps := newPathScopes([]string{"a/b", "c.go", "d/e/f.txt"})
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"a/b", true},
		{"a/b/c", true},
		{"a/bc", false},
		{"a", false},
		{"c.go", true},
		{"c.go/x", true},
		{"c.gox", false},
		{"d/e/f.txt", true},
		{"d/e", false},
		{"x/a/b", false},
	} {
		if got := ps.covers(tc.path); got != tc.want {
			t.Errorf("covers(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
	if !newPathScopes([]string{""}).covers("any/path") {
		t.Error(`"" does not cover every path`)
	}
	if newPathScopes(nil).covers("a") {
		t.Error("no paths cover a path")
	}
}
