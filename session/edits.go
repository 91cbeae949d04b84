package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/protocol"
)

// Edit events: an edit tool's report of what it wrote (its EditOutput
// NDJSON records). The daemon learns of an edit the moment the tool
// reports it rather than when the file watcher notices, and notices edits
// the watcher cannot see at all (polling on a network file system, where
// an edit that keeps the size and the modification time looks like no
// change). Each event re-reads its path at once, checks the tool's
// checksum_after against the bytes on disk, and is recorded on the file,
// attributed to the running turn, as _meta.changesetd.edits.

// EditReader is implemented by workspaces that take edit events.
type EditReader interface {
	// Edited forgets what the workspace has cached about path (relative
	// to Root) so that the next look re-reads it whatever its stat data
	// says, marks it changed for the next turn boundary, and returns the
	// BLAKE3 hash (hex) of its bytes now.
	Edited(path string) (blake3 string, err error)
}

// EditOutput is one event of an edit tool, as its NDJSON schema has it.
// Only path is required; the rest is recorded as reported.
type EditOutput struct {
	Type            string   `json:"type"`
	Path            string   `json:"path"`
	Edits           *uint64  `json:"edits"`
	Mode            string   `json:"mode"`
	BytesBefore     *uint64  `json:"bytes_before"`
	BytesAfter      *uint64  `json:"bytes_after"`
	ChecksumBefore  string   `json:"checksum_before"`
	ChecksumAfter   string   `json:"checksum_after"`
	LinesBefore     *uint64  `json:"lines_before"`
	LinesAfter      *uint64  `json:"lines_after"`
	ElapsedMS       *uint64  `json:"elapsed_ms"`
	Fuzzy           *bool    `json:"fuzzy"`
	Strategy        *string  `json:"strategy"`
	StrategiesTried *uint64  `json:"strategies_tried"`
	Similarity      *float64 `json:"similarity"`
	MtimePreserved  *bool    `json:"mtime_preserved"`
	MatchCount      *uint64  `json:"match_count"`
	IndentAdjusted  *bool    `json:"indent_adjusted"`
	WriteStrategy   string   `json:"write_strategy"`
	OK              *bool    `json:"ok"`

	// Who wrote it and what, for attribution (evidence.go): the agent
	// (its chat key: the hook's session id), the whole content it wrote,
	// or the replacements it made.
	Agent        string            `json:"agent,omitempty"`
	Content      *string           `json:"content,omitempty"`
	Replacements []EditReplacement `json:"replacements,omitempty"`
}

// EditEventsResult says which events counted. Errors name each bad event
// by its 0-based index in the request.
type EditEventsResult struct {
	Applied int              `json:"applied"`
	Errors  []EditEventError `json:"errors,omitempty"`
}

// EditEventError is one event that was not applied.
type EditEventError struct {
	Index   int    `json:"index"`
	Message string `json:"message"`
}

// maxEditRecords bounds the events kept per file; count keeps the total.
const maxEditRecords = 20

// A request carries at most maxEditEvents events, and each recorded
// string field at most maxEditField bytes (a path's PATH_MAX; checksums
// and modes are far shorter): past either the request is refused whole,
// since the records are kept, published with their file and stored.
const (
	maxEditEvents = 1000
	maxEditField  = 4096
)

// checkEditFields refuses an event whose recorded strings are too long.
func checkEditFields(i int, ev EditOutput) error {
	strategy := ""
	if ev.Strategy != nil {
		strategy = *ev.Strategy
	}
	for _, f := range []struct{ name, v string }{
		{"path", ev.Path}, {"type", ev.Type}, {"mode", ev.Mode},
		{"checksum_before", ev.ChecksumBefore}, {"checksum_after", ev.ChecksumAfter},
		{"strategy", strategy}, {"write_strategy", ev.WriteStrategy},
	} {
		if len(f.v) > maxEditField {
			return protocol.Errorf(protocol.CodeInvalidParams, "editEvents: event %d: field %s is %d bytes, more than the %d an event may have; nothing was recorded", i, f.name, len(f.v), maxEditField)
		}
	}
	return nil
}

type editKey struct {
	ws   int
	path string // relative to the workspace root
}

// editRecord is one applied event.
type editRecord struct {
	turn     string // the turn running when it arrived; "" outside turns
	ev       EditOutput
	onDisk   string // BLAKE3 of the file when the event arrived
	mismatch bool   // checksum_after differs from onDisk
}

// DecodeEditOutput decodes one event and checks its fields' types, with
// an error that names the field.
func DecodeEditOutput(raw []byte) (EditOutput, error) {
	var ev EditOutput
	if err := json.Unmarshal(raw, &ev); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return ev, fmt.Errorf("field %s must be %s, not %s", te.Field, jsonKind(te.Type.String()), te.Value)
		case errors.As(err, &te):
			return ev, fmt.Errorf("an event must be a JSON object, not %s", te.Value)
		case errors.As(err, &se):
			return ev, fmt.Errorf("not JSON: %v", err)
		}
		return ev, err
	}
	if ev.Path == "" {
		return ev, errors.New("field path is missing or empty")
	}
	if ev.Agent != "" && !turnIDPattern.MatchString(ev.Agent) {
		return ev, errors.New("field agent must be 1-128 letters, digits or ._~-")
	}
	return ev, nil
}

func jsonKind(goType string) string {
	switch {
	case strings.Contains(goType, "int"):
		return "a non-negative integer"
	case strings.Contains(goType, "float"):
		return "a number"
	case strings.Contains(goType, "bool"):
		return "a boolean"
	case strings.Contains(goType, "string"):
		return "a string"
	}
	return goType
}

// EditEvents applies an edit tool's events to a session. Relative paths
// are relative to the session's first working directory. A bad event (not
// an object, wrong field types, a path outside the session) is reported
// by index and the others still count.
func (m *Manager) EditEvents(ctx context.Context, sessionURI string, events []json.RawMessage) (EditEventsResult, error) {
	s, ok := m.Session(sessionURI)
	if !ok {
		return EditEventsResult{}, protocol.Errorf(protocol.CodeSessionNotFound, "editEvents: session %s does not exist", sessionURI)
	}
	type target struct {
		i   int
		ev  EditOutput
		key editKey
		ws  Workspace
	}
	type resolution struct {
		todo []target
		errs []EditEventError
	}
	if len(events) > maxEditEvents {
		return EditEventsResult{}, protocol.Errorf(protocol.CodeInvalidParams, "editEvents: %d events in one request, more than the %d one may carry; nothing was recorded: send them in several requests", len(events), maxEditEvents)
	}
	res := EditEventsResult{}
	decoded := make([]EditOutput, len(events))
	bad := make([]bool, len(events))
	for i, raw := range events {
		ev, err := DecodeEditOutput(raw)
		if err != nil {
			res.Errors = append(res.Errors, EditEventError{Index: i, Message: err.Error()})
			bad[i] = true
			continue
		}
		if err := checkEditFields(i, ev); err != nil {
			return EditEventsResult{}, err
		}
		decoded[i] = ev
	}
	if err := s.awaitStarted(ctx, "editEvents"); err != nil {
		return EditEventsResult{}, err
	}
	// Resolve paths on the actor, which owns the workspaces.
	resolved, err := query(ctx, s, func() (resolution, error) {
		var out resolution
		for i, ev := range decoded {
			if bad[i] {
				continue
			}
			key, ws, err := s.resolveEditPath(ev.Path)
			if err != nil {
				out.errs = append(out.errs, EditEventError{Index: i, Message: err.Error()})
				continue
			}
			out.todo = append(out.todo, target{i: i, ev: ev, key: key, ws: ws})
		}
		return out, nil
	})
	if err != nil {
		return EditEventsResult{}, err
	}
	todo := resolved.todo
	res.Errors = append(res.Errors, resolved.errs...)
	// Re-read every path now, off the actor.
	recs := make([]editRecord, len(todo))
	evs := make([]evidence, len(todo))
	for j, t := range todo {
		rec := editRecord{ev: t.ev}
		content, known := m.readEvidence(t.ws.Root(), t.key.path)
		if er, ok := t.ws.(EditReader); ok {
			sum, err := er.Edited(t.key.path)
			if err == nil {
				rec.onDisk = sum
			}
			// A failed run (ok: false) wrote nothing to check.
			want := strings.ToLower(strings.TrimPrefix(t.ev.ChecksumAfter, "blake3:"))
			rec.mismatch = want != "" && (t.ev.OK == nil || *t.ev.OK) && want != rec.onDisk
		}
		evs[j] = newEvidence(t.key, t.ev, content, known, rec.mismatch)
		// The content and replacements are evidence, not edit records.
		rec.ev.Content, rec.ev.Replacements = nil, nil
		recs[j] = rec
	}
	applied, err := command(ctx, s, func() (int, error) {
		if s.disposed {
			return 0, protocol.Errorf(protocol.CodeSessionNotFound, "editEvents: session %s was disposed", sessionURI)
		}
		turn := ""
		if t := s.activeTurn(); t != nil {
			turn = t.id
		}
		touched := map[int][]string{}
		var keys []editKey
		seen := map[editKey]bool{}
		everything := false // a new kind of evidence: every file's authors may change
		for j, t := range todo {
			rec := recs[j]
			rec.turn = turn
			if s.edits == nil {
				s.edits = map[editKey]*fileEdits{}
			}
			fe := s.edits[t.key]
			if fe == nil {
				fe = &fileEdits{}
				s.edits[t.key] = fe
			}
			if !seen[t.key] {
				seen[t.key] = true
				keys = append(keys, t.key)
			}
			fe.add(rec)
			if t.ev.OK == nil || *t.ev.OK { // a failed edit wrote nothing
				everything = s.addEvidence(evs[j], t.ev.Agent) || everything
			}
			touched[t.key.ws] = append(touched[t.key.ws], t.key.path)
		}
		if len(todo) > 0 {
			// Durable before the answer; a failed write keeps the records
			// for this run rather than losing what the tool reported.
			if err := s.saveEdits(keys); err != nil {
				s.log.Error("cannot save the edit records", "err", err)
			}
		}
		for _, cs := range s.changesets {
			if everything && cs.active {
				cs.reattribute(s)
			}
			if !cs.active || !cs.live(s) {
				continue
			}
			for ws, paths := range touched {
				cs.changed(s, ws, paths, false)
			}
		}
		return len(todo), nil
	})
	if err != nil {
		return EditEventsResult{}, err
	}
	res.Applied = applied
	slices.SortFunc(res.Errors, func(a, b EditEventError) int { return a.Index - b.Index })
	return res, nil
}

// resolveEditPath finds the workspace of an event's path and the path
// relative to its root. On the actor.
func (s *Session) resolveEditPath(p string) (editKey, Workspace, error) {
	if len(s.workspaces) == 0 {
		return editKey{}, nil, errors.New("the session has no working directory")
	}
	abs := filepath.FromSlash(p)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(s.workspaces[0].dir, abs)
	}
	abs = filepath.Clean(abs)
	// Resolve links in the directory part, as the session's directories are.
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(d, filepath.Base(abs))
	}
	for i, e := range s.workspaces {
		if e.ws == nil {
			continue
		}
		root := e.ws.Root()
		rel, ok := confine.Rel(root, abs)
		if !ok || rel == "." || !confine.Contains(e.dir, abs) {
			continue
		}
		if rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
			return editKey{}, nil, fmt.Errorf("path %s is inside .git", p)
		}
		return editKey{ws: i, path: filepath.ToSlash(rel)}, e.ws, nil
	}
	return editKey{}, nil, fmt.Errorf("path %s is outside the session's working directories (%s)", p, strings.Join(s.dirs, ", "))
}

// fileEdits is what tools reported for one file.
type fileEdits struct {
	count int
	recs  []editRecord // the latest maxEditRecords
}

func (fe *fileEdits) add(r editRecord) {
	fe.count++
	fe.recs = append(fe.recs, r)
	if len(fe.recs) > maxEditRecords {
		fe.recs = slices.Delete(fe.recs, 0, len(fe.recs)-maxEditRecords)
	}
}

// editsMeta builds _meta.changesetd.edits of a file for a changeset: the
// events of its turn for a turn changeset, all of them otherwise. nil
// when there are none.
func (s *Session) editsMeta(cs *csChannel, ws int, path string) protocol.Object {
	fe := s.edits[editKey{ws, path}]
	if fe == nil {
		return nil
	}
	turnOnly := ""
	if cs.ref.Kind == protocol.KindTurn {
		turnOnly = cs.ref.Vars["turnId"]
	}
	var (
		events   []any
		modes    []any
		fuzzy    bool
		mismatch bool
		n        int
	)
	for _, r := range fe.recs {
		if turnOnly != "" && r.turn != turnOnly {
			continue
		}
		n++
		ev := protocol.Object{}
		if r.turn != "" {
			ev["turn"] = r.turn
		}
		if r.ev.Type != "" {
			ev["type"] = r.ev.Type
		}
		if r.ev.Mode != "" {
			ev["mode"] = r.ev.Mode
			if !slices.Contains(modes, any(r.ev.Mode)) {
				modes = append(modes, r.ev.Mode)
			}
		}
		putNum(ev, "edits", r.ev.Edits)
		putNum(ev, "match_count", r.ev.MatchCount)
		putNum(ev, "strategies_tried", r.ev.StrategiesTried)
		if r.ev.Fuzzy != nil {
			ev["fuzzy"] = *r.ev.Fuzzy
			fuzzy = fuzzy || *r.ev.Fuzzy
		}
		if r.ev.Strategy != nil {
			ev["strategy"] = *r.ev.Strategy
		}
		if r.ev.Similarity != nil {
			ev["similarity"] = *r.ev.Similarity
		}
		if r.ev.IndentAdjusted != nil {
			ev["indent_adjusted"] = *r.ev.IndentAdjusted
		}
		if r.ev.MtimePreserved != nil {
			ev["mtime_preserved"] = *r.ev.MtimePreserved
		}
		if r.ev.ChecksumAfter != "" {
			ev["checksum_after"] = r.ev.ChecksumAfter
			if r.mismatch {
				ev["checksumMismatch"] = true
				ev["checksumOnDisk"] = r.onDisk
				mismatch = true
			}
		}
		events = append(events, ev)
	}
	if n == 0 {
		return nil
	}
	out := protocol.Object{"count": n, "fuzzy": fuzzy, "events": events}
	if turnOnly == "" {
		out["count"] = fe.count
	}
	if modes != nil {
		out["modes"] = modes
	}
	if mismatch {
		out["checksumMismatch"] = true
	}
	return out
}

func putNum(o protocol.Object, k string, v *uint64) {
	if v != nil {
		o[k] = *v
	}
}

// withEdits returns meta with _meta.changesetd.edits set, copying what it
// changes: published _meta is never modified.
func withEdits(meta protocol.Object, edits protocol.Object) protocol.Object {
	if edits == nil {
		return meta
	}
	return withOwn(meta, func(own protocol.Object) { own["edits"] = edits })
}

// withOwn returns a copy of meta whose _meta.changesetd is a copy that
// set has added to: a published file's meta is never changed in place.
func withOwn(meta protocol.Object, set func(own protocol.Object)) protocol.Object {
	out := make(protocol.Object, len(meta)+1)
	for k, v := range meta {
		out[k] = v
	}
	prev, _ := meta["changesetd"].(protocol.Object)
	own := make(protocol.Object, len(prev)+4)
	for k, v := range prev {
		own[k] = v
	}
	set(own)
	out["changesetd"] = own
	return out
}
