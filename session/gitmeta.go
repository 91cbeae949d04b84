package session

import (
	"reflect"

	"github.com/changesetd/changesetd/protocol"
)

// GitStater is implemented by git workspaces: the branch checked out, its
// upstream, and whether HEAD is detached.
type GitStater interface {
	GitState() (branch, upstream string, detached bool, err error)
}

// gitMeta is the session's _meta.git, in the shape VS Code reads it
// (ISessionGitState): the branch of its first git working directory, the
// branch changeset's base and the branch's upstream. Unknown fields are
// left out rather than guessed. nil when no working directory is a git
// repository. On the actor.
func (s *Session) gitMeta() protocol.Object {
	for _, e := range s.workspaces {
		gs, ok := e.ws.(GitStater)
		if e.ws == nil || isPlain(e.ws) || !ok {
			continue
		}
		branch, upstream, detached, err := gs.GitState()
		if err != nil {
			return nil
		}
		meta := protocol.Object{}
		if branch != "" {
			meta["branchName"] = branch
		}
		if detached {
			meta["isDetachedHead"] = true
		}
		if upstream != "" {
			meta["upstreamBranchName"] = upstream
		}
		if base := s.baseName(e); base != "" {
			meta["baseBranchName"] = base
		}
		return meta
	}
	return nil
}

// baseName is the base of the branch changeset as branchDescription
// names it.
func (s *Session) baseName(e *workingDir) string {
	if s.branchBase != "" {
		return s.branchBase
	}
	if s.m.opts.DefaultBase != "" {
		return s.m.opts.DefaultBase
	}
	if bb, ok := e.ws.(BranchBaser); ok {
		if b, _, err := bb.BranchBase(); err == nil {
			return b
		}
	}
	return ""
}

// refreshGitMeta republishes the session's _meta with its git state when
// that changed: when the session's workspaces open, and whenever a client
// subscribes to the session, so a client opening it sees the branch
// checked out now. On the actor.
func (s *Session) refreshGitMeta() {
	if s.disposed {
		return
	}
	meta := s.gitMeta()
	old, _ := s.state.Meta["git"].(protocol.Object)
	if reflect.DeepEqual(meta, old) || (meta == nil && s.state.Meta["git"] == nil) {
		return
	}
	next := protocol.Object{}
	for k, v := range s.state.Meta {
		next[k] = v
	}
	if meta == nil {
		delete(next, "git")
	} else {
		next["git"] = meta
	}
	s.commitSession(protocol.SessionMetaChanged{Meta: next}, nil)
}
