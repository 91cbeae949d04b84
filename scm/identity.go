package scm

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// maxRootWalk bounds the first-parent walk of RootCommit, so a pathological
// history costs a bounded time; the commit reached there names it instead.
// Git's own history has about 30,000 first-parent commits, Linux's about
// 90,000.
const maxRootWalk = 1_000_000

// RootCommit names the repository independently of where it is checked
// out: the commit reached from HEAD by following first parents until one
// has none. Clones of one project share it and unrelated projects do not;
// it does not move as commits are added or branches are switched (a branch
// with its own history is another project, for this purpose). It is empty
// while HEAD is unborn. head is HEAD's commit.
func (r *Repo) RootCommit() (root, head string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil || hs.commit.IsZero() {
		return "", "", err
	}
	h := hs.commit
	for range maxRootWalk {
		c, err := r.repo.CommitObject(h)
		if err != nil {
			return "", "", fmt.Errorf("scm: read commit %s: %w", h, err)
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return h.String(), hs.commit.String(), nil
}

// HasCommit reports whether the repository's object database holds the
// commit oid.
func (r *Repo) HasCommit(oid string) bool {
	h, err := parseOID(oid)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err = r.repo.Storer.EncodedObject(plumbing.CommitObject, h)
	return err == nil
}
