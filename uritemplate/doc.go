// Package uritemplate parses and expands RFC 6570 URI templates and matches
// concrete URIs back to their variable values.
//
// It owns:
//   - Template: an immutable, parsed template (Parse, MustParse). Parsing and
//     expansion are delegated to github.com/yosida95/uritemplate/v3; this
//     package does not re-implement RFC 6570. It only feeds the library values
//     in a form it encodes correctly (see Template.Expand) and rewrites the
//     library's errors so they say what was wrong and at which byte.
//   - Template.Match: a concrete URI back to variable values, percent-decoded.
//     It supports the template shapes the protocol uses: simple level-1
//     "{var}" expressions, each filling a whole path segment or part of one.
//   - The changeset URI layout of this server (SessionChangesetTemplates,
//     ParseChangesetURI, FormatChangesetURI).
//
// The layout, with sessionID a segment of unreserved characters:
//
//	ahp-changeset:/<sessionID>/changeset/uncommitted
//	ahp-changeset:/<sessionID>/changeset/branch
//	ahp-changeset:/<sessionID>/changeset/session
//	ahp-changeset:/<sessionID>/changeset/turn/{turnId}
//	ahp-changeset:/<sessionID>/changeset/compare/{originalTurnId}/{modifiedTurnId}
//
// Variable values: the values Expand accepts and Match returns are the same
// set, namely non-empty, valid UTF-8 strings without NUL bytes. For every such
// value, Match(Expand(v)) returns v again.
//
// The package is pure: no goroutines, no I/O, no clock, no logging. It imports
// only the standard library, protocol and github.com/yosida95/uritemplate/v3;
// it must not import any other package of this module or any transport code.
package uritemplate
