package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// The base of a session's branch changeset: the one chosen for the
// session (SetBranchBase, kept in the Store), else the daemon's
// Options.DefaultBase (its --base), else what the working tree's git says
// (the upstream of the current branch, else the remote's default branch,
// else main or master). The catalogue entry's description names the base
// and why it is the one.

// BranchBaser is implemented by git workspaces.
type BranchBaser interface {
	// BranchBase is the default base and the rule that chose it.
	BranchBase() (base, why string, err error)
	// ResolveBase checks that rev names a commit.
	ResolveBase(rev string) error
}

// BaseStore is implemented by a Store that keeps each session's chosen
// branch base (store.DB does).
type BaseStore interface {
	PutBranchBase(sessionID, base string) error
	BranchBase(sessionID string) (string, error)
}

// maxBaseLen bounds a chosen base: a revision, not a document.
const maxBaseLen = 256

func (s *Session) baseStore() BaseStore {
	bs, _ := s.m.opts.Store.(BaseStore)
	return bs
}

// loadBranchBase reads the base chosen for a restored session.
func (s *Session) loadBranchBase() {
	if bs := s.baseStore(); bs != nil {
		b, err := bs.BranchBase(s.id)
		if err != nil {
			s.log.Error("cannot load the session's branch base", "err", err)
		}
		s.branchBase = b
	}
}

// queryBase is the base to ask the workspaces for; "" lets each choose.
func (s *Session) queryBase() string {
	if s.branchBase != "" {
		return s.branchBase
	}
	return s.m.opts.DefaultBase
}

// branchDescription is the branch changeset's catalogue description. On
// the actor.
func (s *Session) branchDescription() string {
	base, why := s.branchBase, "chosen for this session"
	if base == "" && s.m.opts.DefaultBase != "" {
		base, why = s.m.opts.DefaultBase, "the daemon's --base"
	}
	if base == "" {
		for _, e := range s.workspaces {
			if bb, ok := e.ws.(BranchBaser); ok {
				if b, w, err := bb.BranchBase(); err == nil {
					base, why = b, w
				}
				break
			}
		}
	}
	if base == "" {
		return "Working tree against the merge base with the default branch (none found)"
	}
	return fmt.Sprintf("Working tree against the merge base with %s (%s)", base, why)
}

// SetBranchBase chooses the base of the session's branch changeset; ""
// goes back to the default. The base must name a commit in every git
// working directory of the session; it is stored before the catalogue and
// the branch changesets change.
func (m *Manager) SetBranchBase(ctx context.Context, sessionURI, base string) error {
	const method = "x-changesetd/setBranchBase"
	base = strings.TrimSpace(base)
	switch {
	case len(base) > maxBaseLen:
		return protocol.Errorf(protocol.CodeInvalidParams, "%s: base is %d bytes; at most %d", method, len(base), maxBaseLen)
	case strings.HasPrefix(base, "-") || strings.ContainsAny(base, " \t\r\n\x00"):
		return protocol.Errorf(protocol.CodeInvalidParams, "%s: base %q is not a revision", method, base)
	}
	s, ok := m.Session(sessionURI)
	if !ok {
		return protocol.Errorf(protocol.CodeSessionNotFound, "%s: session %s does not exist", method, sessionURI)
	}
	if err := s.awaitStarted(ctx, method); err != nil {
		return err
	}
	_, err := command(ctx, s, func() (struct{}, error) {
		if s.disposed {
			return struct{}{}, protocol.Errorf(protocol.CodeSessionNotFound, "%s: session %s was disposed", method, sessionURI)
		}
		gits := 0
		for _, e := range s.workspaces {
			bb, ok := e.ws.(BranchBaser)
			if !ok {
				continue
			}
			gits++
			if base != "" {
				if err := bb.ResolveBase(base); err != nil {
					return struct{}{}, protocol.Errorf(protocol.CodeInvalidParams, "%s: %v", method, err)
				}
			}
		}
		if gits == 0 {
			return struct{}{}, protocol.Errorf(protocol.CodeInvalidParams, "%s: session %s has no git working directory, so no branch changeset", method, sessionURI)
		}
		if bs := s.baseStore(); bs != nil {
			if err := bs.PutBranchBase(s.id, base); err != nil {
				return struct{}{}, fmt.Errorf("%s: %w", method, err)
			}
		}
		s.branchBase = base
		s.commitSession(protocol.SessionChangesetsChanged{Changesets: s.catalogue()}, nil)
		for _, cs := range s.changesets {
			if cs.ref.Kind == protocol.KindBranch && cs.active {
				cs.pendingAll = true
				cs.refresh(s)
			}
		}
		return struct{}{}, nil
	})
	return err
}
