package source

import (
	"path/filepath"

	"github.com/changesetd/changesetd/session"
)

var _ session.IndexHolder = (*gitWorkspace)(nil)

// IndexDir is session.IndexHolder: the git directory whose index the
// workspace's operations write, the same for a session on the
// repository's top and on any directory inside it; a linked worktree has
// its own.
func (w *gitWorkspace) IndexDir() string {
	d := w.repo.GitDir()
	if r, err := filepath.EvalSymlinks(d); err == nil {
		return r
	}
	return filepath.Clean(d)
}
