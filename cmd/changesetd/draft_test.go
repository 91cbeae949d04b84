package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runDraft(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	// An unreachable daemon: whatever reaches the dial fails there.
	args = append([]string{"draft", "--url", "127.0.0.1:1", "--token", "x", "--timeout", "2s"}, args...)
	code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// What is wrong with the command line or standard input is said before
// anything is sent.
func TestDraftRefusesBeforeSending(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, stdin string
		args        []string
		code        int
		want        string
	}{
		{"no path", "x\n", nil, 2, "name the file being written"},
		{"two paths", "x\n", []string{dir + "/a", dir + "/b"}, 2, `unexpected argument`},
		{"dir and session", "x\n", []string{"--dir", dir, "--session", "ahp-session:/s", dir + "/a"}, 2, "only one of --dir and --session"},
		{"a directory", "x\n", []string{dir}, 2, "is a directory"},
		{"too large", strings.Repeat("x", maxDraftText+1), []string{dir + "/a"}, 1, "over 1048576 bytes"},
		{"not text", "\xff\xfe\n", []string{dir + "/a"}, 1, "not UTF-8"},
	} {
		code, _, stderr := runDraft(t, c.stdin, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", c.name, code, stderr, c.code, c.want)
		}
		if strings.Contains(stderr, "127.0.0.1:1") {
			t.Errorf("%s: dialled the daemon: %q", c.name, stderr)
		}
	}
}

func TestDraftLine(t *testing.T) {
	n := func(i int) *int { return &i }
	for _, c := range []struct {
		published      bool
		written        int
		total, percent *int
		want           string
	}{
		{true, 4, n(8), n(50), "published: 4 lines written of 8 (50%)"},
		{true, 2, nil, nil, "published: 2 lines written"},
		{false, 0, n(8), n(0), "not published (too soon after the last draft, nothing of the file placed yet, or no one watching the uncommitted changes): 0 lines written of 8 (0%)"},
	} {
		if got := draftLine(c.published, c.written, c.total, c.percent); got != c.want {
			t.Errorf("draftLine = %q, want %q", got, c.want)
		}
	}
}
