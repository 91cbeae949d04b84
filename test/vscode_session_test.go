package test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestSessionAsVSCodeShowsIt: what VS Code's Agents window reads of a
// session beyond the changesets. The advertised agent says what it is;
// the session and its summary carry their project; the session's
// _meta.git names the branch, its upstream and the branch changeset's
// base; its chats are read-only; and annotation entries name their
// author, "user" for a reviewer's and "agent" for the agent's reply.
func TestSessionAsVSCodeShowsIt(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"a.txt": "a\n"})
	git(t, repo, "checkout", "-q", "-b", "feature")
	git(t, repo, "config", "branch.feature.remote", ".")
	git(t, repo, "config", "branch.feature.merge", "refs/heads/main")
	d := startDaemon(t, repo)
	c := d.client(t, "vscode")

	var root protocol.RootState
	raw, _ := subscribe(t, c, protocol.RootURI)
	json.Unmarshal(raw, &root)
	if len(root.Agents) != 1 || !strings.Contains(root.Agents[0].DisplayName, "read-only") {
		t.Errorf("agents %+v, want one whose name says it is read-only", root.Agents)
	}

	sum := onlySession(t, c)
	wantProject := map[string]any{"uri": "file://" + repo, "displayName": filepath.Base(repo)}
	if sum.Project["uri"] != wantProject["uri"] || sum.Project["displayName"] != wantProject["displayName"] {
		t.Errorf("summary project %v, want %v", sum.Project, wantProject)
	}
	catalogue(t, c, sum.Resource) // the working directory is open
	raw, _ = subscribe(t, c, sum.Resource)
	var st protocol.SessionState
	json.Unmarshal(raw, &st)
	if st.Project["uri"] != wantProject["uri"] {
		t.Errorf("session project %v, want %v", st.Project, wantProject)
	}
	gitMeta, _ := st.Meta["git"].(map[string]any)
	if gitMeta["branchName"] != "feature" || gitMeta["upstreamBranchName"] != "main" || gitMeta["baseBranchName"] != "main" {
		t.Errorf("_meta.git = %v, want branch feature, upstream and base main", st.Meta["git"])
	}
	for _, ch := range st.Chats {
		if ch.Interactivity != protocol.ChatReadOnly {
			t.Errorf("chat %s interactivity %q, want read-only", ch.Resource, ch.Interactivity)
		}
	}

	turn := turnStart(t, c, sum.Resource, "a turn")
	m := mirrorAnnotations(t, c, requireAnnotationsChannel(t, c, sum))
	annotate(t, m, 1, newAnnotation("n1", turn, "file://"+repo+"/a.txt", nil, "e1", "Why?"))
	d.cliOK(t, "", "annotations", "reply", "n1", "Because.", "--dir", repo)
	a := waitFor(m, "the agent's reply", "n1", func(a *protocol.Annotation) bool { return a != nil && len(a.Entries) == 2 })
	for i, want := range []string{"user", "agent"} {
		fb, _ := a.Entries[i].Meta[protocol.MetaFeedback].(map[string]any)
		if fb["author"] != want {
			t.Errorf("entry %s: vscode.agentFeedback %v, want author %s", a.Entries[i].ID, a.Entries[i].Meta[protocol.MetaFeedback], want)
		}
	}
}
