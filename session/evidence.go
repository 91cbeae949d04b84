package session

import (
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/attrib"
)

// Evidence of who wrote what. Every edit event (an agent's post-write
// hook through "changesetd turn edit --hook", "changesetd edits", or
// x-changesetd/editEvents) is also a report that an agent wrote a file:
// the daemon keeps, for each, the agent's chat, the time, the file as it
// read it when the report arrived, and what the agent said it wrote (the
// whole content, or its old-to-new replacements). Package attrib turns
// these into an author per hunk (authors.go).

// Bounds of what is kept: the records of a session, the content of a
// file in one record, the replacements' text of one record.
const (
	maxEvidence             = 512
	maxEvidenceContent      = 256 << 10
	maxEvidenceReplacements = 64 << 10
)

// EvidenceStore is implemented by a Store that keeps the evidence
// (store.DB does): one record is written per report, before the report is
// answered, so that attribution survives a restart.
type EvidenceStore interface {
	AddEvidence(sessionID string, seq uint64, record []byte, keepFrom uint64) error
	Evidence(sessionID string) ([][]byte, error)
}

// EditReplacement is one old-to-new string replacement an agent's edit
// tool made, in an edit event's "replacements".
type EditReplacement struct {
	Old string `json:"old"`
	New string `json:"new"`
	All bool   `json:"all,omitempty"`
}

// evidence is one report of a write, as kept.
type evidence struct {
	Seq  uint64    `json:"seq"`
	At   time.Time `json:"at"`
	Chat string    `json:"chat"` // the chat key; "" the default chat
	// Named: the report names its agent (or one agent's turn ran when it
	// came); otherwise the write is an agent's, but which is unknown.
	Named bool   `json:"named"`
	WS    int    `json:"ws"`
	Path  string `json:"path"`
	// Content is the file as read when the report arrived (Known), nil
	// when it was absent.
	Content      []byte            `json:"content,omitempty"`
	Known        bool              `json:"known"`
	Claimed      []byte            `json:"claimed,omitempty"`
	HasClaimed   bool              `json:"hasClaimed,omitempty"`
	Mismatch     bool              `json:"mismatch,omitempty"`
	Replacements []EditReplacement `json:"replacements,omitempty"`
}

// evidenceLog is a session's evidence. On the actor.
type evidenceLog struct {
	recs []evidence // in arrival order, at most maxEvidence
	next uint64     // the seq of the next record
	// reporting are the chats that reported a write: their turns' time
	// is not unreported time.
	reporting map[string]bool
	// dropped is, per file, the time of its latest record dropped for the
	// bound: what changed before it cannot be followed.
	dropped map[editKey]time.Time
	// gen changes with every record and every turn boundary.
	gen   uint64
	cache map[string]fileAuthors
}

// readEvidence reads what a file of the session holds now, through
// Options.ReadFile: known is false when it cannot be read or is over the
// bound, and an absent file is known, nil.
func (m *Manager) readEvidence(root, rel string) (content []byte, known bool) {
	if m.opts.ReadFile == nil {
		return nil, false
	}
	abs := filepath.Join(root, filepath.FromSlash(rel))
	b, err := m.opts.ReadFile(FileURI(abs), abs, maxEvidenceContent, m.sessionDirOf)
	if protocol.ReasonOf(err) == protocol.ReasonFileNotFound {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	if b == nil {
		b = []byte{}
	}
	return b, true
}

// newEvidence makes the record of an event, off the actor: content is
// what readEvidence found.
func newEvidence(key editKey, ev EditOutput, content []byte, known, mismatch bool) evidence {
	e := evidence{WS: key.ws, Path: key.path, Content: content, Known: known, Mismatch: mismatch}
	if ev.Content != nil {
		if len(*ev.Content) <= maxEvidenceContent {
			e.Claimed, e.HasClaimed = []byte(*ev.Content), true
		} else {
			e.Mismatch = true // not kept: it cannot be checked
		}
	}
	n := 0
	for _, r := range ev.Replacements {
		n += len(r.Old) + len(r.New)
	}
	if n <= maxEvidenceReplacements {
		e.Replacements = ev.Replacements
	} else {
		e.Mismatch = true
	}
	return e
}

// addEvidence records e, arrived now, for the chat that wrote it: the
// event's agent, or else the chat of the one running turn. It reports
// whether the evidence is new in kind (the session's first, or a chat's
// first report), which changes the authors of files it is not about. On
// the actor.
func (s *Session) addEvidence(e evidence, agent string) (newKind bool) {
	log := &s.evidence
	e.At = s.m.opts.Now()
	e.Chat, e.Named = agent, agent != ""
	if agent == "" {
		var running []*turn
		for _, t := range s.turns {
			if t.running() {
				running = append(running, t)
			}
		}
		if len(running) == 1 {
			e.Chat, e.Named = running[0].chat, true
		}
	}
	newKind = len(log.recs) == 0 && len(log.reporting) == 0 || (e.Named && !log.reporting[e.Chat])
	log.next++
	e.Seq = log.next
	log.recs = append(log.recs, e)
	if e.Named {
		if log.reporting == nil {
			log.reporting = map[string]bool{}
		}
		log.reporting[e.Chat] = true
	}
	for len(log.recs) > maxEvidence {
		old := log.recs[0]
		if log.dropped == nil {
			log.dropped = map[editKey]time.Time{}
		}
		log.dropped[editKey{old.WS, old.Path}] = old.At
		log.recs = log.recs[1:]
	}
	log.gen++
	es, _ := s.m.opts.Store.(EvidenceStore)
	if es == nil {
		return newKind
	}
	raw, err := json.Marshal(e)
	if err == nil {
		err = es.AddEvidence(s.id, e.Seq, raw, log.recs[0].Seq)
	}
	if err != nil {
		s.log.Error("cannot save the evidence of a write", "path", e.Path, "err", err)
	}
	return newKind
}

// loadEvidence reads the stored evidence of a restored session.
func (s *Session) loadEvidence() {
	es, _ := s.m.opts.Store.(EvidenceStore)
	if es == nil {
		return
	}
	recs, err := es.Evidence(s.id)
	if err != nil {
		s.log.Error("cannot load the evidence of who wrote what", "err", err)
		return
	}
	log := &s.evidence
	for _, raw := range recs {
		var e evidence
		if json.Unmarshal(raw, &e) != nil || e.WS < 0 || e.WS >= len(s.dirs) || e.Path == "" {
			continue
		}
		log.recs = append(log.recs, e)
		log.next = max(log.next, e.Seq)
		if e.Named {
			if log.reporting == nil {
				log.reporting = map[string]bool{}
			}
			log.reporting[e.Chat] = true
		}
	}
	log.gen++
}

func (r EditReplacement) attrib() attrib.Replacement {
	return attrib.Replacement{Old: r.Old, New: r.New, All: r.All}
}
