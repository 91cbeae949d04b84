package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/test/fake"
)

// wireHunk is one entry of a file's _meta.changesetd.hunks.
type wireHunk struct {
	ID       string `json:"id"`
	OldStart int    `json:"oldStart"`
	OldLines int    `json:"oldLines"`
	NewStart int    `json:"newStart"`
	NewLines int    `json:"newLines"`
	Reviewed bool   `json:"reviewed"`
}

func hunksOfFile(f *protocol.ChangesetFile) []wireHunk {
	if f == nil {
		return nil
	}
	own, _ := f.Meta["changesetd"].(map[string]any)
	b, _ := json.Marshal(own["hunks"])
	var out []wireHunk
	_ = json.Unmarshal(b, &out)
	return out
}

func markHunks(t *testing.T, c *fake.Client, uri, file string, reviewed bool, ids ...string) error {
	t.Helper()
	return c.Call(ctx(t), protocol.MethodHunksReviewChanged, map[string]any{"channel": uri, "file": file, "hunks": ids, "reviewed": reviewed}, nil)
}

// numberedWith is n numbered lines with the given ones replaced.
func numberedWith(n int, with map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := with[i]; ok {
			b.WriteString(s)
		} else {
			fmt.Fprintf(&b, "line %d", i)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Hunk review marks: set by one client and seen by another in the file's
// _meta.changesetd.hunks; bound to the hunk's content, so kept across an
// edit elsewhere in the file and lost by an edit of the hunk; kept across
// a restart; and a file whose hunks are all marked is reviewed.
func TestHunkReviewMarks(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"f.txt": numberedWith(40, nil)})
	writeFile(t, repo, "f.txt", numberedWith(40, map[int]string{3: "three", 35: "thirty-five"}))
	state := t.TempDir()
	e := attachOps(t, startDaemonIn(t, state, repo), repo)
	other := mirrorChangeset(t, e.d.client(t, "other"), e.uri)
	id := e.id("f.txt")
	twoHunks := func(st protocol.ChangesetState) bool {
		return ready(st) && len(hunksOfFile(findFile(st, repo, "f.txt"))) == 2
	}
	hs := hunksOfFile(findFile(e.m.Wait("two hunks", twoHunks), repo, "f.txt"))
	first, last := hs[0], hs[1]
	if first.NewStart != 1 || last.NewStart != 32 || first.ID == last.ID || first.Reviewed || last.Reviewed {
		t.Fatalf("hunks = %+v", hs)
	}

	if err := markHunks(t, e.c, e.uri, id, true, first.ID); err != nil {
		t.Fatal(err)
	}
	markedFirst := func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "f.txt")
		hs := hunksOfFile(f)
		return ready(st) && len(hs) >= 2 && hs[0].ID == first.ID && hs[0].Reviewed && !hs[len(hs)-1].Reviewed && !f.IsReviewed()
	}
	other.Wait("the other client sees the first hunk marked", markedFirst)

	// An edit elsewhere: the first hunk keeps its mark, the new one has none.
	writeFile(t, repo, "f.txt", numberedWith(40, map[int]string{3: "three", 20: "twenty", 35: "thirty-five"}))
	st := other.Wait("three hunks, the first marked", func(st protocol.ChangesetState) bool {
		return markedFirst(st) && len(hunksOfFile(findFile(st, repo, "f.txt"))) == 3
	})
	if hs := hunksOfFile(findFile(st, repo, "f.txt")); hs[1].Reviewed || hs[2].ID != last.ID {
		t.Errorf("after an edit elsewhere: %+v", hs)
	}

	// Across a restart.
	if err := e.d.stop(); err != nil {
		t.Fatal(err)
	}
	e = attachOps(t, startDaemonIn(t, state, repo), repo)
	other = mirrorChangeset(t, e.d.client(t, "other"), e.uri)
	st = other.Wait("the mark after a restart", func(st protocol.ChangesetState) bool {
		return markedFirst(st) && len(hunksOfFile(findFile(st, repo, "f.txt"))) == 3
	})

	// Every hunk marked: the file is reviewed, for every client.
	var rest []string
	for _, h := range hunksOfFile(findFile(st, repo, "f.txt"))[1:] {
		rest = append(rest, h.ID)
	}
	if err := markHunks(t, e.c, e.uri, id, true, rest...); err != nil {
		t.Fatal(err)
	}
	other.Wait("the file reviewed", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "f.txt")
		return ready(st) && f != nil && f.IsReviewed()
	})
	if err := markHunks(t, e.c, e.uri, id, false, rest[0]); err != nil {
		t.Fatal(err)
	}
	other.Wait("the file no longer reviewed", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "f.txt")
		return ready(st) && f != nil && !f.IsReviewed() && hunksOfFile(f)[0].Reviewed && !hunksOfFile(f)[1].Reviewed
	})

	// The file reviewed, or unreviewed, as a whole: its hunks follow.
	allMarked := func(want bool) func(protocol.ChangesetState) bool {
		return func(st protocol.ChangesetState) bool {
			f := findFile(st, repo, "f.txt")
			if !ready(st) || f == nil || f.IsReviewed() != want {
				return false
			}
			for _, h := range hunksOfFile(f) {
				if h.Reviewed != want {
					return false
				}
			}
			return true
		}
	}
	review(t, e.c, e.uri, 1, true, id)
	other.Wait("every hunk marked with the file", allMarked(true))
	review(t, e.c, e.uri, 2, false, id)
	other.Wait("no hunk marked with the file cleared", allMarked(false))
	if err := markHunks(t, e.c, e.uri, id, true, first.ID); err != nil {
		t.Fatal(err)
	}
	other.Wait("the first hunk marked again", markedFirst)

	// An edit of the first hunk: its mark is gone.
	writeFile(t, repo, "f.txt", numberedWith(40, map[int]string{3: "THREE", 20: "twenty", 35: "thirty-five"}))
	st = other.Wait("the first hunk edited", func(st protocol.ChangesetState) bool {
		hs := hunksOfFile(findFile(st, repo, "f.txt"))
		return ready(st) && len(hs) == 3 && hs[0].ID != first.ID
	})
	if hs := hunksOfFile(findFile(st, repo, "f.txt")); hs[0].Reviewed {
		t.Errorf("an edited hunk kept its mark: %+v", hs)
	}

	// A hunk the file no longer has is refused.
	err := markHunks(t, e.c, e.uri, id, true, first.ID)
	if rpcCode(err) != protocol.CodeConflict || protocol.ReasonOf(err) != protocol.ReasonFileChanged {
		t.Errorf("marking a hunk that is gone: %v, want -32011 fileChanged", err)
	}
}

// hunkLines is a range target on a hunk's lines of the after side, as
// _meta.changesetd.hunks gives them.
func hunkLines(id string, h wireHunk) map[string]any {
	return lineTarget(id, h.NewStart-1, h.NewStart-1+h.NewLines-1)
}

// Keeping a hunk is staging its lines and undoing it is reverting them:
// each acts on that hunk alone.
func TestHunkKeepAndUndo(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"f.txt": numberedWith(40, nil)})
	writeFile(t, repo, "f.txt", numberedWith(40, map[int]string{3: "three", 35: "thirty-five"}))
	e := startOps(t, repo)
	e.waitOffered("stage", protocol.ScopeResource, protocol.ScopeRange)
	hs := hunksOfFile(findFile(e.m.Wait("two hunks", func(st protocol.ChangesetState) bool {
		return ready(st) && len(hunksOfFile(findFile(st, repo, "f.txt"))) == 2
	}), repo, "f.txt"))
	e.mustInvoke("stage", hunkLines(e.id("f.txt"), hs[0]), nil)
	if got := e.git("diff", "--cached", "--unified=0", "--", "f.txt"); !strings.Contains(got, "+three") || strings.Contains(got, "thirty-five") {
		t.Errorf("staged after keeping the first hunk:\n%s", got)
	}
	e.mustInvoke("revert", hunkLines(e.id("f.txt"), hs[1]), nil)
	if got := string(e.disk("f.txt")); got != numberedWith(40, map[int]string{3: "three"}) {
		t.Errorf("f.txt after undoing the second hunk:\n%s", got)
	}
}

// Two identical hunks (the same lines removed and added) each keep a mark
// of their own, and a hunk that was never shown never inherits one: when
// the agent repeats the edit above two marked identical hunks and then
// undoes one of them, the new hunk is unmarked and the file is not shown
// reviewed.
func TestIdenticalHunksKeepTheirOwnMarks(t *testing.T) {
	t.Parallel()
	x := map[int]string{10: "x", 20: "x", 30: "x"}
	repo := gitRepo(t, map[string]string{"f.txt": numberedWith(40, x)})
	writeFile(t, repo, "f.txt", numberedWith(40, map[int]string{10: "x", 20: "y", 30: "y"}))
	e := startOps(t, repo)
	id := e.id("f.txt")
	hunksAre := func(n int) func(protocol.ChangesetState) bool {
		return func(st protocol.ChangesetState) bool {
			return ready(st) && len(hunksOfFile(findFile(st, repo, "f.txt"))) == n
		}
	}
	hs := hunksOfFile(findFile(e.m.Wait("two identical hunks", hunksAre(2)), repo, "f.txt"))
	if hs[0].ID == hs[1].ID {
		t.Fatalf("identical hunks share an id: %+v", hs)
	}
	if err := markHunks(t, e.c, e.uri, id, true, hs[0].ID, hs[1].ID); err != nil {
		t.Fatal(err)
	}
	e.m.Wait("the file reviewed through its hunks", func(st protocol.ChangesetState) bool {
		f := findFile(st, repo, "f.txt")
		return ready(st) && f != nil && f.IsReviewed()
	})

	// The agent repeats the edit above them: a third identical hunk, never
	// shown to anyone, comes first.
	writeFile(t, repo, "f.txt", numberedWith(40, map[int]string{10: "y", 20: "y", 30: "y"}))
	st := e.m.Wait("three hunks", hunksAre(3))
	hs = hunksOfFile(findFile(st, repo, "f.txt"))
	if hs[0].Reviewed || !hs[1].Reviewed || !hs[2].Reviewed || findFile(st, repo, "f.txt").IsReviewed() {
		t.Errorf("after the edit was repeated above: %+v, file reviewed %v; want the new first hunk alone unmarked", hs, findFile(st, repo, "f.txt").IsReviewed())
	}

	// It undoes the last one: the new hunk is still unmarked.
	writeFile(t, repo, "f.txt", numberedWith(40, map[int]string{10: "y", 20: "y", 30: "x"}))
	st = e.m.Wait("two hunks again", hunksAre(2))
	f := findFile(st, repo, "f.txt")
	hs = hunksOfFile(f)
	if hs[0].Reviewed || !hs[1].Reviewed {
		t.Errorf("after one was undone: %+v; want the never-shown first hunk unmarked, the second marked", hs)
	}
	if f.IsReviewed() {
		t.Errorf("the file is shown reviewed, yet its first hunk was never shown")
	}
}

// Marking many files at once (a folder, or every file) publishes their
// hunks' marks as a refresh publishes changes: in chunks, or one
// contentChanged when most of the list changed, not a fileSet (and a copy
// of the whole list) for each file. Every file marked shows every hunk
// marked.
func TestMarkingManyFilesPublishesTheirHunksInChunks(t *testing.T) {
	t.Parallel()
	const n, marked = 800, 600 // most of the list
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("d%02d/f%03d.txt", i%20, i)] = "a\nb\nc\n"
	}
	repo := gitRepo(t, files)
	for name := range files {
		writeFile(t, repo, name, "a\nB\nc\n")
	}
	e := startOps(t, repo)
	st := e.m.Wait("every file changed", func(st protocol.ChangesetState) bool { return ready(st) && len(st.Files) == n })
	ids := make([]string, 0, marked)
	for _, f := range st.Files[:marked] {
		ids = append(ids, f.ID)
	}
	before := len(e.c.Envelopes(e.uri))
	review(t, e.c, e.uri, 1, true, ids...)
	// A second mark's echo comes after all that the first published.
	review(t, e.c, e.uri, 2, false, st.Files[n-1].ID)
	e.m.Wait("the second mark's echo", func(st protocol.ChangesetState) bool {
		for _, env := range e.c.Envelopes(e.uri)[before:] {
			if env.Origin != nil && env.Origin.ClientSeq == 2 {
				return true
			}
		}
		return false
	})
	st = e.m.State()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for i := range st.Files {
		f := &st.Files[i]
		hs := hunksOfFile(f)
		if len(hs) != 1 || hs[0].Reviewed != want[f.ID] || f.IsReviewed() != want[f.ID] {
			t.Fatalf("%s: reviewed %v, hunks %+v; want both %v", f.ID, f.IsReviewed(), hs, want[f.ID])
		}
	}
	// The echo, the marks as one contentChanged, the second echo and the
	// file it set.
	if got := len(e.c.Envelopes(e.uri)) - before; got > 5 {
		t.Errorf("marking %d files published %d actions; want the echo and their hunks in chunks", marked, got)
	}
}
