package reducer

import (
	"math"
	"slices"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// Tool call statuses and the cancellation reason the chat reducer reads
// and writes inside untyped tool-call response parts.
const (
	partKindToolCall    = "toolCall"
	toolCallCompleted   = "completed"
	toolCallCancelled   = "cancelled"
	toolCallStreaming   = "streaming"
	cancelReasonSkipped = "skipped"
)

// modifiedAtLayout is how the reducer writes ChatState.modifiedAt: UTC with
// milliseconds, as JavaScript's Date.toISOString does.
const modifiedAtLayout = "2006-01-02T15:04:05.000Z"

// ApplyChat reduces one action into the state of an ahp-chat: channel. It
// never modifies s; see the package documentation.
//
// The reducer reads no clock: modifiedAt becomes the turn's startedAt when
// a turn starts, and startedAt plus the (clamped) duration when it ends, as
// the upstream Go client computes it. (The TypeScript reference reads
// Date.now() instead; the two agree whenever the producer's duration is the
// time elapsed since startedAt.)
func ApplyChat(s protocol.ChatState, a protocol.Action, env Env) (protocol.ChatState, Outcome) {
	_ = env // no version-dependent chat semantics yet
	switch a := a.(type) {
	case protocol.ChatTurnStarted:
		return chatTurnStarted(s, a), Applied
	case protocol.ChatTurnComplete:
		return endTurn(s, a.TurnID, a.Duration, protocol.TurnComplete)
	case protocol.ChatTurnCancelled:
		return endTurn(s, a.TurnID, a.Duration, protocol.TurnCancelled)
	case protocol.ChatChangesetsChanged:
		s.Changesets = slices.Clone(a.Changesets)
		return s, Applied
	case protocol.ChatActivityChanged:
		s.Activity = clonePtr(a.Activity)
		return s, Applied
	case protocol.ChatTurnsLoaded:
		return turnsLoaded(s, a), Applied
	}
	return s, NoOp
}

// chatTurnStarted makes the message the active turn (replacing any), marks
// the chat in progress and unread, and drops the pending message the turn
// consumed.
func chatTurnStarted(s protocol.ChatState, a protocol.ChatTurnStarted) protocol.ChatState {
	s.ActiveTurn = &protocol.ActiveTurn{
		ID:            a.TurnID,
		StartedAt:     a.StartedAt,
		Message:       a.Message,
		ResponseParts: []protocol.ResponsePart{},
	}
	s.Status = withActivity(s.Status, chatActivity(s)) &^ protocol.SessionIsRead
	if a.StartedAt != "" {
		s.ModifiedAt = a.StartedAt
	}
	if id := a.QueuedMessageID; id != "" {
		if s.SteeringMessage != nil && keyOf(s.SteeringMessage, "id") == id {
			s.SteeringMessage = nil
		}
		if s.QueuedMessages != nil {
			s.QueuedMessages = slices.DeleteFunc(slices.Clone(s.QueuedMessages), func(m protocol.Object) bool {
				return keyOf(m, "id") == id
			})
			if len(s.QueuedMessages) == 0 {
				s.QueuedMessages = nil
			}
		}
	}
	return s
}

// endTurn moves the active turn with the id into turns with the given end
// state. Tool calls still in flight are recorded as cancelled ("skipped").
// Any other id, or no active turn, is a no-op.
func endTurn(s protocol.ChatState, turnID string, duration int64, state string) (protocol.ChatState, Outcome) {
	active := s.ActiveTurn
	if active == nil || active.ID != turnID {
		return s, NoOp
	}
	// Duration is producer-supplied and opaque; only a negative value is
	// corrected.
	duration = max(duration, 0)
	turn := protocol.Turn{
		ID:            active.ID,
		StartedAt:     active.StartedAt,
		Duration:      protocol.Ptr(duration),
		Message:       active.Message,
		ResponseParts: finalParts(active.ResponseParts),
		Usage:         active.Usage,
		State:         state,
	}
	s.Turns = append(slices.Clip(s.Turns), turn)
	s.ActiveTurn = nil
	if end, ok := addMillis(active.StartedAt, duration); ok {
		s.ModifiedAt = end
	}
	s.Status = withActivity(s.Status, chatActivity(s))
	return s, Applied
}

// finalParts returns the parts of an ending turn, replacing each tool call
// that has not completed or been cancelled by a cancelled copy. The input
// is not modified; the result is never nil.
func finalParts(parts []protocol.ResponsePart) []protocol.ResponsePart {
	out := make([]protocol.ResponsePart, len(parts))
	for i, p := range parts {
		out[i] = p
		tc, ok := p["toolCall"].(map[string]any)
		if keyOf(p, "kind") != partKindToolCall || !ok {
			continue
		}
		switch keyOf(tc, "status") {
		case toolCallCompleted, toolCallCancelled:
			continue
		}
		out[i] = protocol.Object{"kind": partKindToolCall, "toolCall": cancelledToolCall(tc)}
	}
	return out
}

// cancelledToolCall builds the cancelled state of an in-flight tool call:
// its common fields, its invocation message ("" if a streaming call had
// none yet) and, unless it was still streaming, its input.
func cancelledToolCall(tc map[string]any) protocol.Object {
	out := protocol.Object{"status": toolCallCancelled, "reason": cancelReasonSkipped}
	for _, k := range []string{"toolCallId", "toolName", "displayName", "intention", "contributor", "_meta", "invocationMessage"} {
		if v, ok := tc[k]; ok && v != nil {
			out[k] = v
		}
	}
	if keyOf(tc, "status") == toolCallStreaming {
		if _, ok := out["invocationMessage"]; !ok {
			out["invocationMessage"] = ""
		}
		return out
	}
	if v, ok := tc["toolInput"]; ok && v != nil {
		out["toolInput"] = v
	}
	return out
}

// chatActivity is the activity a chat's status should show: InputNeeded
// while the active turn waits on the user (a tool call awaiting
// confirmation or authentication, or an unanswered input request),
// InProgress while any other turn runs, Idle otherwise.
func chatActivity(s protocol.ChatState) int {
	if s.ActiveTurn == nil {
		return protocol.SessionIdle
	}
	for _, p := range s.ActiveTurn.ResponseParts {
		if blocksOnUser(p) {
			return protocol.SessionInputNeeded
		}
	}
	return protocol.SessionInProgress
}

// blocksOnUser reports whether a response part waits on the user.
func blocksOnUser(p protocol.ResponsePart) bool {
	switch keyOf(p, "kind") {
	case partKindToolCall:
		tc, _ := p["toolCall"].(map[string]any)
		switch keyOf(tc, "status") {
		case "pending-confirmation", "pending-result-confirmation", "auth-required":
			return true
		}
	case "inputRequest":
		r, present := p["response"]
		return !present || r == nil
	}
	return false
}

// addMillis returns the ISO 8601 timestamp ms milliseconds after ts, or
// false if ts does not parse or the sum overflows.
func addMillis(ts string, ms int64) (string, bool) {
	start, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || ms > math.MaxInt64/int64(time.Millisecond) {
		return "", false
	}
	end := start.Add(time.Duration(ms) * time.Millisecond).UTC()
	if end.Year() > 9999 {
		return "", false
	}
	return end.Format(modifiedAtLayout), true
}

// turnsLoaded puts the loaded turns that the state does not hold yet in
// front of its turns, in their order, and takes the action's cursor.
func turnsLoaded(s protocol.ChatState, a protocol.ChatTurnsLoaded) protocol.ChatState {
	have := make(map[string]bool, len(s.Turns))
	for _, t := range s.Turns {
		have[t.ID] = true
	}
	turns := make([]protocol.Turn, 0, len(a.Turns)+len(s.Turns))
	for _, t := range a.Turns {
		if !have[t.ID] {
			turns = append(turns, t)
		}
	}
	s.Turns = append(turns, s.Turns...)
	s.TurnsNextCursor = a.TurnsNextCursor
	return s
}
