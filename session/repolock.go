package session

import (
	"slices"
	"sync"
)

// IndexHolder is implemented by workspaces of a git repository: IndexDir
// is the git directory holding the index their operations write (the
// repository's .git, or .git/worktrees/<name> for a linked worktree),
// with symbolic links resolved. Sessions on a repository and on any
// directory inside it share it; linked worktrees have their own index
// and HEAD, and git itself keeps what they share (objects, refs) safe.
type IndexHolder interface {
	IndexDir() string
}

// repoKey names the lock of the workspace e: its IndexDir, or the
// directory a workspace without one writes (Root).
func repoKey(e *workingDir) string {
	if h, ok := e.ws.(IndexHolder); ok {
		if d := h.IndexDir(); d != "" {
			return "git:" + d
		}
	}
	return "dir:" + e.root()
}

// repoLocks holds one FIFO lock per repository, across every session of
// the Manager: each operation that writes a working tree or an index
// takes its repository's lock before it reads what it checks and holds
// it until its last write. Places are taken in the order operations
// reach their session actors, and granted in that order.
type repoLocks struct {
	mu     sync.Mutex
	queues map[string][]*repoTurn // by key: the holder, then the waiters in order
}

// repoTurn is one place in a repository's queue.
type repoTurn struct {
	locks   *repoLocks
	key     string
	granted chan struct{} // closed when the place reaches the front
}

// enqueue takes the next place in key's queue, now.
func (l *repoLocks) enqueue(key string) *repoTurn {
	t := &repoTurn{locks: l, key: key, granted: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.queues == nil {
		l.queues = map[string][]*repoTurn{}
	}
	q := append(l.queues[key], t)
	l.queues[key] = q
	if len(q) == 1 {
		close(t.granted)
	}
	return t
}

// wait returns once the place holds the lock.
func (t *repoTurn) wait() { <-t.granted }

// release gives up the lock, or the place when it does not hold it yet;
// the next place in the queue gets the lock. A second call does nothing.
func (t *repoTurn) release() {
	l := t.locks
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queues[t.key]
	i := slices.Index(q, t)
	if i < 0 {
		return
	}
	q = slices.Delete(q, i, i+1)
	if len(q) == 0 {
		delete(l.queues, t.key)
		return
	}
	l.queues[t.key] = q
	if i == 0 {
		close(q[0].granted)
	}
}

// queued reports how many places key's queue has, the holder included.
func (l *repoLocks) queued(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queues[key])
}
