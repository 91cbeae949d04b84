package protocol

// VS Code's agent host keeps a reviewer's comments ("agent feedback") as
// annotations whose _meta[MetaFeedback] is a Feedback (microsoft/vscode,
// src/vs/platform/agentHost/common/agentFeedbackAnnotations.ts): the
// annotation's own fields carry id, resource, range and resolved, and the
// Feedback its origin and lifecycle. An entry's _meta[MetaFeedback] may
// carry its author as {"author": ...}.
//
// This server speaks the convention both ways. A comment written in VS
// Code reaches the agent as one from the review page does, once the user
// accepted it; every annotation this server keeps carries a Feedback, so
// VS Code shows the page's and the agent's comments too; and the states
// map onto the server's own records: delivered to the agent ↔ submitted,
// resolved ↔ resolved.
const MetaFeedback = "vscode.agentFeedback"

// Feedback kinds: who the comment comes from.
const (
	FeedbackUser       = "user"       // the user wrote it
	FeedbackCodeReview = "codeReview" // a code-review pass proposed it
	FeedbackPRReview   = "prReview"   // it comes from a pull request review
)

// Feedback states.
const (
	// FeedbackCreated: a review comment proposed to the user, who has
	// not accepted it yet; it is not for the agent.
	FeedbackCreated = "created"
	// FeedbackAccepted: for the agent, not handed to it yet.
	FeedbackAccepted = "accepted"
	// FeedbackSubmitted: handed to the agent.
	FeedbackSubmitted = "submitted"
	// FeedbackResolved: dealt with.
	FeedbackResolved = "resolved"
)

// Feedback is the value of an annotation's _meta[MetaFeedback]. Members
// other than these are kept as they were (see FeedbackOf).
type Feedback struct {
	Kind                    string `json:"kind"`
	State                   string `json:"state"`
	SessionResource         string `json:"sessionResource"`
	Suggestion              any    `json:"suggestion,omitempty"`
	CodeSelection           string `json:"codeSelection,omitempty"`
	DiffHunks               string `json:"diffHunks,omitempty"`
	SourcePRReviewCommentID string `json:"sourcePRReviewCommentId,omitempty"`
	PendingAgentReveal      *bool  `json:"pendingAgentReveal,omitempty"`
}

func validFeedbackKind(k string) bool {
	return k == FeedbackUser || k == FeedbackCodeReview || k == FeedbackPRReview
}

func validFeedbackState(s string) bool {
	return s == FeedbackCreated || s == FeedbackAccepted || s == FeedbackSubmitted || s == FeedbackResolved
}

// FeedbackOf reads a's Feedback as VS Code does: present only when kind
// and state are values it knows and sessionResource is a string.
func FeedbackOf(a Annotation) (Feedback, bool) {
	raw, ok := asMap(a.Meta[MetaFeedback])
	if !ok {
		return Feedback{}, false
	}
	f := Feedback{Suggestion: raw["suggestion"]}
	f.Kind, _ = raw["kind"].(string)
	f.State, _ = raw["state"].(string)
	res, isString := raw["sessionResource"].(string)
	if !validFeedbackKind(f.Kind) || !validFeedbackState(f.State) || !isString {
		return Feedback{}, false
	}
	f.SessionResource = res
	f.CodeSelection, _ = raw["codeSelection"].(string)
	f.DiffHunks, _ = raw["diffHunks"].(string)
	f.SourcePRReviewCommentID, _ = raw["sourcePRReviewCommentId"].(string)
	if b, ok := raw["pendingAgentReveal"].(bool); ok {
		f.PendingAgentReveal = &b
	}
	return f, true
}

// ProposedOnly reports whether a is a review comment proposed to the user
// in VS Code and not accepted yet (state created): the agent is not shown
// it until the user accepts it.
func ProposedOnly(a Annotation) bool {
	f, ok := FeedbackOf(a)
	return ok && f.State == FeedbackCreated && !a.Resolved
}

// WithFeedbackState returns a copy of meta whose Feedback has state, and
// no pendingAgentReveal once submitted or resolved (VS Code clears it on
// delivery), keeping every other member as it was. A meta without a
// valid Feedback gets a new one: a user's comment of sessionResource.
func WithFeedbackState(meta Object, state, sessionResource string) Object {
	out := Object{}
	for k, v := range meta {
		out[k] = v
	}
	fb := map[string]any{}
	if _, ok := FeedbackOf(Annotation{Meta: meta}); ok {
		old, _ := asMap(meta[MetaFeedback])
		for k, v := range old {
			fb[k] = v
		}
	} else {
		fb["kind"], fb["sessionResource"] = FeedbackUser, sessionResource
	}
	fb["state"] = state
	if state == FeedbackSubmitted || state == FeedbackResolved {
		delete(fb, "pendingAgentReveal")
	}
	out[MetaFeedback] = fb
	return out
}

// asMap reads a JSON object held in an any.
func asMap(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok && m != nil
}
