package session

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/attrib"
	"github.com/changesetd/changesetd/session/view"
)

// Authors on the wire. Each file of a changeset carries who wrote its
// changes in _meta.changesetd: "author" (one author, or "mixed") and
// "authors" (every author of its changes); each of its hunks has
// "author" too, and "authors" when it is mixed. An author is an agent's
// chat URI (ahp-chat:/<session id>/<agent>), "you" (a write no running
// agent reported) or "unknown" (see package attrib).

// Mixed is the author of a file or hunk several authors wrote.
const Mixed = "mixed"

// fileAuthors is what withAuthors computed for one file.
type fileAuthors struct {
	file  []string
	hunks [][]string // by the index of the file's hunks
}

// maxAuthorsCache bounds the computed authors kept per session.
const maxAuthorsCache = 4096

// window is the time a changeset's two sides span: reports after from
// and not after to count (zero: unbounded).
func (s *Session) window(cs *csChannel) (from, to time.Time) {
	endOf := func(id string) time.Time {
		if id == BaselineTurnID {
			return s.createdAt
		}
		if t := s.turnByID(id); t != nil && !t.running() {
			return t.endedAt
		}
		return time.Time{}
	}
	switch cs.ref.Kind {
	case protocol.KindTurn:
		if t := s.turnByID(cs.ref.Vars["turnId"]); t != nil {
			return t.startedAt, t.endedAt
		}
	case protocol.KindSession:
		return s.createdAt, time.Time{}
	case protocol.KindCompareTurns:
		return endOf(cs.ref.Vars["originalTurnId"]), endOf(cs.ref.Vars["modifiedTurnId"])
	}
	return time.Time{}, time.Time{}
}

// authorOfChat is the wire name of a chat as an author.
func (s *Session) authorOfChat(key string) string { return chatURIOf(s.id, key) }

// withAuthors returns meta with the authors of fc's changes set, a copy
// whose _meta.changesetd is a copy too (withOwn), which the caller may
// add to before publishing it. On the actor; it reads the file's two
// sides only when an agent reported a write to it in the changeset's
// window.
func (s *Session) withAuthors(cs *csChannel, ws int, fc FileChange, meta protocol.Object) protocol.Object {
	from, to := s.window(cs)
	log := &s.evidence
	in := attrib.Input{OldAt: from, NewAt: to, Evidence: len(log.recs) > 0 || len(log.reporting) > 0}
	for _, t := range s.turns {
		in.Turns = append(in.Turns, attrib.Turn{Agent: s.authorOfChat(t.chat), From: t.startedAt, To: t.endedAt, Reports: log.reporting[t.chat]})
	}
	paths := []string{fc.Path()}
	if fc.Old != nil && fc.New != nil && fc.Old.Path != fc.New.Path {
		paths = append(paths, fc.Old.Path)
	}
	lost := false
	for _, p := range paths {
		if d, ok := log.dropped[editKey{ws, p}]; ok && (from.IsZero() || d.After(from)) {
			lost = true
		}
	}
	var reports []attrib.Report
	for _, e := range log.recs {
		if e.WS != ws || !slices.Contains(paths, e.Path) || (!from.IsZero() && !e.At.After(from)) || (!to.IsZero() && e.At.After(to)) {
			continue
		}
		r := attrib.Report{At: e.At, Content: e.Content, Known: e.Known, Claimed: e.Claimed, HasClaimed: e.HasClaimed, Mismatch: e.Mismatch}
		if e.Named {
			r.Agent = s.authorOfChat(e.Chat)
		}
		for _, x := range e.Replacements {
			r.Replacements = append(r.Replacements, x.attrib())
		}
		reports = append(reports, r)
	}
	hunks := view.HunksOf(meta)
	var fa fileAuthors
	switch {
	case !in.Evidence:
		fa = uniform(attrib.Unknown, len(hunks))
	case lost:
		fa = uniform(attrib.Unknown, len(hunks))
	case len(reports) == 0:
		fa = uniform(in.Unreported(), len(hunks))
	default:
		key := cs.ref.Kind + "\x00" + strconv.FormatInt(from.UnixNano(), 10) + "\x00" + strconv.FormatInt(to.UnixNano(), 10) + "\x00" + versionKey(fc.Old) + "\x00" + versionKey(fc.New) + "\x00" + strconv.FormatUint(log.gen, 10)
		if c, ok := log.cache[key]; ok && len(c.hunks) == len(hunks) {
			fa = c
			break
		}
		in.Reports = reports
		var ok bool
		if in.Old, ok = s.sideContent(ws, fc.Old); ok {
			in.New, ok = s.sideContent(ws, fc.New)
		}
		if !ok {
			fa = uniform(attrib.Unknown, len(hunks))
			break
		}
		r := attrib.Attribute(in)
		fa.file = r.File()
		for _, h := range hunks {
			fa.hunks = append(fa.hunks, r.Hunk(h.OldStart, h.OldLines, h.NewStart, h.NewLines))
		}
		if log.cache == nil || len(log.cache) >= maxAuthorsCache {
			log.cache = map[string]fileAuthors{}
		}
		log.cache[key] = fa
	}
	return withOwn(meta, func(own protocol.Object) {
		own["author"] = oneAuthor(fa.file)
		own["authors"] = slices.Clone(fa.file)
		if len(hunks) == 0 {
			return
		}
		out := make([]Hunk, len(hunks))
		for i, h := range hunks {
			h.Author, h.Authors = oneAuthor(fa.hunks[i]), nil
			if h.Author == Mixed {
				h.Authors = slices.Clone(fa.hunks[i])
			}
			out[i] = h
		}
		own[MetaHunks] = HunkList(out)
	})
}

// uniform is one author for a file and each of its n hunks.
func uniform(a string, n int) fileAuthors {
	fa := fileAuthors{file: []string{a}}
	for range n {
		fa.hunks = append(fa.hunks, []string{a})
	}
	return fa
}

func oneAuthor(list []string) string {
	switch len(list) {
	case 0:
		return attrib.Unknown
	case 1:
		return list[0]
	}
	return Mixed
}

func versionKey(v *FileVersion) string {
	if v == nil {
		return "-"
	}
	return v.Path + "@" + v.OID + "@" + strconv.FormatBool(v.Live)
}

// sideContent reads one side of a change: nil for an absent side, the
// working-tree file for a live one, else the stored object. false when
// it cannot be read within the evidence bound.
func (s *Session) sideContent(ws int, v *FileVersion) ([]byte, bool) {
	if v == nil {
		return nil, true
	}
	if v.Size > maxEvidenceContent {
		return nil, false
	}
	e := s.workspaces[ws]
	if v.Live {
		b, ok := s.m.readEvidence(e.root(), v.Path)
		return b, ok && b != nil
	}
	if e.ws == nil {
		return nil, false
	}
	b, err := e.ws.ReadBlob(v.OID)
	if err != nil || len(b) > maxEvidenceContent {
		return nil, false
	}
	if b == nil {
		b = []byte{}
	}
	return b, true
}

// authorsOf returns a file's published authors and its hunks' authors,
// for telling whether a republish changes them.
func authorsOf(f protocol.ChangesetFile) (any, any, []string) {
	own, _ := f.Meta["changesetd"].(protocol.Object)
	var hs []string
	for _, h := range view.HunksOf(f.Meta) {
		hs = append(hs, h.Author+"\x00"+strings.Join(h.Authors, ","))
	}
	return own["author"], own["authors"], hs
}

// sameAuthors reports whether two versions of a file name the same authors.
func sameAuthors(a, b protocol.ChangesetFile) bool {
	a1, a2, a3 := authorsOf(a)
	b1, b2, b3 := authorsOf(b)
	return reflect.DeepEqual(a1, b1) && reflect.DeepEqual(a2, b2) && slices.Equal(a3, b3)
}

// reattribute publishes again the files of cs whose authors changed while
// their content did not (the session's first report of an agent makes
// what no agent reported yours). Their sides are read from what cs
// already computed: nothing is rescanned. On the actor.
func (cs *csChannel) reattribute(s *Session) {
	if !cs.loaded {
		return
	}
	var changes []protocol.Action
	for _, f := range cs.v.State.Files {
		o, ok := cs.origin[f.ID]
		if !ok || o.ws >= len(s.workspaces) {
			continue
		}
		nf := f
		nf.Meta = s.withAuthors(cs, o.ws, FileChange{Old: o.from, New: o.to}, f.Meta)
		if !sameAuthors(f, nf) {
			changes = append(changes, protocol.ChangesetFileSet{File: nf})
		}
	}
	cs.commitFiles(s, changes)
	cs.syncOperations(s) // the operations by author name the authors
}
