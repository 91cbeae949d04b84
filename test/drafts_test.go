package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

func draftMeta(f *protocol.ChangesetFile) map[string]any {
	if f == nil {
		return nil
	}
	raw, _ := json.Marshal(f.Meta)
	var m struct {
		Changesetd struct {
			Draft map[string]any `json:"draft"`
		} `json:"changesetd"`
	}
	json.Unmarshal(raw, &m)
	return m.Changesetd.Draft
}

// draftRig starts a daemon (with args) on a repository of files and
// returns an agent's client, the session's URI and a mirror of its
// uncommitted changeset, ready and empty.
func draftRig(t *testing.T, files map[string]string, args ...string) (repo string, c *fake.Client, session string, unc *changesetMirror) {
	t.Helper()
	repo = gitRepo(t, files)
	d := startDaemon(t, append([]string{repo}, args...)...)
	c = d.client(t, "agent")
	sum := onlySession(t, c)
	cat := catalogue(t, c, sum.Resource)
	unc = mirrorChangeset(t, c, expand(t, cat["uncommitted"].URITemplate, nil))
	unc.Wait("uncommitted ready", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == 0 })
	return repo, c, sum.Resource, unc
}

// A draft shows in the uncommitted changeset as the file's change, placed
// by the cursor rule, with its progress and readable content; the file
// written on disk replaces it; a final draft for a file never written
// gives way to the file as it is; drafts outside the session or too large
// are refused.
func TestDrafts(t *testing.T) {
	t.Parallel()
	orig := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n"
	repo, c, session, unc := draftRig(t, map[string]string{"a.txt": orig, "b.txt": "b\n"})
	draft := func(resource, text string, final bool) (map[string]any, error) {
		var res map[string]any
		err := c.Call(ctx(t), protocol.MethodDraft, map[string]any{"channel": session, "resource": resource, "text": text, "final": final}, &res)
		return res, err
	}
	fileA := "file://" + repo + "/a.txt"

	// Half-way through a rewrite of a.txt that changed line two.
	res, err := draft(fileA, "one\nTWO\nthree\nfour\nfi", false)
	if err != nil || res["published"] != true {
		t.Fatalf("draft: %v %v", res, err)
	}
	st := unc.Wait("a.txt drafted", func(st protocol.ChangesetState) bool { return draftMeta(fileByPath(st, repo, "a.txt")) != nil })
	f := fileByPath(st, repo, "a.txt")
	if dm := draftMeta(f); dm["draft"] != true || dm["linesWritten"] != 4.0 || dm["linesTotal"] != 8.0 || dm["percent"] != 50.0 {
		t.Errorf("draft meta %v", dm)
	}
	if f.Edit.Diff == nil || *f.Edit.Diff.Added != 1 || *f.Edit.Diff.Removed != 1 {
		t.Errorf("draft diff %+v, want +1 -1 (the rest of the file stays)", f.Edit.Diff)
	}
	if got, err := readResource(t, c, f.Edit.After.Content.URI); err != nil || string(got) != strings.Replace(orig, "two", "TWO", 1) {
		t.Errorf("the draft's content reads %q %v", got, err)
	}

	// The file written: what is on disk replaces the draft.
	writeFile(t, repo, "a.txt", strings.Replace(orig, "two", "TWO", 1)+"nine\n")
	unc.Wait("a.txt as written", func(st protocol.ChangesetState) bool {
		f := fileByPath(st, repo, "a.txt")
		return f != nil && draftMeta(f) == nil && f.Edit.Diff != nil && *f.Edit.Diff.Added == 2
	})

	// A final draft of a new file that is never written goes away.
	fileC := "file://" + repo + "/c.txt"
	if res, err := draft(fileC, "new\nfile\n", true); err != nil || res["published"] != true {
		t.Fatalf("final draft of a new file: %v %v", res, err)
	}
	unc.Wait("c.txt drafted", func(st protocol.ChangesetState) bool { return draftMeta(fileByPath(st, repo, "c.txt")) != nil })
	unc.Wait("c.txt gone with its draft", func(st protocol.ChangesetState) bool { return fileByPath(st, repo, "c.txt") == nil })

	// Refused.
	if _, err := draft("file:///etc/passwd", "x\n", false); protocol.CodeOf(err) != protocol.CodePermissionDenied {
		t.Errorf("a draft outside the session: %v, want PermissionDenied", err)
	}
	if _, err := draft(fileA, strings.Repeat("x", 1<<20+1), false); protocol.CodeOf(err) != protocol.CodeInvalidParams {
		t.Errorf("an oversized draft: %v, want InvalidParams", err)
	}
}

// TestDraftsAreCappedPerSession: a session keeps at most 64 drafts and
// 16 MiB of them; a draft of one more file is refused with InvalidParams
// (reason tooLarge) saying so, while a file already drafted may still be
// drafted again. Drafts are held until they end, so without the caps an
// agent drafting many files holds them all.
func TestDraftsAreCappedPerSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fits int    // drafts that fit
		text string // each draft's text
	}{
		{"count", 64, "drafted\n"},
		{"bytes", 16, strings.Repeat("0123456789abcde\n", 1<<16)}, // 1 MiB each
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No draft may time out while the others are sent, however
			// slow the machine: the first would free its room.
			repo, c, session, _ := draftRig(t, map[string]string{"a.txt": "a\n"}, "--draft-timeout", "1h")
			draft := func(i int, text string) error {
				var res map[string]any
				err := c.Call(ctx(t), protocol.MethodDraft, map[string]any{"channel": session, "resource": fmt.Sprintf("file://%s/d%03d.txt", repo, i), "text": text, "final": false}, &res)
				if err == nil && res["published"] != true {
					return fmt.Errorf("draft %d not published: %v", i, res)
				}
				return err
			}
			for i := range tc.fits {
				if err := draft(i, tc.text); err != nil {
					t.Fatalf("draft %d of %d: %v", i, tc.fits, err)
				}
			}
			err := draft(tc.fits, tc.text)
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams || protocol.ReasonOf(err) != protocol.ReasonTooLarge || !strings.Contains(pe.Message, "at most 64 drafts of 16777216 bytes") {
				t.Fatalf("one draft more: %v, want InvalidParams (tooLarge) naming the caps", err)
			}
			// A file already drafted takes a new draft (final: shown at once).
			var res map[string]any
			if err := c.Call(ctx(t), protocol.MethodDraft, map[string]any{"channel": session, "resource": fmt.Sprintf("file://%s/d%03d.txt", repo, 0), "text": tc.text, "final": true}, &res); err != nil || res["published"] != true {
				t.Fatalf("a drafted file drafted again: %v %v", res, err)
			}
		})
	}
}

// TestDraftTimeout: a draft that no other draft follows and whose file is
// never written gives way to the file as it is after --draft-timeout.
func TestDraftTimeout(t *testing.T) {
	t.Parallel()
	repo, c, session, unc := draftRig(t, map[string]string{"a.txt": "one\ntwo\n"}, "--draft-timeout", "300ms")
	var res map[string]any
	if err := c.Call(ctx(t), protocol.MethodDraft, map[string]any{"channel": session, "resource": "file://" + repo + "/a.txt", "text": "one\nTWO\n", "final": false}, &res); err != nil || res["published"] != true {
		t.Fatalf("draft: %v %v", res, err)
	}
	unc.Wait("a.txt drafted", func(st protocol.ChangesetState) bool { return draftMeta(fileByPath(st, repo, "a.txt")) != nil })
	// Well before the default timeout (30 s), which would also end it.
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := unc.c.Wait(wctx, "the draft gone, a.txt unchanged", func() bool { return fileByPath(unc.State(), repo, "a.txt") == nil }); err != nil {
		t.Fatal(err)
	}
}
