package annotation

import (
	"bytes"
	"fmt"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
)

// A client may say which version of a file it showed when a person
// selected a comment's lines: the content nonce (the git blob id) of the
// side the lines were selected on. When the file has changed by the time
// the comment arrives, the comment is bound to that version: its range
// is carried from the shown content to the current one, so that it lands
// on the lines the person selected, or it is refused.

// Shown is the version of a file a range was selected on.
type Shown struct {
	// OID is its content nonce, the git blob id of its content.
	OID string
	// Content is that content, and Readable whether it could be read
	// (a working tree version no snapshot kept cannot be).
	Content  []byte
	Readable bool
}

// Rebind returns range r, selected on shown, as a range of cur (the
// content the comment's lines are kept on now), or why it cannot be:
// the lines were changed or deleted since, or the shown content cannot be
// read to find them. Content that is still the shown version keeps r.
func Rebind(r protocol.TextRange, shown Shown, cur []byte) (protocol.TextRange, string) {
	if unchanged(shown.OID, cur) {
		return r, ""
	}
	lines := describe(r)
	switch {
	case shown.OID == "":
		return r, "the file changed since it was shown, and the version shown had no such file; nothing was stored: comment on the current version"
	case !shown.Readable:
		return r, fmt.Sprintf("the file changed since it was shown, and the version shown (%s) cannot be read to find %s in the current one; nothing was stored: comment on the current version", short(shown.OID), lines)
	case bytes.Equal(lf(shown.Content), lf(cur)):
		return r, ""
	case changeset.IsBinary(shown.Content) || changeset.IsBinary(cur):
		return r, fmt.Sprintf("the file changed since it was shown and is binary, so %s cannot be found in it; nothing was stored: comment on the current version", lines)
	}
	cur = lf(cur)
	p := MapRange(changeset.NewLineMapper(lf(shown.Content), cur), cur, r)
	switch p.Status {
	case protocol.PlaceSame, protocol.PlaceMoved:
		return *p.Range, ""
	case protocol.PlaceGone:
		return r, fmt.Sprintf("the file changed since it was shown, and %s as shown %s deleted since; nothing was stored: comment on the current version", lines, were(r))
	}
	return r, fmt.Sprintf("the file changed since it was shown, and %s as shown %s edited since; nothing was stored: comment on the current version", lines, were(r))
}

// unchanged says whether cur is the version with blob id oid: as git
// stores it, or once its CRLF line ends are made LF (the usual clean
// filter, under which the nonce names the normalised content).
func unchanged(oid string, cur []byte) bool {
	if oid == "" {
		return false
	}
	if changeset.BlobOID(cur) == oid {
		return true
	}
	if n := lf(cur); len(n) != len(cur) {
		return changeset.BlobOID(n) == oid
	}
	return false
}

// lf is b with its CRLF line ends made LF: a version with other line
// ends is the same lines.
func lf(b []byte) []byte {
	if !bytes.Contains(b, []byte("\r\n")) {
		return b
	}
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}

// describe names r's lines as a person counts them (1-based).
func describe(r protocol.TextRange) string {
	first, last := lineSpan(r)
	if first == last {
		return fmt.Sprintf("line %d", first+1)
	}
	return fmt.Sprintf("lines %d–%d", first+1, last+1)
}

func were(r protocol.TextRange) string {
	if first, last := lineSpan(r); first == last {
		return "was"
	}
	return "were"
}

// lineSpan is the first and last line r covers; a range ending at
// character 0 of a later line ends at the line before.
func lineSpan(r protocol.TextRange) (first, last int) {
	first, last = r.Start.Line, r.End.Line
	if r.End.Character == 0 && last > first {
		last--
	}
	return first, last
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}
