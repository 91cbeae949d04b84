package reducer

import (
	"strconv"
	"strings"
)

// Env carries what the reducers need to know about the connection whose
// state they compute. The zero value selects protocol 1.0.0 semantics.
type Env struct {
	// Version is the negotiated protocol version, e.g. "1.0.0" or "0.7.0".
	// Empty means 1.0.0.
	Version string
}

// legacy reports whether e selects pre-0.9.0 semantics.
func (e Env) legacy() bool { return Legacy(e.Version) }

// Legacy reports whether version is a 0.x version below 0.9.0, spoken by
// 0.6/0.7-era clients. Their reducers differ from 1.0 in two places:
// changeset/contentChanged applies its error field, and
// session/creationFailed sets lifecycle "creationFailed" instead of
// "failed". Empty or unparsable versions are not legacy.
func Legacy(version string) bool {
	major, rest, ok := strings.Cut(version, ".")
	if !ok || major != "0" {
		return false
	}
	minor, _, _ := strings.Cut(rest, ".")
	if minor == "" || strings.Trim(minor, "0123456789") != "" {
		return false
	}
	n, err := strconv.Atoi(minor)
	return err == nil && n < 9
}

// Outcome says whether an action changed the state.
type Outcome int

const (
	// NoOp means the action left the state unchanged: its type is unknown
	// or belongs to another channel, or its target does not exist.
	NoOp Outcome = iota
	// Applied means the action was reduced into a new state.
	Applied
)

// String returns "applied" or "noop".
func (o Outcome) String() string {
	switch o {
	case NoOp:
		return "noop"
	case Applied:
		return "applied"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}
