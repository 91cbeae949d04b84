package uritemplate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// Variable names of the changeset URI templates.
const (
	VarTurnID         = "turnId"
	VarOriginalTurnID = "originalTurnId"
	VarModifiedTurnID = "modifiedTurnId"
)

// ErrBadChangesetURI is wrapped by every error of ParseChangesetURI and
// FormatChangesetURI. The rest of the message says what was wrong, in words
// fit for a JSON-RPC error returned to the client.
var ErrBadChangesetURI = errors.New("bad changeset URI")

// changesetLayout describes one changeset kind of this server: the path
// segment after ".../changeset/" and the variables that follow it, one path
// segment each.
type changesetLayout struct {
	kind    string // changeKind, protocol.Kind*
	segment string
	vars    []string
	labels  []string // how messages name each variable
}

var changesetLayouts = []changesetLayout{
	{kind: protocol.KindUncommitted, segment: "uncommitted"},
	{kind: protocol.KindBranch, segment: "branch"},
	{kind: protocol.KindSession, segment: "session"},
	{kind: protocol.KindTurn, segment: "turn",
		vars: []string{VarTurnID}, labels: []string{"turn id"}},
	{kind: protocol.KindCompareTurns, segment: "compare",
		vars:   []string{VarOriginalTurnID, VarModifiedTurnID},
		labels: []string{"original turn id", "modified turn id"}},
}

func layoutByKind(kind string) (changesetLayout, bool) {
	for _, l := range changesetLayouts {
		if l.kind == kind {
			return l, true
		}
	}
	return changesetLayout{}, false
}

func layoutBySegment(seg string) (changesetLayout, bool) {
	for _, l := range changesetLayouts {
		if l.segment == seg {
			return l, true
		}
	}
	return changesetLayout{}, false
}

func (l changesetLayout) template(sessionID string) string {
	var b strings.Builder
	b.WriteString(protocol.ChangesetScheme + "/")
	b.WriteString(sessionID)
	b.WriteString("/changeset/")
	b.WriteString(l.segment)
	for _, v := range l.vars {
		b.WriteString("/{" + v + "}")
	}
	return b.String()
}

// knownSegments lists the kind segments for error messages.
var knownSegments = func() string {
	var segs []string
	for _, l := range changesetLayouts {
		segs = append(segs, l.segment)
	}
	return strings.Join(segs, ", ")
}()

// ValidSessionID reports whether id can be used as the session id segment of
// a changeset URI: one or more unreserved characters (letters, digits,
// "-", ".", "_", "~"), and not "." or "..".
func ValidSessionID(id string) bool {
	return checkSessionID(id) == ""
}

// checkSessionID returns what is wrong with id, or "".
func checkSessionID(id string) string {
	if id == "" {
		return "missing session id"
	}
	for i := 0; i < len(id); i++ {
		if !isUnreserved(id[i]) {
			return fmt.Sprintf("invalid session id %s: only letters, digits and \"-._~\" are allowed", quote(id))
		}
	}
	if id == "." || id == ".." {
		return fmt.Sprintf("invalid session id %q: dot segments are not allowed", id)
	}
	return ""
}

// SessionChangesetTemplates builds the catalogue templates for a session id.
// Keys are the changeKind strings "uncommitted", "branch", "session", "turn"
// and "compare-turns". It returns nil if sessionID is not valid (see
// ValidSessionID); check session ids when sessions are created.
func SessionChangesetTemplates(sessionID string) map[string]*Template {
	if !ValidSessionID(sessionID) {
		return nil
	}
	m := make(map[string]*Template, len(changesetLayouts))
	for _, l := range changesetLayouts {
		m[l.kind] = MustParse(l.template(sessionID))
	}
	return m
}

// Ref is a parsed changeset URI.
type Ref struct {
	SessionID string
	Kind      string // changeKind: "uncommitted", "branch", "session", "turn", "compare-turns"
	Vars      Values // percent-decoded variable values; nil for kinds without variables
}

func badURI(uri, format string, args ...any) error {
	return fmt.Errorf("%w %s: %s", ErrBadChangesetURI, quote(uri), fmt.Sprintf(format, args...))
}

// ParseChangesetURI parses a concrete changeset URI of this server's layout.
// It accepts exactly the URIs that the templates of SessionChangesetTemplates
// match, and returns the same variable values. Errors wrap ErrBadChangesetURI
// and say what was wrong.
func ParseChangesetURI(uri string) (Ref, error) {
	rest, ok := strings.CutPrefix(uri, protocol.ChangesetScheme)
	if !ok {
		scheme, _, found := strings.Cut(uri, ":")
		if !found || strings.ContainsAny(scheme, "/?#") {
			return Ref{}, badURI(uri, "missing scheme, want %q", protocol.ChangesetScheme)
		}
		return Ref{}, badURI(uri, "wrong scheme %s, want %q", quote(scheme+":"), protocol.ChangesetScheme)
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		what := "query"
		if rest[i] == '#' {
			what = "fragment"
		}
		return Ref{}, badURI(uri, "unexpected %s %s", what, quote(rest[i:]))
	}
	if rest == "" || rest == "/" {
		return Ref{}, badURI(uri, "missing session id")
	}
	if rest[0] != '/' {
		return Ref{}, badURI(uri, "path must start with \"/<session id>\", got %s", quote(rest))
	}
	segs := strings.Split(rest[1:], "/")
	ref := Ref{SessionID: segs[0]}
	if msg := checkSessionID(ref.SessionID); msg != "" {
		return Ref{}, badURI(uri, "%s", msg)
	}
	if len(segs) < 2 || segs[1] == "" {
		return Ref{}, badURI(uri, "missing \"/changeset/<kind>\" after session id")
	}
	if segs[1] != "changeset" {
		return Ref{}, badURI(uri, "want \"changeset\" after session id, got %s", quote(segs[1]))
	}
	if len(segs) < 3 || segs[2] == "" {
		return Ref{}, badURI(uri, "missing changeset kind after \"/changeset/\" (want one of %s)", knownSegments)
	}
	l, ok := layoutBySegment(segs[2])
	if !ok {
		return Ref{}, badURI(uri, "unknown changeset kind %s (want one of %s)", quote(segs[2]), knownSegments)
	}
	ref.Kind = l.kind
	for i, name := range l.vars {
		j := 3 + i
		if j >= len(segs) || segs[j] == "" {
			return Ref{}, badURI(uri, "missing %s", l.labels[i])
		}
		val, verr := decodeValue(segs[j])
		if verr != nil {
			if verr.badPct {
				return Ref{}, badURI(uri, "bad percent-encoding in %s %s: %s", l.labels[i], quote(segs[j]), verr.msg)
			}
			return Ref{}, badURI(uri, "%s %s %s", l.labels[i], quote(segs[j]), verr.msg)
		}
		if ref.Vars == nil {
			ref.Vars = make(Values, len(l.vars))
		}
		ref.Vars[name] = val
	}
	if n := 3 + len(l.vars); len(segs) > n {
		after := "\"/changeset/" + l.segment + "\""
		if len(l.vars) > 0 {
			after = l.labels[len(l.labels)-1]
		}
		return Ref{}, badURI(uri, "trailing path %s after %s", quote("/"+strings.Join(segs[n:], "/")), after)
	}
	return ref, nil
}

// FormatChangesetURI returns the concrete changeset URI of a session for a
// changeKind and its variable values (none for "uncommitted", "branch" and
// "session"; turnId for "turn"; originalTurnId and modifiedTurnId for
// "compare-turns"). Errors wrap ErrBadChangesetURI.
func FormatChangesetURI(sessionID, kind string, v Values) (string, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w for session %s, kind %s: %s", ErrBadChangesetURI, quote(sessionID), quote(kind), fmt.Sprintf(format, args...))
	}
	if msg := checkSessionID(sessionID); msg != "" {
		return "", bad("%s", msg)
	}
	l, ok := layoutByKind(kind)
	if !ok {
		var kinds []string
		for _, l := range changesetLayouts {
			kinds = append(kinds, l.kind)
		}
		return "", bad("unknown changeset kind (want one of %s)", strings.Join(kinds, ", "))
	}
	for name := range v {
		if !slices.Contains(l.vars, name) {
			return "", bad("unexpected variable %q", name)
		}
	}
	t, err := Parse(l.template(sessionID))
	if err != nil {
		return "", bad("%v", err) // unreachable: session id was checked
	}
	s, err := t.Expand(v)
	if err != nil {
		return "", bad("%v", err)
	}
	return s, nil
}
