package session

import (
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session/annotation"
)

// VS Code's agent feedback on the annotations channel (see
// protocol.MetaFeedback). VS Code writes its comments with turnId "" and
// keeps their lifecycle in _meta; this server anchors every annotation to
// a turn and records deliveries itself, so each annotations/set passes
// through here:
//
//   - An empty turnId of a feedback annotation is the turn it already
//     had, or else the session's latest turn (the one whose files the
//     user was looking at), or the baseline before any turn.
//   - The Feedback state follows the server's records: resolved when the
//     annotation is, submitted once delivered to the agent, created while
//     VS Code's user has not accepted a proposed review comment, accepted
//     otherwise. A client's "submitted" counts as a delivery of the
//     entries it has (VS Code handed them to the agent), and its
//     "resolved" resolves the annotation.
//   - An annotation without a Feedback gets one (kind user, this
//     session), so VS Code shows the review page's comments as its own.

// feedbackTurn is the turn an annotation from a client is anchored to.
func (s *Session) feedbackTurn(n protocol.Annotation, prev *protocol.Annotation) string {
	if n.TurnID != "" {
		return n.TurnID
	}
	if _, ok := protocol.FeedbackOf(n); !ok {
		return "" // refused as before: name a turn
	}
	if prev != nil {
		return prev.TurnID
	}
	if len(s.turns) > 0 {
		return s.turns[len(s.turns)-1].id
	}
	return BaselineTurnID
}

// adoptFeedback returns n with its resolved flag, delivery record and
// Feedback reconciled, as the rules above say. n's _meta already has the
// server's own keys put back.
func adoptFeedback(n protocol.Annotation, sessionURI, now string) protocol.Annotation {
	if f, ok := protocol.FeedbackOf(n); ok {
		switch f.State {
		case protocol.FeedbackResolved:
			n.Resolved = true
		case protocol.FeedbackSubmitted:
			if _, delivered := n.Meta[protocol.MetaDelivered]; !delivered {
				d := protocol.AnnotationDelivery{At: now, Entries: []string{}}
				for _, e := range n.Entries {
					d.Entries = append(d.Entries, e.ID)
				}
				n.Meta = protocol.WithFeedbackState(n.Meta, f.State, sessionURI)
				n.Meta[protocol.MetaDelivered] = d
			}
		}
	}
	n.Meta = protocol.WithFeedbackState(n.Meta, feedbackState(n), sessionURI)
	return n
}

// feedbackState is the Feedback state n shows.
func feedbackState(n protocol.Annotation) string {
	_, delivered := n.Meta[protocol.MetaDelivered]
	switch {
	case n.Resolved:
		return protocol.FeedbackResolved
	case protocol.ProposedOnly(n):
		return protocol.FeedbackCreated
	case delivered:
		return protocol.FeedbackSubmitted
	}
	return protocol.FeedbackAccepted
}

// syncFeedback publishes the Feedback state of annotation id again when
// it no longer matches (after a resolve or re-open, which annotations/
// updated says without _meta). On the actor.
func (s *Session) syncFeedback(id string) {
	cur := s.annotation(id)
	if cur == nil {
		return
	}
	if f, ok := protocol.FeedbackOf(*cur); ok && f.State == feedbackState(*cur) {
		return
	}
	n := annotation.CloneMeta(*cur)
	n.Meta = protocol.WithFeedbackState(n.Meta, feedbackState(n), s.uri)
	if err := s.commitAnnotations(protocol.AnnotationsSet{Annotation: n}, nil); err != nil {
		s.log.Error("cannot save an annotation's feedback state", "annotation", id, "err", err)
	}
}

// withFeedbackAll gives each stored annotation the Feedback its records
// say, for annotations kept before this server wrote one.
func withFeedbackAll(st protocol.AnnotationsState, sessionURI string) protocol.AnnotationsState {
	for i, a := range st.Annotations {
		if f, ok := protocol.FeedbackOf(a); ok && f.State == feedbackState(a) {
			continue
		}
		st.Annotations[i].Meta = protocol.WithFeedbackState(a.Meta, feedbackState(a), sessionURI)
	}
	return st
}
