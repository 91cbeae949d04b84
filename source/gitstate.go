package source

// GitState is the branch checked out, its upstream, and whether HEAD is
// detached (session.GitStater).
func (w *gitWorkspace) GitState() (branch, upstream string, detached bool, err error) {
	return w.repo.HeadBranch()
}
