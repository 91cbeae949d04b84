package fswatch

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The choice macOS makes is tested here on any platform: startMode takes
// the backend's nature as an argument.
func TestStartMode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      Options
		remote    string
		kqueue    bool
		poll      bool
		reasonHas string
	}{
		{"inotify, local", Options{}, "", false, false, ""},
		{"kqueue polls", Options{}, "", true, true, "kqueue"},
		{"kqueue on a remote fs", Options{}, "nfs", true, true, "kqueue"},
		{"forced", Options{ForcePoll: true}, "", true, true, "forced"},
		{"remote", Options{}, "nfs", false, true, "nfs file system"},
	} {
		poll, reason := startMode(tc.opts, tc.remote, tc.kqueue)
		if poll != tc.poll || !strings.Contains(reason, tc.reasonHas) || (!poll && reason != "") {
			t.Errorf("%s: poll %v, reason %q; want %v and %q", tc.name, poll, reason, tc.poll, tc.reasonHas)
		}
	}
	kqueueOS := []string{"darwin", "dragonfly", "freebsd", "netbsd", "openbsd"}
	if kqueueBackend != slices.Contains(kqueueOS, runtime.GOOS) {
		t.Errorf("kqueueBackend is %v on %s", kqueueBackend, runtime.GOOS)
	}
}

// On this platform New starts as startMode says.
func TestNewStartsAsChosen(t *testing.T) {
	w, err := New(Options{Root: t.TempDir()}, func(Batch) {})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	poll, _ := startMode(Options{}, remoteFSName(w.root), kqueueBackend)
	if got := w.Mode() == ModePoll; got != poll {
		t.Errorf("mode %s (%s), want poll=%v", w.Mode(), w.ModeReason(), poll)
	}
	if kqueueBackend && !strings.Contains(w.ModeReason(), "kqueue") {
		t.Errorf("polling on %s for %q", runtime.GOOS, w.ModeReason())
	}
}
