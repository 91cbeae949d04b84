package session

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/hub"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/changesetd/changesetd/session/annotation"
	"github.com/changesetd/changesetd/session/view"
)

// Review annotations: comment threads anchored to a file (and optionally a
// range of it) as a turn left it. Clients write them with the five
// annotations/* actions; the server validates each, stores the whole state
// durably, then echoes it. It also keeps, in each annotation's _meta, where
// its lines are in the working tree now (protocol.MetaCurrent).

// maxSessionAnnotationBytes bounds all of a session's annotations,
// encoded: what a snapshot of the channel hands every subscriber, and
// what it keeps in memory. A variable so tests can lower it.
var maxSessionAnnotationBytes = 32 << 20

// notes is a session's annotations channel.
type notes struct {
	ch    *hub.Channel
	state protocol.AnnotationsState
	// placing is set while current places are computed off the actor;
	// what to place next is gathered meanwhile: every annotation, or
	// those named.
	placing    bool
	pendingAll bool
	pendingIDs map[string]bool
	// waiting are attachments held until the places being computed are in
	// the state, so a snapshot says where the lines are now.
	waiting []waitingAttach
	// setting is set while an annotations/set or annotations/updated
	// waits for the working directory (a snapshot, or the version its
	// client named) off the actor (lookAtDisk); the actions dispatched
	// meanwhile wait in held, so that every action takes effect in the
	// order it came (a reply sent right after the comment it answers
	// finds it).
	setting bool
	held    []heldAction
	// served are the attachments that waited when the running round
	// started: it lets them through when it ends, even if more changes
	// queued another round meanwhile (under continuous change a round
	// always follows, and they would wait for good).
	served []waitingAttach

	// Each annotation is stored on its own, at a slot that keeps its
	// place in the channel's order: a comment writes one annotation, not
	// the session's whole state. sizes is each one's encoded size, total
	// their sum (capped by maxSessionAnnotationBytes).
	slots    map[string]uint64
	nextSlot uint64
	sizes    map[string]int
	total    int
}

// heldAction is an annotations action dispatched while another waited
// for the disk.
type heldAction struct {
	sub    Subscriber
	a      protocol.Action
	origin *protocol.ActionOrigin
}

type waitingAttach struct {
	sub      Subscriber
	lastSeen int64
	done     func(Attachment, error)
}

func (s *Session) annotationsURI() string { return protocol.AnnotationsURI(s.uri) }

// loadAnnotations reads the stored annotations of a restored session. A
// state stored whole, as earlier versions did, is moved into slots first.
func (s *Session) loadAnnotations() {
	db := s.m.opts.Store
	if db == nil {
		return
	}
	legacy, err := db.Annotations(s.id)
	if err != nil {
		s.log.Error("cannot load the session's annotations", "err", err)
		return
	}
	var st protocol.AnnotationsState
	if legacy != nil {
		// Kept until every slot is written: a crash meanwhile moves it
		// again on the next start.
		if err := json.Unmarshal(legacy, &st); err != nil {
			s.log.Error("stored annotations are unreadable; starting without them", "err", err)
			return
		}
		for i, a := range st.Annotations {
			raw, _ := json.Marshal(a)
			if err := db.PutAnnotation(s.id, uint64(i+1), raw); err != nil {
				s.log.Error("cannot move the stored annotations into slots", "err", err)
				return
			}
		}
		if err := db.PutAnnotations(s.id, nil); err != nil {
			s.log.Error("cannot delete the annotations stored whole", "err", err)
		}
	}
	slots, err := db.AnnotationSlots(s.id)
	if err != nil {
		s.log.Error("cannot load the session's annotations", "err", err)
		return
	}
	st.Annotations = make([]protocol.Annotation, 0, len(slots))
	for _, sl := range slots {
		var a protocol.Annotation
		if err := json.Unmarshal(sl.Value, &a); err != nil || a.ID == "" {
			s.log.Error("a stored annotation is unreadable; it is left out", "slot", sl.Slot, "err", err)
			continue
		}
		st.Annotations = append(st.Annotations, a)
		s.notes.setSlot(a.ID, sl.Slot, len(sl.Value))
	}
	s.notes.state = withFeedbackAll(st, s.uri)
	s.state.Annotations = s.annotationsSummary()
}

// setSlot records where annotation id is stored and its size.
func (n *notes) setSlot(id string, slot uint64, size int) {
	if n.slots == nil {
		n.slots, n.sizes = map[string]uint64{}, map[string]int{}
	}
	n.slots[id] = slot
	n.nextSlot = max(n.nextSlot, slot)
	n.total += size - n.sizes[id]
	n.sizes[id] = size
}

// dropSlot forgets annotation id's slot.
func (n *notes) dropSlot(id string) {
	n.total -= n.sizes[id]
	delete(n.slots, id)
	delete(n.sizes, id)
}

func (s *Session) annotationsSummary() *protocol.AnnotationsSummary {
	sum := &protocol.AnnotationsSummary{Resource: s.annotationsURI(), AnnotationCount: len(s.notes.state.Annotations)}
	for _, a := range s.notes.state.Annotations {
		sum.EntryCount += len(a.Entries)
	}
	return sum
}

func (s *Session) attachAnnotations(sub Subscriber, lastSeen int64, done func(Attachment, error)) {
	if !s.do(func() {
		if s.disposed {
			done(Attachment{}, protocol.Errorf(protocol.CodeSessionNotFound, "subscribe %s: session was disposed", s.annotationsURI()))
			return
		}
		w := waitingAttach{sub, lastSeen, done}
		if len(s.notes.state.Annotations) == 0 || !s.started {
			s.attachNotes(w)
			return
		}
		// Say where the lines are now before handing out the snapshot.
		s.notes.waiting = append(s.notes.waiting, w)
		s.placeAnnotations()
	}) {
		done(Attachment{}, protocol.Errorf(protocol.CodeSessionNotFound, "subscribe %s: session was disposed", s.annotationsURI()))
	}
}

func (s *Session) attachNotes(w waitingAttach) {
	s.m.attachOwned(s.notes.ch, w.sub, w.lastSeen, annotation.CloneState(s.notes.state), w.done)
}

// detachAnnotations unsubscribes sub, also from an attachment still
// waiting for places (a page reloaded while they were computed): it is
// answered with an error instead of being subscribed later.
func (s *Session) detachAnnotations(sub Subscriber) {
	s.m.detachChannel(s.notes.ch, sub)
	s.notes.waiting = s.dropWaiting(s.notes.waiting, sub)
	s.notes.served = s.dropWaiting(s.notes.served, sub)
}

// dropWaiting answers sub's attachments in list with an error and returns
// the others.
func (s *Session) dropWaiting(list []waitingAttach, sub Subscriber) []waitingAttach {
	kept := list[:0]
	for _, w := range list {
		if w.sub != sub {
			kept = append(kept, w)
			continue
		}
		w.done(Attachment{}, protocol.Errorf(protocol.CodeInvalidRequest, "subscribe %s: unsubscribed before the snapshot was ready", s.annotationsURI()))
	}
	clear(list[len(kept):])
	return kept
}

// failWaiting answers the attachments still waiting when the session is
// disposed.
func (s *Session) failWaiting() {
	for _, w := range append(s.notes.served, s.notes.waiting...) {
		w.done(Attachment{}, protocol.Errorf(protocol.CodeSessionNotFound, "subscribe %s: session was disposed", s.annotationsURI()))
	}
	s.notes.waiting, s.notes.served = nil, nil
}

// dispatchAnnotations validates a client's action, stores the state it
// leads to and publishes it; an invalid one goes back to its sender only.
func (s *Session) dispatchAnnotations(sub Subscriber, a protocol.Action, origin *protocol.ActionOrigin) {
	if s.disposed {
		return
	}
	if s.notes.setting {
		s.notes.held = append(s.notes.held, heldAction{sub, a, origin})
		return
	}
	switch a := a.(type) {
	case protocol.AnnotationsSet:
		s.setAnnotation(sub, a, origin)
		return
	case protocol.AnnotationsUpdated:
		s.updateAnnotation(sub, a, origin)
		return
	}
	a, reason := s.checkAnnotationAction(a)
	if reason != "" {
		s.m.reject(sub, s.annotationsURI(), a, origin, reason)
		return
	}
	s.commitChecked(sub, a, origin)
}

// setAnnotation applies an annotations/set. Most are checked and stored at
// once. Two kinds need the working directory first, off the actor:
//
//   - A range on the working tree as it is now (protocol.MetaOnWorkingTree):
//     the working directory is snapshotted, and the annotation is stored
//     with that snapshot as the version its lines are on
//     (protocol.MetaSnapshot), so lines added since the turn it names (or
//     the baseline) are placed as they were selected.
//   - A range whose client names the version of the file it showed
//     (_meta.versions, as an operation does): the lines are on that
//     version. When the content the annotation is kept on (the snapshot
//     just taken, a turn's end, or the working tree while the turn runs)
//     is no longer it, the range is carried from the shown content to the
//     current one (annotation.Rebind), so that it lands on the lines the
//     person selected; or the action is refused, nothing stored, when they
//     are gone or the shown content cannot be read. Lines of the baseline
//     are of a version that does not change, and a client without
//     versions is taken at its word, as before.
//
// The action is checked before that work and again after it, against the
// state then. Its _meta is the sender's and is not echoed.
func (s *Session) setAnnotation(sub Subscriber, set protocol.AnnotationsSet, origin *protocol.ActionOrigin) {
	sent := set
	reject := func(reason string) { s.m.reject(sub, s.annotationsURI(), sent, origin, reason) }
	sh, err := view.ParseShown(set.Meta)
	if err != nil {
		reject(err.Error())
		return
	}
	set.Meta = nil
	checked, reason := s.checkAnnotationAction(set)
	if reason != "" {
		reject(reason)
		return
	}
	n := checked.(protocol.AnnotationsSet).Annotation
	onTree := annotation.OnWorkingTree(n)
	var shown *view.Sides
	if sh != nil && sh.Files != nil && n.Range != nil && (onTree || n.TurnID != BaselineTurnID) {
		v, ok := shownOf(sh, n.Resource)
		if !ok {
			reject(fmt.Sprintf("_meta.%s names no version of %s: name the one the annotation's lines were selected on", MetaVersions, n.Resource))
			return
		}
		shown = &v
	}
	if !onTree && shown == nil {
		s.commitChecked(sub, checked, origin)
		return
	}
	i, rel, _ := s.locate(n.Resource)
	if i >= len(s.workspaces) || s.workspaces[i].ws == nil {
		if onTree {
			reject("annotation._meta: the working directory of " + n.Resource + " cannot be snapshotted, so lines of its working tree cannot be kept; name lines of a turn or of the baseline")
		} else {
			reject("the working directory of " + n.Resource + " cannot be read, so the version shown cannot be checked; nothing was stored")
		}
		return
	}
	tree := "" // the version the lines are kept on; "" = the working tree
	if t := s.turnByID(n.TurnID); t != nil && !onTree {
		tree = t.endOf(i)
	}
	look := diskLook{i: i, rel: rel, tree: tree, snapshot: onTree, shown: shown}
	s.lookAtDisk(look, reject, func(snap string, cur []byte, sv annotation.Shown) {
		a, reason := s.checkAnnotationAction(set)
		if reason != "" {
			reject(reason)
			return
		}
		checked := a.(protocol.AnnotationsSet)
		n := annotation.CloneMeta(checked.Annotation)
		if shown != nil {
			r, why := annotation.Rebind(*n.Range, sv, cur)
			if why != "" {
				reject(why)
				return
			}
			n.Range = &r
		}
		if onTree {
			delete(n.Meta, protocol.MetaOnWorkingTree)
			n.Meta[protocol.MetaSnapshot] = snap
		} else if len(n.Meta) == 0 {
			n.Meta = nil
		}
		checked.Annotation = n
		s.commitChecked(sub, checked, origin)
	})
}

// updateAnnotation applies an annotations/updated. One that moves an
// annotation to a range and names the version of the file its client
// showed (_meta.versions) is bound to that version as a set is (see
// setAnnotation): the range is carried to the content the annotation is
// kept on, or the action is refused; any other is checked and stored at
// once.
func (s *Session) updateAnnotation(sub Subscriber, u protocol.AnnotationsUpdated, origin *protocol.ActionOrigin) {
	sent := u
	reject := func(reason string) { s.m.reject(sub, s.annotationsURI(), sent, origin, reason) }
	sh, err := view.ParseShown(u.Meta)
	if err != nil {
		reject(err.Error())
		return
	}
	u.Meta = nil
	checked, reason := s.checkAnnotationAction(u)
	if reason != "" {
		reject(reason)
		return
	}
	prev := s.annotation(u.AnnotationID)
	turn, res := prev.TurnID, prev.Resource
	if u.TurnID != nil {
		turn = *u.TurnID
	}
	if u.Resource != nil {
		res = *u.Resource
	}
	if sh == nil || sh.Files == nil || u.Range == nil || turn == BaselineTurnID {
		s.commitChecked(sub, checked, origin)
		return
	}
	v, ok := shownOf(sh, res)
	if !ok {
		reject(fmt.Sprintf("_meta.%s names no version of %s: name the one the annotation's lines were selected on", MetaVersions, res))
		return
	}
	i, rel, _ := s.locate(res)
	if i >= len(s.workspaces) || s.workspaces[i].ws == nil {
		reject("the working directory of " + res + " cannot be read, so the version shown cannot be checked; nothing was stored")
		return
	}
	tree := ""
	if t := s.turnByID(turn); t != nil {
		tree = t.endOf(i)
	}
	s.lookAtDisk(diskLook{i: i, rel: rel, tree: tree, shown: &v}, reject, func(_ string, cur []byte, sv annotation.Shown) {
		a, reason := s.checkAnnotationAction(u)
		if reason != "" {
			reject(reason)
			return
		}
		checked := a.(protocol.AnnotationsUpdated)
		r, why := annotation.Rebind(*checked.Range, sv, cur)
		if why != "" {
			reject(why)
			return
		}
		checked.Range = &r
		s.commitChecked(sub, checked, origin)
	})
}

// shownOf is the version sh names for resource, a file id as this
// server names it; a client may name it as it names resources itself
// (localizeAction).
func shownOf(sh *view.Shown, resource string) (view.Sides, bool) {
	if v, ok := sh.Files[resource]; ok {
		return v, true
	}
	for id, v := range sh.Files {
		if protocol.LocalResourceURI(id) == resource {
			return v, true
		}
	}
	return view.Sides{}, false
}

// diskLook is what an annotations action needs of the disk before it can
// be stored: a snapshot of workspace i's working tree, and, when its
// client named the version it showed, that version and file rel as it is
// in the snapshot tree (or in the working tree when tree is "").
type diskLook struct {
	i        int
	rel      string
	tree     string
	snapshot bool
	shown    *view.Sides
}

// lookAtDisk does what look asks off the actor, then calls done on the
// actor with the snapshot taken, the file's current content and the
// version shown; a failure is rejected with reject instead. Annotations
// actions dispatched meanwhile are held, and dispatched in order after.
func (s *Session) lookAtDisk(look diskLook, reject func(string), done func(snap string, cur []byte, shown annotation.Shown)) {
	ws, ctx, m := s.workspaces[look.i].ws, s.ctx, s.m
	abs := filepath.Join(s.workspaces[look.i].root(), filepath.FromSlash(look.rel))
	s.notes.setting = true
	s.m.spawn("versions for an annotation", func() {
		settled := false
		defer func() {
			if !settled { // the work panicked: the held actions go on
				s.do(func() {
					s.notes.setting = false
					reject("the annotation could not be checked against its working directory; nothing was stored")
					s.releaseHeld()
				})
			}
		}()
		tree := look.tree
		var snap string
		var cur []byte
		var sv annotation.Shown
		var err error
		if look.snapshot {
			if snap, err = ws.Snapshot(ctx, false); err != nil {
				err = fmt.Errorf("the working tree could not be snapshotted to keep the annotation's lines: %w", err)
			}
			tree = snap
		}
		if err == nil && look.shown != nil {
			sv.OID = look.shown.After
			if sv.OID != "" {
				b, rerr := ws.ReadBlob(sv.OID)
				sv.Content, sv.Readable = b, rerr == nil
			}
			if cur, err = m.contentAt(ctx, ws, tree, look.rel, abs); err != nil {
				err = fmt.Errorf("the file changed since it was shown or cannot be read, so the lines selected cannot be found in it: %w; nothing was stored", err)
			}
		}
		settled = true
		s.do(func() {
			s.notes.setting = false
			defer s.releaseHeld()
			if s.disposed {
				return
			}
			if err != nil {
				reject(err.Error())
				return
			}
			done(snap, cur, sv)
		})
	})
}

// releaseHeld dispatches, in order, the actions held while another
// waited for the disk, until one of them must wait in turn.
func (s *Session) releaseHeld() {
	for len(s.notes.held) > 0 && !s.notes.setting && !s.disposed {
		h := s.notes.held[0]
		s.notes.held[0] = heldAction{}
		s.notes.held = s.notes.held[1:]
		s.dispatchAnnotations(h.sub, h.a, h.origin)
	}
	if s.disposed {
		s.notes.held = nil
	}
}

// contentAt reads file rel (abs on disk) of workspace ws as it is in the
// snapshot tree, or in the working tree when tree is "".
func (m *Manager) contentAt(ctx context.Context, ws Workspace, tree, rel, abs string) ([]byte, error) {
	if tree != "" {
		list, err := ws.Changes(ctx, Query{View: ViewTrees, From: tree, Paths: []string{rel}})
		if err != nil {
			return nil, err
		}
		for _, f := range list.Files {
			switch {
			case f.Old != nil && f.Old.Path == rel:
				return ws.ReadBlob(f.Old.OID)
			case f.Old == nil && f.New != nil && f.New.Path == rel:
				return nil, fmt.Errorf("%s is not in the version the annotation is kept on", rel)
			}
		}
		// The same in the working tree.
	}
	return m.readFile(FileURI(abs), changeset.DefaultMaxFileBytes)
}

// commitChecked stores and publishes an action checkAnnotationAction
// let through, then places the annotation it anchors.
func (s *Session) commitChecked(sub Subscriber, a protocol.Action, origin *protocol.ActionOrigin) {
	if err := s.commitAnnotations(a, origin); err != nil {
		s.log.Error("cannot save annotations", "err", err)
		s.m.reject(sub, s.annotationsURI(), a, origin, "the annotation could not be saved: "+err.Error())
		return
	}
	if u, ok := a.(protocol.AnnotationsUpdated); ok && u.Resolved != nil {
		s.syncFeedback(u.AnnotationID)
	}
	if u, ok := a.(protocol.AnnotationsUpdated); ok && u.TurnID == nil && u.Resource == nil && u.Range == nil {
		return // resolved or re-opened: the anchor is unchanged
	}
	if u, ok := a.(protocol.AnnotationsUpdated); ok {
		s.dropSnapshot(u.AnnotationID)
	}
	switch a := a.(type) {
	case protocol.AnnotationsSet:
		s.placeAnnotations(a.Annotation.ID)
	case protocol.AnnotationsUpdated:
		s.placeAnnotations(a.AnnotationID)
	}
}

// commitAnnotations applies a, stores the one annotation it changes (one
// durable write, before the echo: a client that saw the echo never loses
// the annotation to a crash) and publishes a.
func (s *Session) commitAnnotations(a protocol.Action, origin *protocol.ActionOrigin) error {
	return s.applyAnnotations(a, origin, true)
}

// applyAnnotations is commitAnnotations; with durable false the write is
// skipped, for what is recomputed after a restart anyway (an annotation's
// current place).
func (s *Session) applyAnnotations(a protocol.Action, origin *protocol.ActionOrigin, durable bool) error {
	next, out := reducer.ApplyAnnotations(s.notes.state, a, reducer.Env{})
	if out != reducer.Applied {
		s.m.publish(s.notes.ch, a, origin)
		return nil
	}
	id, removed := annotation.IDOf(a)
	var raw []byte
	if !removed {
		i := slices.IndexFunc(next.Annotations, func(x protocol.Annotation) bool { return x.ID == id })
		if i < 0 {
			return fmt.Errorf("annotation %q is missing after %s", id, a.ActionType())
		}
		var err error
		if raw, err = json.Marshal(next.Annotations[i]); err != nil {
			return err
		}
		if grown := s.notes.total - s.notes.sizes[id] + len(raw); len(raw) > s.notes.sizes[id] && grown > maxSessionAnnotationBytes {
			return fmt.Errorf("the session's annotations would be %d bytes encoded; at most %d are kept: remove or shorten some first", grown, maxSessionAnnotationBytes)
		}
	}
	slot, ok := s.notes.slots[id]
	if !ok {
		slot = s.notes.nextSlot + 1
	}
	if db := s.m.opts.Store; db != nil && durable {
		if err := db.PutAnnotation(s.id, slot, raw); err != nil {
			return err
		}
	}
	if removed {
		s.notes.dropSlot(id)
	} else {
		s.notes.setSlot(id, slot, len(raw))
	}
	before := *s.annotationsSummary()
	s.notes.state = next
	s.m.publish(s.notes.ch, a, origin)
	if after := s.annotationsSummary(); *after != before {
		s.state.Annotations = after
		s.m.notifyRoot(protocol.NotifySessionSummaryChanged, protocol.SessionSummaryChangedParams{
			Channel: protocol.RootURI, Session: s.uri, Changes: protocol.Object{"annotations": after},
		})
	}
	return nil
}

func (s *Session) annotation(id string) *protocol.Annotation {
	return annotation.Find(s.notes.state, id)
}

// checkAnnotationAction returns the action to apply — a client's with the
// server-owned _meta keys put back — or why it is refused.
func (s *Session) checkAnnotationAction(a protocol.Action) (protocol.Action, string) {
	now := formatTime(s.m.opts.Now())
	c := annotation.Checker{
		State:  s.notes.state,
		Now:    now,
		TurnOf: s.feedbackTurn,
		Anchor: s.checkAnchor,
		Adopt:  func(n protocol.Annotation) protocol.Annotation { return adoptFeedback(n, s.uri, now) },
	}
	return c.Check(a)
}

// checkAnchor checks what an annotation is anchored to and returns what is
// wrong with it, naming the field.
func (s *Session) checkAnchor(turnID, resource string, r *protocol.TextRange) string {
	switch {
	case turnID == "":
		return "turnId is empty: name a turn of this session, or " + BaselineTurnID
	case turnID != BaselineTurnID && s.turnByID(turnID) == nil:
		return fmt.Sprintf("turnId %q is not a turn of this session (%s)", turnID, s.knownTurns())
	}
	i, _, ok := s.locate(resource)
	if !ok {
		return fmt.Sprintf("resource %q is not a file:// URI inside the session's working directories", resource)
	}
	if path, err := confine.PathFromFileURI(resource); err == nil {
		if why := anchorOutside(s.dirs[i], path); why != "" {
			return fmt.Sprintf("resource %q cannot carry an annotation: %s", resource, why)
		}
	}
	return annotation.CheckRange(r)
}

// dropSnapshot forgets the working tree snapshot annotation id's lines
// were on, after annotations/updated moved them to other lines, which name
// lines of its turn's version.
func (s *Session) dropSnapshot(id string) {
	cur := s.annotation(id)
	if cur == nil {
		return
	}
	if _, ok := cur.Meta[protocol.MetaSnapshot]; !ok {
		return
	}
	n := annotation.CloneMeta(*cur)
	delete(n.Meta, protocol.MetaSnapshot)
	if err := s.commitAnnotations(protocol.AnnotationsSet{Annotation: n}, nil); err != nil {
		s.log.Error("cannot save an annotation moved off its snapshot", "annotation", id, "err", err)
	}
}

// locate finds the workspace holding a file:// resource: its index and the
// path relative to the workspace root.
func (s *Session) locate(resource string) (int, string, bool) {
	if !strings.HasPrefix(resource, "file:") {
		return 0, "", false
	}
	path, err := confine.PathFromFileURI(resource)
	if err != nil {
		return 0, "", false
	}
	for i, d := range s.dirs {
		if !confine.Contains(d, path) {
			continue
		}
		root := d
		if i < len(s.workspaces) {
			root = s.workspaces[i].root()
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		rel = filepath.ToSlash(rel)
		if rel == ".git" || strings.HasPrefix(rel, ".git/") {
			return 0, "", false
		}
		return i, rel, true
	}
	return 0, "", false
}

// AnnotationsDelivered records that the agent was handed the annotations
// ids at the start of turnID: each gets protocol.MetaDelivered naming the
// entries it had. Unknown ids are skipped.
func (m *Manager) AnnotationsDelivered(ctx context.Context, channel string, ids []string, turnID string) error {
	if protocol.ChannelOf(channel) != protocol.ChannelAnnotations {
		return protocol.Errorf(protocol.CodeInvalidParams, "%s: channel %q is not an annotations channel (ahp-session:/<id>/annotations)", protocol.MethodAnnotationsDelivered, channel)
	}
	s, ok := m.Session(protocol.SessionOfAnnotations(channel))
	if !ok {
		return protocol.Errorf(protocol.CodeSessionNotFound, "%s: session %s does not exist", protocol.MethodAnnotationsDelivered, protocol.SessionOfAnnotations(channel))
	}
	_, err := command(ctx, s, func() (struct{}, error) {
		// Marked only while the agent's side still waits for the answer:
		// a hook that gave up (its deadline passed while the actor was
		// busy) showed the agent nothing, so the annotations stay open
		// for its next prompt.
		if err := ctx.Err(); err != nil {
			return struct{}{}, fmt.Errorf("%s: %w", protocol.MethodAnnotationsDelivered, err)
		}
		at := formatTime(m.opts.Now())
		for _, id := range ids {
			prev := s.annotation(id)
			if prev == nil {
				continue
			}
			n := annotation.CloneMeta(*prev)
			d := protocol.AnnotationDelivery{At: at, TurnID: turnID, Entries: []string{}}
			for _, e := range prev.Entries {
				d.Entries = append(d.Entries, e.ID)
			}
			n.Meta[protocol.MetaDelivered] = d
			n.Meta = protocol.WithFeedbackState(n.Meta, feedbackState(n), s.uri)
			if err := s.commitAnnotations(protocol.AnnotationsSet{Annotation: n}, nil); err != nil {
				return struct{}{}, fmt.Errorf("%s: %w", protocol.MethodAnnotationsDelivered, err)
			}
		}
		return struct{}{}, nil
	})
	return err
}

// anchor is what an annotation's current place is computed from.
type anchor struct {
	id       string
	ws       Workspace
	rel      string
	abs      string
	tree     string // the snapshot the turn left; "" = the turn is running
	rng      *protocol.TextRange
	turnID   string
	resource string
}

// placeAnnotations computes, off the actor, where the lines of the
// annotations ids (every annotation when none is named) are now, then
// publishes the annotations whose place changed and lets waiting
// attachments through. Requests made while a round runs are gathered
// into the next round.
func (s *Session) placeAnnotations(ids ...string) {
	if len(ids) == 0 {
		s.notes.pendingAll = true
	}
	for _, id := range ids {
		if s.notes.pendingIDs == nil {
			s.notes.pendingIDs = map[string]bool{}
		}
		s.notes.pendingIDs[id] = true
	}
	if s.notes.placing {
		return
	}
	all, only := s.notes.pendingAll, s.notes.pendingIDs
	s.notes.pendingAll, s.notes.pendingIDs = false, nil
	var anchors []anchor
	for _, a := range s.notes.state.Annotations {
		if !all && !only[a.ID] {
			continue
		}
		i, rel, ok := s.locate(a.Resource)
		if !ok || i >= len(s.workspaces) || s.workspaces[i].ws == nil {
			continue
		}
		an := anchor{id: a.ID, ws: s.workspaces[i].ws, rel: rel, abs: filepath.Join(s.workspaces[i].root(), filepath.FromSlash(rel)), rng: a.Range, turnID: a.TurnID, resource: a.Resource}
		if snap := annotation.SnapshotOf(a); snap != "" {
			an.tree = snap
		} else if a.TurnID == BaselineTurnID {
			an.tree = s.baselineOf(i)
		} else if t := s.turnByID(a.TurnID); t != nil {
			an.tree = t.endOf(i)
		}
		anchors = append(anchors, an)
	}
	if len(anchors) == 0 {
		s.releaseWaiting()
		return
	}
	s.notes.placing = true
	s.notes.served, s.notes.waiting = s.notes.waiting, nil
	ctx := s.ctx
	m := s.m
	s.m.spawn("place annotations", func() {
		places := m.places(ctx, anchors)
		s.do(func() {
			s.notes.placing = false
			if s.disposed {
				return
			}
			for i, an := range anchors {
				s.setPlace(an, places[i])
			}
			served := s.notes.served
			s.notes.served = nil
			for _, w := range served {
				s.attachNotes(w)
			}
			if s.notes.pendingAll || len(s.notes.pendingIDs) > 0 {
				s.placeAnnotations()
				return
			}
			s.releaseWaiting()
		})
	})
}

// annotationsMayHaveMoved recomputes the current places after the working
// tree or the turns changed.
func (s *Session) annotationsMayHaveMoved() {
	if len(s.notes.state.Annotations) > 0 && s.started {
		s.placeAnnotations()
	}
}

// filesChanged places again the annotations on the files a refresh
// looked at: every one after a full refresh, else those under its paths.
func (s *Session) filesChanged(results []wsResult) {
	if len(s.notes.state.Annotations) == 0 || !s.started {
		return
	}
	var ids []string
	for _, a := range s.notes.state.Annotations {
		i, rel, ok := s.locate(a.Resource)
		if !ok {
			continue
		}
		for _, r := range results {
			if r.err != nil || r.ws != i {
				continue
			}
			if r.all {
				s.annotationsMayHaveMoved()
				return
			}
			if underAny(fileOrigin{to: &FileVersion{Path: rel}}, r.paths) {
				ids = append(ids, a.ID)
				break
			}
		}
	}
	if len(ids) > 0 {
		s.placeAnnotations(ids...)
	}
}

func (s *Session) releaseWaiting() {
	ws := s.notes.waiting
	s.notes.waiting = nil
	for _, w := range ws {
		s.attachNotes(w)
	}
}

// setPlace publishes an annotation with its new place when it is still
// anchored where the place was computed from and the place changed.
func (s *Session) setPlace(an anchor, p protocol.AnnotationPlace) {
	if p.Status == "" {
		return // could not be computed
	}
	prev := s.annotation(an.id)
	if prev == nil || prev.TurnID != an.turnID || prev.Resource != an.resource || !annotation.SameRange(prev.Range, an.rng) {
		return
	}
	if old, ok := prev.Meta[protocol.MetaCurrent]; ok {
		if b1, _ := json.Marshal(old); string(b1) == string(mustJSON(p)) {
			return
		}
	}
	n := annotation.CloneMeta(*prev)
	n.Meta[protocol.MetaCurrent] = p
	if err := s.applyAnnotations(protocol.AnnotationsSet{Annotation: n}, nil, false); err != nil {
		s.log.Warn("cannot save an annotation's current place", "annotation", an.id, "err", err)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// places computes where each anchor's lines are in the working tree now,
// with one Changes query per workspace and tree for all their files.
func (m *Manager) places(ctx context.Context, anchors []anchor) []protocol.AnnotationPlace {
	type group struct {
		ws   Workspace
		tree string
	}
	paths := map[group][]string{}
	for _, an := range anchors {
		if an.tree != "" {
			g := group{an.ws, an.tree}
			if !slices.Contains(paths[g], an.rel) {
				paths[g] = append(paths[g], an.rel)
			}
		}
	}
	changed := map[group]map[string]*FileChange{}
	for g, ps := range paths {
		list, err := g.ws.Changes(ctx, Query{View: ViewTrees, From: g.tree, Paths: ps})
		if err != nil {
			continue // places stay as they were computed last
		}
		byPath := map[string]*FileChange{}
		for i := range list.Files {
			f := &list.Files[i]
			if f.Old != nil {
				byPath[f.Old.Path] = f
			} else if f.New != nil {
				byPath[f.New.Path] = f
			}
		}
		changed[g] = byPath
	}
	// Each changed file is read and diffed once, for all its annotations.
	type fileKey struct {
		g   group
		rel string
	}
	texts := map[fileKey]*fileText{}
	out := make([]protocol.AnnotationPlace, len(anchors))
	for i, an := range anchors {
		g := group{an.ws, an.tree}
		byPath, ok := changed[g]
		switch {
		case an.tree == "":
			// The turn is still running: its end is the working tree.
			out[i] = protocol.AnnotationPlace{Status: protocol.PlaceSame, Range: an.rng}
			continue
		case !ok:
			out[i] = protocol.AnnotationPlace{} // unknown: keep the last place
			continue
		}
		fc := byPath[an.rel]
		switch {
		case fc == nil:
			out[i] = protocol.AnnotationPlace{Status: protocol.PlaceSame, Range: an.rng}
		case fc.New == nil:
			out[i] = protocol.AnnotationPlace{Status: protocol.PlaceGone}
		case fc.Old == nil:
			// Created since: the turn left no such file to move from.
			out[i] = protocol.AnnotationPlace{Status: protocol.PlaceSame, Range: an.rng}
		case an.rng == nil:
			out[i] = protocol.AnnotationPlace{Status: protocol.PlaceEdited}
		default:
			k := fileKey{g, an.rel}
			ft := texts[k]
			if ft == nil {
				ft = m.readChanged(an, fc)
				texts[k] = ft
			}
			if ft.lines == nil {
				out[i] = protocol.AnnotationPlace{Status: protocol.PlaceEdited, Range: an.rng}
			} else {
				out[i] = annotation.MapRange(ft.lines, ft.cur, *an.rng)
			}
		}
	}
	return out
}

// fileText is a changed file's current content and its line map from the
// turn's end; lines is nil when it cannot be diffed.
type fileText struct {
	cur   []byte
	lines *changeset.LineMapper
}

func (m *Manager) readChanged(an anchor, fc *FileChange) *fileText {
	old, err := an.ws.ReadBlob(fc.Old.OID)
	if err != nil {
		return &fileText{}
	}
	var cur []byte
	if fc.New.Live {
		cur, err = m.readFile(FileURI(an.abs), changeset.DefaultMaxFileBytes)
	} else {
		cur, err = an.ws.ReadBlob(fc.New.OID)
	}
	if err != nil || changeset.IsBinary(old) || changeset.IsBinary(cur) {
		return &fileText{}
	}
	return &fileText{cur: cur, lines: changeset.NewLineMapper(old, cur)}
}
