package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolveVersion(t *testing.T) {
	for _, c := range []struct {
		ldflags, module, want string
	}{
		{"v9.9.9", "v1.2.3", "v9.9.9"}, // -ldflags wins
		{"", "v1.2.3", "v1.2.3"},       // go install …@v1.2.3
		{"", "(devel)", devVersion},    // go build in a checkout
		{"", "", devVersion},           // no build info
		{"", "v0.0.0-20261201120000-abcdef123456", "v0.0.0-20261201120000-abcdef123456"},
	} {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/changesetd/changesetd", Version: c.module}}
		if got := resolveVersion(c.ldflags, info); got != c.want {
			t.Errorf("resolveVersion(%q, %q) = %q, want %q", c.ldflags, c.module, got, c.want)
		}
	}
	if got := resolveVersion("", nil); got != devVersion {
		t.Errorf("without build info: %q", got)
	}
}

func TestFormatVersionNamesTheCommit(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-01T12:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := formatVersion("v1.2.3", "ffffffffffff", info)
	for _, want := range []string{"changesetd v1.2.3 ", "commit 0123456789ab+dirty", "(2026-12-01T12:00:00Z)", "go1.26.0"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if got := formatVersion("v1.2.3", "", &debug.BuildInfo{}); strings.Contains(got, "commit") {
		t.Errorf("no revision recorded, yet %q names a commit", got)
	}
	// An image built without .git passes the commit through -ldflags.
	if got := formatVersion("v1.2.3", "0123456789abcdef", &debug.BuildInfo{}); !strings.Contains(got, "commit 0123456789ab") {
		t.Errorf("-X main.commit: %q", got)
	}
}
