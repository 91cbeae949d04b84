package scm

// HeadBranch is the branch checked out ("" when HEAD is detached, with
// detached set) and its upstream as a revision ("origin/x"; "" when it
// has none that exists here).
func (r *Repo) HeadBranch() (branch, upstream string, detached bool, err error) {
	r.mu.Lock()
	hs, err := r.headLocked()
	r.mu.Unlock()
	if err != nil {
		return "", "", false, err
	}
	if hs.branch == "" {
		return "", "", true, nil
	}
	if up, _, ok := r.upstream(); ok {
		upstream = up
	}
	return hs.branch, upstream, false, nil
}
