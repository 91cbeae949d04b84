package source

// BranchBase is the base a branch changeset of this working tree compares
// with when none is chosen, and which rule chose it (see
// scm.Repo.BranchBase).
func (w *gitWorkspace) BranchBase() (string, string, error) { return w.repo.BranchBase() }

// ResolveBase checks that rev names a commit of this repository.
func (w *gitWorkspace) ResolveBase(rev string) error { return w.repo.ResolveBase(rev) }
