package session

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// EditStore is implemented by a Store that keeps edit-tool records
// (store.DB does). With one, a session's records survive a restart, kill
// -9 included: each editEvents request is written before it is answered,
// the records of the files it touched and nothing else.
type EditStore interface {
	// PutFileEdits writes the records of the files named by their key
	// (editFileKey), in one durable transaction.
	PutFileEdits(sessionID string, files map[string][]byte) error
	// FileEdits returns what is stored, oldest form first: a JSON array
	// of files (the whole records as earlier versions wrote them) and
	// one JSON object per file, which supersede it.
	FileEdits(sessionID string) ([][]byte, error)
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

// editFileKey is a file's key in the store: its working directory's
// index and its path.
func editFileKey(k editKey) string { return strconv.Itoa(k.ws) + "/" + k.path }

// saveEdits writes the edit records of the files keys name: a request's
// cost follows what it touched, not everything the session holds. On
// the actor.
func (s *Session) saveEdits(keys []editKey) error {
	es := s.editStore()
	if es == nil || len(keys) == 0 {
		return nil
	}
	files := make(map[string][]byte, len(keys))
	for _, k := range keys {
		fe := s.edits[k]
		if fe == nil {
			files[editFileKey(k)] = nil
			continue
		}
		sf := storedFileEdits{WS: k.ws, Path: k.path, Count: fe.count}
		for _, r := range fe.recs {
			sf.Recs = append(sf.Recs, storedEditRecord{Turn: r.turn, Event: r.ev, OnDisk: r.onDisk, Mismatch: r.mismatch})
		}
		raw, err := json.Marshal(sf)
		if err != nil {
			return err
		}
		files[editFileKey(k)] = raw
	}
	return es.PutFileEdits(s.id, files)
}

// loadEdits reads the stored edit records of a restored session. Records
// of a working directory the session no longer has are dropped.
func (s *Session) loadEdits() {
	es := s.editStore()
	if es == nil {
		return
	}
	sets, err := es.FileEdits(s.id)
	if err != nil {
		s.log.Error("cannot load the session's edit records", "err", err)
		return
	}
	for _, raw := range sets {
		var files []storedFileEdits
		if raw = bytes.TrimSpace(raw); len(raw) > 0 && raw[0] == '[' {
			err = json.Unmarshal(raw, &files)
		} else {
			var f storedFileEdits
			err = json.Unmarshal(raw, &f)
			files = []storedFileEdits{f}
		}
		if err != nil {
			s.log.Error("stored edit records are unreadable; starting without them", "err", err)
			continue
		}
		for _, f := range files {
			s.restoreFileEdits(f)
		}
	}
}

// restoreFileEdits puts one file's stored records in place of any
// restored before. On the actor.
func (s *Session) restoreFileEdits(f storedFileEdits) {
	if f.WS < 0 || f.WS >= len(s.dirs) || f.Path == "" {
		return
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
