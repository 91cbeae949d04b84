package scm

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// BranchBase is the branch a branch changeset compares with by default:
// the upstream of the current branch (branch.<name>.remote and .merge,
// when that ref exists here), else the remote's default branch
// (origin/HEAD), else main or master (local, then origin's). Why says
// which rule chose it: "the upstream of <branch>" or "the default
// branch".
func (r *Repo) BranchBase() (base, why string, err error) {
	if up, branch, ok := r.upstream(); ok {
		return up, "the upstream of " + branch, nil
	}
	b, err := r.DefaultBaseBranch()
	if err != nil {
		return "", "", err
	}
	return b, "the default branch", nil
}

// upstream is the current branch's upstream as a revision ("origin/x", or
// a local branch for remote "."), and the branch's name.
func (r *Repo) upstream() (string, string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil || hs.branch == "" {
		return "", "", false
	}
	cfg, err := r.repo.Config()
	if err != nil {
		return "", "", false
	}
	bc, ok := cfg.Branches[hs.branch]
	if !ok || bc.Merge == "" || bc.Remote == "" {
		return "", "", false
	}
	var ref plumbing.ReferenceName
	if bc.Remote == "." {
		ref = bc.Merge
	} else {
		ref = plumbing.NewRemoteReferenceName(bc.Remote, bc.Merge.Short())
	}
	if _, err := r.repo.Reference(ref, true); err != nil {
		return "", "", false
	}
	return ref.Short(), hs.branch, true
}

// ResolveBase checks that rev names a commit here, with an error that
// says so.
func (r *Repo) ResolveBase(rev string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.repo.ResolveRevision(plumbing.Revision(rev)); err != nil {
		return fmt.Errorf("%q names no commit in %s: %w", rev, r.root, err)
	}
	return nil
}
