package agent

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// Author is the protocol.MetaAuthor of the entries the agent writes.
const Author = "agent"

// IsAgentEntry reports whether the agent wrote e.
func IsAgentEntry(e protocol.AnnotationEntry) bool {
	author, _ := e.Meta[protocol.MetaAuthor].(string)
	return author == Author
}

// delivered returns the ids of a's entries the agent has been handed.
func delivered(a protocol.Annotation) []string {
	var d protocol.AnnotationDelivery
	metaAs(a.Meta, protocol.MetaDelivered, &d)
	return d.Entries
}

// Undelivered returns the ids of a's entries the agent has not been
// handed and did not write itself.
func Undelivered(a protocol.Annotation) []string {
	seen := delivered(a)
	var ids []string
	for _, e := range a.Entries {
		if !IsAgentEntry(e) && !slices.Contains(seen, e.ID) {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// OpenForAgent reports whether a is for the agent to read: unresolved,
// not a review comment the user has yet to accept in VS Code, with an
// entry of someone else's it has not been handed yet.
func OpenForAgent(a protocol.Annotation) bool {
	return !a.Resolved && !protocol.ProposedOnly(a) && len(Undelivered(a)) > 0
}

// Pending is an annotation chosen as feedback for the agent's next
// prompt.
type Pending struct {
	ID string
	// Seen are the ids of its entries the agent was handed before.
	Seen []string
	// By says who wrote the lines it is on, in words for the agent;
	// empty when that is not known.
	By []string
}

// Select chooses, in the daemon's order, the annotations open for the
// agent (OpenForAgent) that are not on a turn of otherTurns: when several
// agents share a session, annotations on another agent's turns are left
// for that agent.
func Select(annotations []protocol.Annotation, otherTurns map[string]bool) []Pending {
	var out []Pending
	for _, a := range annotations {
		if OpenForAgent(a) && !otherTurns[a.TurnID] {
			out = append(out, Pending{ID: a.ID, Seen: delivered(a)})
		}
	}
	return out
}

// SelectFor is Select with who wrote the lines of each annotation
// (linesBy, by annotation id: the hunk authors of package attrib, chat
// URIs, "you" or "unknown"), for the agent of chat self: an annotation
// on lines agents wrote goes to those agents, whichever turn it is on;
// one on lines only the user wrote goes to no agent (it is kept for the
// user); the others go by their turn, as with Select.
func SelectFor(annotations []protocol.Annotation, otherTurns map[string]bool, linesBy map[string][]string, self string) []Pending {
	var out []Pending
	for _, a := range annotations {
		if !OpenForAgent(a) {
			continue
		}
		by := linesBy[a.ID]
		var agents []string
		yours := len(by) > 0
		for _, x := range by {
			if strings.HasPrefix(x, protocol.ChatScheme) {
				agents = append(agents, x)
			}
			yours = yours && x == "you"
		}
		switch {
		case len(agents) > 0 && !slices.Contains(agents, self):
			continue
		case yours:
			continue
		case len(agents) == 0 && otherTurns[a.TurnID]:
			continue
		}
		p := Pending{ID: a.ID, Seen: delivered(a)}
		for _, x := range by {
			switch {
			case x == self:
				p.By = append(p.By, "you (this agent)")
			case x == "you":
				p.By = append(p.By, "the user")
			case strings.HasPrefix(x, protocol.ChatScheme):
				name := x
				if _, id, ok := protocol.ParseChatURI(x); ok {
					name = id
				}
				p.By = append(p.By, "another agent (`"+name+"`)")
			default:
				p.By = append(p.By, x)
			}
		}
		out = append(out, p)
	}
	return out
}

// IDs returns the ids of the annotations of p.
func IDs(p []Pending) []string {
	ids := make([]string, len(p))
	for i, q := range p {
		ids[i] = q.ID
	}
	return ids
}

// FeedbackIntro heads what the agent is shown on its next prompt.
const FeedbackIntro = `## Review comments on your changes

A reviewer commented on lines of your changes. Each comment below names the
file and the lines it is about as they are now. Take the comments into
account in this turn. Answer one with
` + "`changesetd annotations reply ID \"your answer\"`" + `, and once you have
dealt with it, mark it done with ` + "`changesetd annotations resolve ID`" + `
(ID is the annotation id given under each heading).

`

// Feedback renders, in markdown under FeedbackIntro, the annotations of
// pending as they are in latest (the versions the daemon published as it
// marked them delivered, so that an entry arriving meanwhile is not shown
// as seen), with paths relative to dirs, the session's working
// directories. Annotations gone from latest or resolved meanwhile are
// left out; in a thread the agent has read before, the entries it has
// not are marked new. It returns "" when none is left.
func Feedback(pending []Pending, latest map[string]protocol.Annotation, dirs []string) string {
	var views []View
	for _, p := range pending {
		a, ok := latest[p.ID]
		if !ok || a.Resolved {
			continue
		}
		v := ViewOf(a, dirs)
		v.by = p.By
		if len(p.Seen) > 0 {
			// A thread the agent has read before: say what is new.
			v.fresh = map[string]bool{}
			for _, e := range a.Entries {
				v.fresh[e.ID] = !IsAgentEntry(e) && !slices.Contains(p.Seen, e.ID)
			}
		}
		views = append(views, v)
	}
	if len(views) == 0 {
		return ""
	}
	SortViews(views)
	var b strings.Builder
	b.WriteString(FeedbackIntro)
	markdownSections(&b, views)
	return b.String()
}

// metaAs decodes the value of key in m into out, reporting whether there
// was one of that shape.
func metaAs(m protocol.Object, key string, out any) bool {
	v, ok := m[key]
	if !ok {
		return false
	}
	b, err := json.Marshal(v)
	return err == nil && json.Unmarshal(b, out) == nil
}
