package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/attrib"
	"github.com/changesetd/changesetd/session/view"
)

// Operations by author: stage or revert exactly the hunks one author
// wrote (authors.go), leaving every other author's where they are.
// Offered on a turn and on the uncommitted changeset while an author can
// be told apart; the invocation names the author in _meta.author (a chat
// URI, or "you"). A file whose every change is that author's is staged or
// reverted as a whole (a new file of the agent's is deleted); of a file
// several authors wrote only the author's hunks are, and a hunk that
// mixes authors is left alone. Every file is bound to the content last
// published: one changed since refuses the whole operation with
// -32011 (reason fileChanged) and nothing is written. A revert is kept
// as one undo.

// Operation ids.
const (
	OpStageAuthor  = "stageAuthor"
	OpRevertAuthor = "revertAuthor"
	// OpStageTurn, on a turn, stages exactly the hunks its agents wrote:
	// every author but "you", so the person's own edits made during the
	// turn stay unstaged.
	OpStageTurn = "stageTurn"
)

// MetaAuthor is the _meta key of a stageAuthor or revertAuthor invocation
// naming whose hunks it acts on.
const MetaAuthor = "author"

// authorPick is what an operation by author acts on: the author, and
// for each file of opTarget.files the hunks it picked (none: the whole
// file).
type authorPick struct {
	author string
	hunks  [][]Hunk
	names  string // the files with their hunk counts, for the result
}

// authorShare is one author's part of one file of the changeset.
type authorShare struct {
	file  protocol.ChangesetFile
	o     fileOrigin
	whole bool   // every change of the file is the author's
	hunks []Hunk // else the author's hunks
}

// count is the number of the author's hunks in the file (its hunks, or
// 1 for a whole file without any, such as a binary one).
func (sh authorShare) count() int {
	if sh.whole {
		return max(1, len(view.HunksOf(sh.file.Meta)))
	}
	return len(sh.hunks)
}

// byAuthor lists each author's part of the changeset, by author, in the
// order of the files' paths; the authors come sorted. Unknown and mixed
// are no author.
func (cs *csChannel) byAuthor() (map[string][]authorShare, []string) {
	out := map[string][]authorShare{}
	var order []string
	add := func(a string, sh authorShare) {
		if _, ok := out[a]; !ok {
			order = append(order, a)
		}
		out[a] = append(out[a], sh)
	}
	for _, f := range cs.v.State.Files {
		own, _ := f.Meta["changesetd"].(protocol.Object) // protocol.Object is map[string]any
		author, _ := own["author"].(string)
		if author == "" || author == attrib.Unknown {
			continue // most files of a large changeset: no lookup of their origin
		}
		o, ok := cs.origin[f.ID]
		if !ok {
			continue
		}
		if author != Mixed {
			add(author, authorShare{file: f, o: o, whole: true})
			continue
		}
		per := map[string][]Hunk{}
		var seen []string
		for _, h := range view.HunksOf(f.Meta) {
			if h.Author == "" || h.Author == Mixed || h.Author == attrib.Unknown {
				continue
			}
			if !slices.Contains(seen, h.Author) {
				seen = append(seen, h.Author)
			}
			per[h.Author] = append(per[h.Author], h)
		}
		for _, a := range seen {
			add(a, authorShare{file: f, o: o, hunks: per[a]})
		}
	}
	slices.Sort(order)
	for _, shares := range out {
		slices.SortFunc(shares, func(a, b authorShare) int { return strings.Compare(a.o.path(), b.o.path()) })
	}
	return out, order
}

// authorName is how a confirmation names an author: the agent's chat
// key, or "you".
func authorName(a string) string {
	if _, id, ok := protocol.ParseChatURI(a); ok {
		return id
	}
	return a
}

// shareList names the files of an author's part with their hunk counts:
// "a.txt (2 hunks) and b.txt (the whole file, 1 hunk)".
func shareList(shares []authorShare) string {
	np := namedPaths{n: len(shares)}
	for _, sh := range shares[:min(len(shares), maxNamed)] {
		np.first = append(np.first, sh.name()) // only those it shows
	}
	return np.String()
}

// name is the file's path with the author's hunk count.
func (sh authorShare) name() string {
	n := sh.count()
	what := fmt.Sprintf("%d hunks", n)
	if n == 1 {
		what = "1 hunk"
	}
	if sh.whole {
		what = "the whole file, " + what
	}
	return fmt.Sprintf("%s (%s)", sh.o.path(), what)
}

// authorOperations are the operations by author the changeset offers
// now: on a turn and on the uncommitted changeset, while some change has
// an author.
func (cs *csChannel) authorOperations() []protocol.ChangesetOperation {
	if cs.ref.Kind != protocol.KindTurn && cs.ref.Kind != protocol.KindUncommitted {
		return nil
	}
	shares, order := cs.byAuthor()
	if len(order) == 0 {
		return nil
	}
	var parts []string
	for _, a := range order {
		parts = append(parts, authorName(a)+": "+shareList(shares[a]))
	}
	who := strings.Join(parts, "; ")
	confirm := func(text string) json.RawMessage { b, _ := json.Marshal(text); return b }
	var turnOps []protocol.ChangesetOperation
	if agents := agentShares(shares, order); cs.ref.Kind == protocol.KindTurn && len(agents) > 0 {
		text := "Stage exactly what this turn's agent wrote: " + shareList(agents) + "?"
		if len(shares[string(attrib.You)]) > 0 {
			text += " Your own edits stay unstaged: " + shareList(shares[string(attrib.You)]) + "."
		}
		turnOps = append(turnOps, protocol.ChangesetOperation{ID: OpStageTurn, Label: "Stage Turn", Icon: "add", Group: "author",
			Description:  "Add to the index exactly the hunks this turn's agent wrote, leaving your own edits unstaged; it can be undone with Undo Stage",
			Scopes:       []string{protocol.ScopeChangeset},
			Confirmation: confirm(text)})
	}
	return append(turnOps, []protocol.ChangesetOperation{
		{ID: OpStageAuthor, Label: "Stage This Agent's Changes", Icon: "add", Group: "author",
			Description:  "Add to the index exactly the hunks the author in _meta.author wrote, leaving every other author's unstaged",
			Scopes:       []string{protocol.ScopeChangeset},
			Confirmation: confirm("Stage only the chosen author's hunks? Every other author's stay unstaged. By author: " + who + ".")},
		{ID: OpRevertAuthor, Label: "Revert This Agent's Changes", Icon: "discard", Group: "author",
			Description:  "Restore exactly the hunks the author in _meta.author wrote to the changeset's original version, leaving every other author's in place",
			Scopes:       []string{protocol.ScopeChangeset},
			Confirmation: confirm("Revert only the chosen author's hunks? Every other author's stay in place; a file only that author changed returns to its original version (a new one is deleted). It can be undone with Undo Revert. By author: " + who + ".")},
	}...)
}

// agentShares merges the parts of every author but "you" file by file: a
// file whose every change an agent wrote is whole, else the agents'
// hunks, in the order of the files' paths.
func agentShares(shares map[string][]authorShare, order []string) []authorShare {
	byPath := map[string]*authorShare{}
	var paths []string
	for _, a := range order {
		if a == string(attrib.You) {
			continue
		}
		for _, sh := range shares[a] {
			p := sh.o.path()
			cur, ok := byPath[p]
			if !ok {
				c := sh
				c.hunks = slices.Clone(sh.hunks)
				byPath[p] = &c
				paths = append(paths, p)
				continue
			}
			if !cur.whole {
				cur.hunks = append(cur.hunks, sh.hunks...)
			}
		}
	}
	slices.Sort(paths)
	out := make([]authorShare, 0, len(paths))
	for _, p := range paths {
		sh := *byPath[p]
		slices.SortFunc(sh.hunks, func(a, b Hunk) int { return a.NewStart - b.NewStart })
		out = append(out, sh)
	}
	return out
}

// pickTurn resolves stageTurn to the files and hunks of the turn's
// agents. On the actor.
func (cs *csChannel) pickTurn(t *opTarget) error {
	shares, order := cs.byAuthor()
	mine := agentShares(shares, order)
	if len(mine) == 0 {
		return protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: no hunk of this turn is by an agent (its authors: %s)", strings.Join(order, ", "))
	}
	return pickShares(t, "the turn's agent", mine)
}

// pickAuthor resolves an operation by author to its files and hunks. On
// the actor.
func (cs *csChannel) pickAuthor(t *opTarget) error {
	author, _ := t.meta[MetaAuthor].(string)
	shares, order := cs.byAuthor()
	if author == "" {
		return protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: %s needs _meta.author, the chat URI of the agent whose hunks it acts on (or \"you\"); this changeset's authors: %s", t.op, strings.Join(order, ", "))
	}
	mine := shares[author]
	if len(mine) == 0 {
		return protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: no hunk of this changeset is by %q (its authors: %s)", author, strings.Join(order, ", "))
	}
	return pickShares(t, author, mine)
}

// pickShares sets t to act on exactly the parts of files in shares, which
// are author's.
func pickShares(t *opTarget, author string, shares []authorShare) error {
	pick := &authorPick{author: author}
	for _, sh := range shares {
		if sh.o.ws != shares[0].o.ws {
			return protocol.Errorf(protocol.CodeInvalidParams, "invokeChangesetOperation: %s's hunks are in several working trees; act on them file by file", authorName(author))
		}
		t.files = append(t.files, sh.o)
		if sh.whole {
			pick.hunks = append(pick.hunks, nil)
		} else {
			pick.hunks = append(pick.hunks, sh.hunks)
		}
	}
	pick.names = shareList(shares)
	t.byAuthor = pick
	return nil
}

// hunkRange is the 0-based after-side lines of a hunk as a range target.
func hunkRange(h Hunk) protocol.TextRange {
	lo := max(h.NewStart-1, 0)
	hi := max(lo, h.NewStart-1+h.NewLines-1)
	return protocol.TextRange{Start: protocol.TextPosition{Line: lo}, End: protocol.TextPosition{Line: hi}}
}

// runByAuthor has the Editor stage or revert an author's hunks, off the
// actor under the working tree's lock; a revert is kept as one undo.
func runByAuthor(ctx context.Context, ed Editor, kind string, t opTarget, s *Session, uri string, ws int) (*protocol.InvokeChangesetOperationResult, *undoRecord, error) {
	e := Edit{Side: "after"}
	for i, f := range t.files {
		ef := EditFile{Old: f.from, New: f.to}
		for _, h := range t.byAuthor.hunks[i] {
			ef.Ranges = append(ef.Ranges, hunkRange(h))
		}
		e.Files = append(e.Files, ef)
	}
	who := authorName(t.byAuthor.author)
	if t.op == OpStageAuthor || t.op == OpStageTurn {
		u, err := ed.Stage(ctx, e)
		if err != nil {
			return nil, nil, err
		}
		res, rec, err := s.indexUndo(uri, ws, u)
		text := fmt.Sprintf("Staged %s's changes: %s", who, t.byAuthor.names)
		if res != nil {
			var more string
			json.Unmarshal(res.Message, &more)
			text += ". " + more
		}
		return message(text), rec, err
	}
	e.Index = kind == protocol.KindUncommitted
	rec, u, err := s.revert(ctx, ed, e, uri, ws)
	rec, storeErr := s.settleUndo(uri, ws, rec, u)
	if rec == nil {
		if err != nil {
			return nil, nil, err
		}
		return message("Nothing to revert: " + who + "'s hunks already have their original content"), nil, nil
	}
	res, err := undoResult(rec, storeErr, err)
	if err == nil {
		var text string
		json.Unmarshal(res.Message, &text)
		res = message(fmt.Sprintf("Reverted %s's changes: %s. ", who, t.byAuthor.names) + text)
	}
	return res, rec, err
}
