package session

import (
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

func rng(l1, c1, l2, c2 int) protocol.TextRange {
	return protocol.TextRange{Start: protocol.TextPosition{Line: l1, Character: c1}, End: protocol.TextPosition{Line: l2, Character: c2}}
}

// The annotations actions held behind a set that waits for the disk go
// on when that work fails unexpectedly (it panicked): the set is refused
// and the next actions are taken in order.
func TestHeldAnnotationsActionsGoOnAfterAPanic(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\ntwo\n"}, map[string]string{"a.txt": "one\ntwo\nthree\n"})
	w := newClient("w")
	r.watchUncommitted(t, w, "a.txt")
	uri := protocol.AnnotationsURI(r.uri)
	c := newClient("c1")
	c.subscribe(t, r.m, uri)
	r.ws.snapPanic.Store(true)
	rg := rng(2, 0, 3, 0)
	entries := []protocol.AnnotationEntry{{ID: "e1", Text: protocol.PlainText("why?")}}
	r.m.Dispatch(c, uri, 1, protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "n1", TurnID: BaselineTurnID, Resource: r.fileURI("a.txt"), Range: &rg,
		Entries: entries, Meta: protocol.Object{protocol.MetaOnWorkingTree: true}}})
	r.m.Dispatch(c, uri, 2, protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: "n2", TurnID: BaselineTurnID, Resource: r.fileURI("a.txt"), Entries: entries}})
	c.await(t, "the refusal of the set, then the next set", func() bool {
		refused, stored := false, false
		for _, e := range c.envs {
			if e.Origin == nil || e.Channel != uri {
				continue
			}
			refused = refused || e.Origin.ClientSeq == 1 && e.RejectionReason != ""
			stored = stored || e.Origin.ClientSeq == 2 && e.RejectionReason == ""
		}
		return refused && stored
	})
}
