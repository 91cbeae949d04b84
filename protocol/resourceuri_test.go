package protocol

import "testing"

// TestLocalResourceURI: VS Code's wrapped resource URIs, in both shapes,
// and file: URIs in another escaping come back in this server's spelling;
// this server's own URIs, and anything else, come back unchanged.
func TestLocalResourceURI(t *testing.T) {
	for in, want := range map[string]string{
		"file:///repo/a%20b.txt":                                 "file:///repo/a%20b.txt",
		"file:///repo/a b.txt":                                   "file:///repo/a%20b.txt",
		"file:///repo/%61.txt":                                   "file:///repo/a.txt",
		"file://localhost/repo/a.txt":                            "file:///repo/a.txt",
		"file:///repo/c%3Ad.txt":                                 "file:///repo/c:d.txt",
		"vscode-agent-host://devbox__7878/file/-/repo/a%20b.txt": "file:///repo/a%20b.txt",
		"vscode-agent-host://h/ahp-session/-/s1/blob/0123":       "ahp-session:/s1/blob/0123",
		// {"scheme":"file","authority":"","query":""}
		"vscode-agent-host://devbox__7878/repo/a.txt?_ah=eyJzY2hlbWUiOiJmaWxlIiwiYXV0aG9yaXR5IjoiIiwicXVlcnkiOiIifQ": "file:///repo/a.txt",
		"ahp-session:/s1/blob/0123": "ahp-session:/s1/blob/0123",
		"relative/a.txt":            "relative/a.txt",
		"file:relative":             "file:relative",
		"vscode-agent-host://h":     "vscode-agent-host://h",
	} {
		got := LocalResourceURI(in)
		if got != want {
			t.Errorf("LocalResourceURI(%q) = %q, want %q", in, got, want)
		}
		if again := LocalResourceURI(got); again != got {
			t.Errorf("LocalResourceURI is not idempotent on %q: %q", got, again)
		}
	}
}
