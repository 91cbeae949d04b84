package session

import (
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// LastKnower is implemented by workspaces that kept their uncommitted
// view from before the daemon started (a restart): the uncommitted
// changeset shows it at once, marked recomputing, while the workspace
// verifies it.
type LastKnower interface {
	// LastKnown returns the uncommitted changes as last computed, for
	// the same HEAD, index and ignore configuration as now; false when
	// there is none to trust, or once the workspace computed its own.
	LastKnown() (*ChangeList, bool)
}

// showLastKnown publishes the workspaces' last-known uncommitted view on
// a changeset that has none yet, with status recomputing: the first
// computation then publishes what differs from it, and ready. Nothing is
// shown unless every open workspace has a view to offer.
func (cs *csChannel) showLastKnown(s *Session) {
	if cs.loaded || cs.computing || cs.ref.Kind != protocol.KindUncommitted || s.workspaces == nil || len(cs.v.State.Files) > 0 {
		return
	}
	start := time.Now()
	var files []protocol.ChangesetFile
	origin := map[string]fileOrigin{}
	shown := false
	for i, e := range s.workspaces {
		if e.ws == nil {
			continue
		}
		lk, ok := e.ws.(LastKnower)
		if !ok {
			return
		}
		list, ok := lk.LastKnown()
		if !ok {
			return
		}
		shown = true
		for _, fc := range list.Files {
			f, o := s.fileOf(i, fc, cs)
			files = append(files, f)
			origin[f.ID] = o
		}
	}
	if !shown {
		return
	}
	if files == nil {
		files = []protocol.ChangesetFile{}
	}
	cs.origin = origin
	cs.commit(s, protocol.ChangesetContentChanged{Files: files, Operations: cs.operations(s)}, nil)
	cs.commit(s, protocol.ChangesetStatusChanged{Status: protocol.StatusRecomputing}, nil)
	cs.loaded = true
	s.log.Debug("last-known view shown", "changeset", cs.uri, "files", len(files), "took", time.Since(start))
}
