package annotation

import (
	"fmt"
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// CheckEntry returns what is wrong with an entry a client sent, naming
// the field, or "".
func CheckEntry(e protocol.AnnotationEntry) string {
	switch {
	case e.ID == "":
		return "id is empty"
	case strings.TrimSpace(e.Text.Text) == "":
		return "text is empty"
	case len(e.Text.Text) > MaxEntryTextBytes:
		return fmt.Sprintf("text is %d bytes; at most %d are kept", len(e.Text.Text), MaxEntryTextBytes)
	}
	return ""
}

// CheckRange returns what is wrong with an anchor's range, or "". A nil
// range (the whole file) is fine.
func CheckRange(r *protocol.TextRange) string {
	switch {
	case r == nil:
		return ""
	case r.Start.Line < 0 || r.Start.Character < 0 || r.End.Line < 0 || r.End.Character < 0:
		return "range has a negative line or character"
	case r.End.Line < r.Start.Line || (r.End.Line == r.Start.Line && r.End.Character < r.Start.Character):
		return "range ends before it starts"
	}
	return ""
}

// StampEntry gives an entry the time the server first saw it (now),
// keeping the one old, its previous version, already had, and the author
// of its feedback.
func StampEntry(e protocol.AnnotationEntry, old *protocol.AnnotationEntry, now string) protocol.AnnotationEntry {
	at := now
	if old != nil {
		if v, ok := old.Meta[protocol.MetaCreatedAt].(string); ok {
			at = v
		}
	}
	meta := protocol.Object{}
	for k, v := range e.Meta {
		meta[k] = v
	}
	meta[protocol.MetaCreatedAt] = at
	stampFeedbackAuthor(meta)
	e.Meta = meta
	return e
}

// stampFeedbackAuthor gives an entry's feedback the author it was written
// by, the agent's side or the user, unless it names one already.
func stampFeedbackAuthor(meta protocol.Object) {
	fb := map[string]any{}
	if old, ok := meta[protocol.MetaFeedback].(map[string]any); ok {
		if a, ok := old["author"].(string); ok && a != "" {
			return
		}
		for k, v := range old {
			fb[k] = v
		}
	}
	fb["author"] = protocol.FeedbackUser
	if meta[protocol.MetaAuthor] == "agent" {
		fb["author"] = "agent"
	}
	meta[protocol.MetaFeedback] = fb
}
