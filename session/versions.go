package session

import (
	"fmt"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/view"
)

// The version contract is the view model's (package view): an intent
// carries in its _meta the view stamp (MetaView) and the content nonces
// (MetaVersions) it was shown; without them it is bound to what the
// changeset published last, when the daemon validated it.

// _meta keys of an intent.
const (
	MetaView     = view.MetaView
	MetaVersions = view.MetaVersions
)

// pathOfID names a file id for a message: its path when the changeset
// has it, else the id.
func (cs *csChannel) pathOfID(id string) string {
	if o, ok := cs.origin[id]; ok {
		return o.path()
	}
	return id
}

// staleError is the refusal of an intent made on versions the files no
// longer have: -32011, reason fileChanged, data.files naming them.
func staleError(method string, changed, unseen []string) error {
	var parts []string
	if len(changed) > 0 {
		parts = append(parts, fmt.Sprintf("%s changed since the page or client showed %s (%s)", capital(files(len(changed))), them(len(changed)), nameList(changed)))
	}
	if len(unseen) > 0 {
		parts = append(parts, fmt.Sprintf("%s appeared since and %s never shown (%s)", files(len(unseen)), was(len(unseen)), nameList(unseen)))
	}
	all := append(slices.Clone(changed), unseen...)
	e := protocol.Errorf(protocol.CodeConflict, "%s: %s; nothing was changed: look at the current version and try again", method, strings.Join(parts, "; "))
	e.Data = map[string]any{"reason": protocol.ReasonFileChanged, "files": all}
	return e
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func was(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// bindShown binds an invocation to the versions its client was shown:
// the files it names must still have them (else it is refused naming
// them), each target file must be among them, and its view stamp is the
// one the write is checked against (t.view). Without them it is bound to
// what the changeset last published: the versions of its files as
// validated here, which the Editor checks against the disk. Undo and dismissUndo act on a kept revert,
// whose own check (Editor.UndoCurrent) applies. On the actor.
func (cs *csChannel) bindShown(s *Session, t *opTarget, sh *view.Shown, ws int) error {
	if sh == nil || t.op == OpUndo || t.op == OpDismissUndo {
		return nil
	}
	if changed, unseen := cs.v.ChangedSince(sh, cs.idsOf(t.files), cs.pathOfID); len(changed)+len(unseen) > 0 {
		return staleError("invokeChangesetOperation", changed, unseen)
	}
	if sh.View == "" || (cs.ref.Kind != protocol.KindUncommitted && cs.ref.Kind != protocol.KindBranch) {
		return nil
	}
	v, ok := view.ViewOfStamp(sh.View, ws, len(s.workspaces))
	if t.op == OpCommit && ok && sh.View != cs.v.Published() {
		// A commit records the index as it is: one the client has not
		// been shown, even if only the daemon's own operations made it
		// from the shown one, would commit what nobody confirmed.
		return protocol.Errorf(protocol.CodeConflict, "invokeChangesetOperation: the index changed since the changeset was shown (another client staged or unstaged); nothing was committed: look at what is staged now and commit again").WithReason(protocol.ReasonViewChanged)
	}
	if !ok {
		return protocol.Errorf(protocol.CodeConflict, "invokeChangesetOperation: _meta.%s is not a view this changeset published; nothing was changed: look at the current version and try again", MetaView).WithReason(protocol.ReasonViewChanged)
	}
	t.view = v
	return nil
}

// idsOf is the file ids of the changeset's files among fs.
func (cs *csChannel) idsOf(fs []fileOrigin) []string {
	var ids []string
	for id, o := range cs.origin {
		if slices.ContainsFunc(fs, func(f fileOrigin) bool { return f.ws == o.ws && f.path() == o.path() && f.old() == o.old() }) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// withView is v with its view stamp replaced; v itself is shared and is
// not changed.
func withView(v *FileVersion, view string) *FileVersion {
	if v == nil {
		return nil
	}
	c := *v
	c.View = view
	return &c
}

// staleReview is why a review flag (of files ids, or of hunks of one of
// them) must be rejected, or "". A flag that
// marks files reviewed and names the versions they were shown at
// (_meta.versions) is rejected when one of them no longer has that
// content, or when it marks a file it does not name: the new, unseen
// content would otherwise be marked reviewed, and stay so across
// restarts. Clearing a flag marks nothing unseen and is never rejected.
// A flag with no _meta.versions is bound to the content the changeset
// last published.
func (cs *csChannel) staleReview(meta protocol.Object, reviewed bool, ids []string) string {
	sh, err := view.ParseShown(meta)
	if err != nil {
		return err.Error()
	}
	if sh == nil || !reviewed {
		return ""
	}
	var targets []string
	for _, id := range ids {
		if _, ok := cs.origin[id]; ok {
			targets = append(targets, id)
		}
	}
	changed, unseen := cs.v.ChangedSince(sh, targets, cs.pathOfID)
	if len(changed)+len(unseen) == 0 {
		return ""
	}
	var parts []string
	if len(changed) > 0 {
		parts = append(parts, fmt.Sprintf("the file changed since it was shown, so what was reviewed is not its content now: %s", nameList(changed)))
	}
	if len(unseen) > 0 {
		parts = append(parts, fmt.Sprintf("no version was named in _meta.%s for %s", MetaVersions, nameList(unseen)))
	}
	return "not marked reviewed: " + strings.Join(parts, "; ") + "; review the current version"
}
