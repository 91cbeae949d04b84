package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/changesetd/changesetd/scm"
	"github.com/changesetd/changesetd/store"
)

// SessionID derives the id of the session the command line creates for a
// directory: from its absolute path and the root commit of its repository,
// so that a restart finds the same session, while another project mounted
// at the same path (every container's /workspace) gets its own. Without a
// root commit (no repository, an unborn branch) the id is the path's alone,
// as it was before repositories were named.
func SessionID(abs, root string) string {
	if root == "" {
		return StableID(abs)
	}
	return StableID(abs + "\x00" + root)
}

// StableID hashes s into an id shaped like a UUID.
func StableID(s string) string {
	h := sha256.Sum256([]byte(s))
	x := hex.EncodeToString(h[:16])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// RootCommit is the root commit of the repository containing dir, or ""
// when there is none or it has no commits yet.
func RootCommit(dir string) string {
	r, err := scm.Open(dir)
	if err != nil {
		return ""
	}
	root, _, err := r.RootCommit()
	if err != nil {
		return ""
	}
	return root
}

// SameRepository reports whether w's directory still holds the repository
// the session was made for. HEAD's commit at the session's start still
// being there answers in one lookup; otherwise (history rewritten and
// pruned since) the root commits are compared. Records without names
// (written before repositories were named, or of a directory that had no
// commits) are taken as they are.
func SameRepository(w store.WorkspaceRecord) (bool, string) {
	if w.Repo == "" && w.Head == "" {
		return true, ""
	}
	r, err := scm.Open(w.Dir)
	if err != nil {
		return false, "no repository there any more"
	}
	if w.Head != "" && r.HasCommit(w.Head) {
		return true, ""
	}
	root, _, err := r.RootCommit()
	if err == nil && root == w.Repo && root != "" {
		return true, ""
	}
	if root == "" {
		return false, "the repository there has no commits"
	}
	return false, fmt.Sprintf("the repository there has root commit %s, the session's had %s", short(root), short(w.Repo))
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	if oid == "" {
		return "none"
	}
	return oid
}

// NameRepositories fills in the repository names of a record written
// before they were kept, from what is at its directories now, and reports
// whether it changed anything.
func NameRepositories(rec *store.Session) bool {
	changed := false
	for i, w := range rec.Workspaces {
		if w.Repo != "" || w.Head != "" {
			continue
		}
		r, err := scm.Open(w.Dir)
		if err != nil {
			continue
		}
		if root, head, err := r.RootCommit(); err == nil && root != "" {
			rec.Workspaces[i].Repo, rec.Workspaces[i].Head = root, head
			changed = true
		}
	}
	return changed
}
