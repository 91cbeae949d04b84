// Package ops holds what a changeset operation is made of, apart from the
// session that validates it and the workspace that carries it out: the
// plan (Edit: its targets, the versions a client was shown, which an
// operation must find on disk before it writes), what an undo puts back
// (Undo, with the index entries), and what a commit records. It depends
// on nothing of the daemon but the wire types, so the view a client saw
// can be checked by any layer that writes.
package ops

// Shown is one path as a client was shown it: the git blob id of its
// content (clean filters applied, the content.nonce of the changeset's
// after side) and its git mode, or, with Exists false, no file at all (a
// deleted file, the old path of a rename).
type Shown struct {
	Path   string
	Exists bool
	OID    string
	Mode   uint32
}

// IndexEntry is a path's stage-0 index entry as an undo keeps it: absent,
// or a blob id and git mode. Content holds the blob when an undo is to
// put the entry back, so that it survives git gc.
type IndexEntry struct {
	Exists  bool
	OID     string
	Mode    uint32
	Content []byte
}

// Same reports whether a and b name the same entry (content aside).
func (a IndexEntry) Same(b IndexEntry) bool {
	if !a.Exists || !b.Exists {
		return a.Exists == b.Exists
	}
	return a.OID == b.OID && a.Mode == b.Mode
}
