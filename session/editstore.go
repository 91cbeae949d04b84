package session

import "encoding/json"

// EditStore is implemented by a Store that keeps edit-tool records
// (store.DB does). With one, a session's records survive a restart, kill
// -9 included: each editEvents request is written before it is answered.
// Without one they live as long as the process.
type EditStore interface {
	PutEdits(sessionID string, records []byte) error
	Edits(sessionID string) ([]byte, error)
}

// storedFileEdits is one file's records as stored.
type storedFileEdits struct {
	WS    int                `json:"ws"`
	Path  string             `json:"path"`
	Count int                `json:"count"`
	Recs  []storedEditRecord `json:"records"`
}

type storedEditRecord struct {
	Turn     string     `json:"turn,omitempty"`
	Event    EditOutput `json:"event"`
	OnDisk   string     `json:"onDisk,omitempty"`
	Mismatch bool       `json:"mismatch,omitempty"`
}

func (s *Session) editStore() EditStore {
	es, _ := s.m.opts.Store.(EditStore)
	return es
}

// saveEdits writes the session's edit records. On the actor.
func (s *Session) saveEdits() error {
	es := s.editStore()
	if es == nil {
		return nil
	}
	out := make([]storedFileEdits, 0, len(s.edits))
	for k, fe := range s.edits {
		sf := storedFileEdits{WS: k.ws, Path: k.path, Count: fe.count}
		for _, r := range fe.recs {
			sf.Recs = append(sf.Recs, storedEditRecord{Turn: r.turn, Event: r.ev, OnDisk: r.onDisk, Mismatch: r.mismatch})
		}
		out = append(out, sf)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return es.PutEdits(s.id, raw)
}

// loadEdits reads the stored edit records of a restored session. Records
// of a working directory the session no longer has are dropped.
func (s *Session) loadEdits() {
	es := s.editStore()
	if es == nil {
		return
	}
	raw, err := es.Edits(s.id)
	if err != nil || raw == nil {
		if err != nil {
			s.log.Error("cannot load the session's edit records", "err", err)
		}
		return
	}
	var files []storedFileEdits
	if err := json.Unmarshal(raw, &files); err != nil {
		s.log.Error("stored edit records are unreadable; starting without them", "err", err)
		return
	}
	for _, f := range files {
		if f.WS < 0 || f.WS >= len(s.dirs) || f.Path == "" {
			continue
		}
		fe := &fileEdits{count: f.Count}
		for _, r := range f.Recs {
			fe.recs = append(fe.recs, editRecord{turn: r.Turn, ev: r.Event, onDisk: r.OnDisk, mismatch: r.Mismatch})
		}
		if len(fe.recs) > maxEditRecords {
			fe.recs = fe.recs[len(fe.recs)-maxEditRecords:]
		}
		if s.edits == nil {
			s.edits = map[editKey]*fileEdits{}
		}
		s.edits[editKey{ws: f.WS, path: f.Path}] = fe
	}
}
