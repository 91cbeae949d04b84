package scm

import (
	"fmt"
)

// HeadTree returns HEAD's commit and its root tree id; both are "" on an
// unborn branch.
func (r *Repo) HeadTree() (commit, tree string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil {
		return "", "", err
	}
	if hs.commit.IsZero() {
		return "", "", nil
	}
	c, err := r.repo.CommitObject(hs.commit)
	if err != nil {
		return "", "", fmt.Errorf("scm: read HEAD commit %s: %w", hs.commit, err)
	}
	return hs.commit.String(), c.TreeHash.String(), nil
}
