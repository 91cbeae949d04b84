package test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// "changesetd draft PATH" sends standard input as a draft of PATH on the
// session whose working directory holds it and prints the daemon's answer
// in one line: the commands of docs/agents.md, run as written, print what
// the doc says and the draft shows in the uncommitted changeset. A file
// outside every session, or a standard input too large, is refused with a
// clear error and shows nothing.
func TestDraftCLI(t *testing.T) {
	t.Parallel()
	xdg := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + xdg}
	orig := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n"
	repo := gitRepo(t, map[string]string{"a.txt": orig, "b.txt": "b\n"})
	d := startDaemonIn(t, filepath.Join(xdg, "changesetd"), repo)
	c := d.client(t, "panel")
	sum := onlySession(t, c)
	cat := catalogue(t, c, sum.Resource)
	unc := mirrorChangeset(t, c, expand(t, cat["uncommitted"].URITemplate, nil))
	unc.Wait("uncommitted ready", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 0 })

	lines := strings.Split(strings.TrimSpace(docBlock(t, "sh", "drafts")), "\n")
	if len(lines) != 4 {
		t.Fatalf("the drafts block has %d lines, want two commands each with its answer", len(lines))
	}
	for i := 0; i < len(lines); i += 2 {
		want := strings.TrimPrefix(lines[i+1], "# ")
		if got := strings.TrimSpace(runDocCommand(t, lines[i], repo, "", env)); got != want {
			t.Errorf("%s printed %q, the doc says %q", lines[i], got, want)
		}
		if i == 0 {
			st := unc.Wait("a.txt drafted", func(st protocol.ChangesetState) bool { return draftMeta(fileByPath(st, repo, "a.txt")) != nil })
			f := fileByPath(st, repo, "a.txt")
			if dm := draftMeta(f); dm["linesWritten"] != 4.0 || dm["percent"] != 50.0 {
				t.Errorf("the draft sent by the command: %v", dm)
			}
			// Its diff, as for any file, read at its patchUri.
			if p := filePatch(t, c, f); !strings.Contains(p, "-two\n+TWO\n") || strings.Contains(p, "-five") {
				t.Errorf("the draft's patch %q, want two changed to TWO and the rest kept", p)
			}
		}
	}

	// From another directory, with --dir naming the session, and a new
	// file: no total.
	code, out, stderr := cli(t, "new\nfile\n", env, "draft", "--dir", repo, filepath.Join(repo, "new.txt"))
	if code != 0 || strings.TrimSpace(out) != "published: 2 lines written" {
		t.Errorf("draft of a new file: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	unc.Wait("new.txt drafted", func(st protocol.ChangesetState) bool { return draftMeta(fileByPath(st, repo, "new.txt")) != nil })

	// Refused, nothing shown.
	outside := t.TempDir()
	code, out, stderr = cli(t, "x\n", env, "draft", filepath.Join(outside, "x.txt"))
	if code != 1 || !strings.Contains(stderr, "no session of the daemon has "+outside) || out != "" {
		t.Errorf("draft of a file outside every session: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr = cli(t, "x\n", env, "draft", "--session", sum.Resource, filepath.Join(outside, "x.txt"))
	if code != 1 || !strings.Contains(stderr, "is outside the working directories of session") || out != "" {
		t.Errorf("draft of a file outside the named session: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, _, stderr = cli(t, strings.Repeat("b\n", 1<<19+1), env, "draft", filepath.Join(repo, "b.txt"))
	if code != 1 || !strings.Contains(stderr, "the most a draft takes; nothing was sent") {
		t.Errorf("an oversized draft: exit %d, stderr %q", code, stderr)
	}
	st := unc.Wait("only the drafts sent", func(st protocol.ChangesetState) bool { return ready(st) })
	if f := fileByPath(st, repo, "b.txt"); f != nil {
		t.Errorf("b.txt is in the uncommitted changes after a refused draft: %+v", f)
	}
}
