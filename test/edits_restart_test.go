package test

import (
	"encoding/json"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// What an edit tool reported survives the daemon's kill -9: once
// editEvents was answered, the restarted daemon shows the same records on
// the file, in the uncommitted changeset and in the turn's.
func TestEditRecordsSurviveKillNine(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "hello world\n"})
	state := t.TempDir()
	d := startDaemonIn(t, state, repo)
	c := d.client(t, "tool")
	sum := onlySession(t, c)
	turn := d.turnCLI(t, "start", "--dir", repo, "--message", "shout")
	writeFile(t, repo, "a.txt", "HELLO world\n")
	var ev map[string]any
	json.Unmarshal([]byte(editLine(t, map[string]any{
		"path": "a.txt", "checksum_before": blake3Hex("hello world\n"), "checksum_after": blake3Hex("HELLO world\n"),
		"fuzzy": true, "strategy": "block_anchor",
	})), &ev)
	if err := c.Call(ctx(t), protocol.MethodEditEvents, map[string]any{"channel": sum.Resource, "events": []any{ev}}, nil); err != nil {
		t.Fatal(err)
	}
	has := func(st protocol.ChangesetState) bool { return editsMetaOf(fileByPath(st, repo, "a.txt")) != nil }
	cat := catalogue(t, c, sum.Resource)
	before := editsMetaOf(fileByPath(mirrorChangeset(t, c, expand(t, cat["uncommitted"].URITemplate, nil)).Wait("a.txt with its edit", has), repo, "a.txt"))
	d.kill(t)
	c.Close()

	d = startDaemonIn(t, state, repo)
	c = d.client(t, "panel")
	cat = catalogue(t, c, sum.Resource)
	for name, uri := range map[string]string{
		"uncommitted": expand(t, cat["uncommitted"].URITemplate, nil),
		"turn":        expand(t, cat["turn"].URITemplate, map[string]string{"turnId": turn}),
	} {
		st := mirrorChangeset(t, c, uri).Wait(name+" ready", func(st protocol.ChangesetState) bool { return ready(st) && fileByPath(st, repo, "a.txt") != nil })
		after := editsMetaOf(fileByPath(st, repo, "a.txt"))
		b1, _ := json.Marshal(before)
		b2, _ := json.Marshal(after)
		if after == nil || string(b1) != string(b2) {
			t.Errorf("%s after kill -9: edits %s, want %s", name, b2, b1)
		}
	}
}
