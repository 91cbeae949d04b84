package scm

// IndexState is where a changed path stands between HEAD, the index and
// the working tree, as a source-control panel shows it.
type IndexState struct {
	Staged   bool // the index differs from HEAD at the path
	Unstaged bool // the working tree differs from the index at the path
	// IndexOID and IndexMode are the index entry's blob and mode; ""
	// when the index has no entry (or only an intent to add).
	IndexOID  string
	IndexMode uint32
}

// IndexStates reports the index state of each change of an uncommitted
// status (changes of the working tree against HEAD), by path.
func (r *Repo) IndexStates(changes []Change) (map[string]IndexState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx, err := r.indexLocked()
	if err != nil {
		return nil, err
	}
	out := make(map[string]IndexState, len(changes))
	for _, c := range changes {
		ie := idx.get(c.Path)
		if ie != nil && ie.conflict {
			out[c.Path] = IndexState{Staged: true, Unstaged: true}
			continue
		}
		in := ie != nil && !ie.e.IntentToAdd
		var st IndexState
		if in {
			// Spelt once, compared twice.
			st.IndexOID, st.IndexMode = ie.e.Hash.String(), uint32(ie.e.Mode)
		}
		if c.Head == nil {
			st.Staged = in
		} else {
			st.Staged = !in || st.IndexOID != c.Head.OID || uint32(ie.e.Mode) != c.Head.Mode
		}
		switch {
		case c.Work == nil:
			st.Unstaged = in
		case !in, c.Work.OID == "":
			st.Unstaged = true
		default:
			st.Unstaged = st.IndexOID != c.Work.OID || uint32(ie.e.Mode) != c.Work.Mode
		}
		out[c.Path] = st
	}
	return out, nil
}
