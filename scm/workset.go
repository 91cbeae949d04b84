package scm

// workSet is what a scan found in the working tree, by path.
//
// A scan of the whole tree meets every path of the index, and nearly all
// of them as their entries say: the stat data matched, or the content
// hashed to the entry's id. Such a path is one flag in a table aligned
// with the index (clean), not an object in a map: at a million files the
// map and its objects were some 150 MB, a tenth of a second of inserts
// and as much again of lookups, where the table is a megabyte indexed by
// the entry's position. Every other path (changed, untracked, a gitlink,
// a skip-worktree entry) is a workFile in files. A scan of a few paths
// (a save) has no table.
type workSet struct {
	idx   *indexSnapshot
	clean []bool // clean[i]: the index's entry i was found as it says; nil: no table
	files map[string]*workFile
}

// table gives the set a table for every entry of the index.
func (ws *workSet) table(n int) { ws.clean = make([]bool, n) }

// put records what was found at p, the index's entry i (-1: not in the
// index).
func (ws *workSet) put(p string, i int, w workFile) {
	if i >= 0 && ws.clean != nil {
		e := &ws.idx.ents[i].e
		if w.known && !w.untracked && !w.submodule && !w.stored && w.mode == e.Mode && w.oid == e.Hash && w.size == int64(e.Size) {
			ws.clean[i] = true
			delete(ws.files, p)
			return
		}
		ws.clean[i] = false
	}
	ws.files[p] = &w
}

// at returns what was found at p, the index's entry i; nil: nothing.
// An entry found as it says is returned as a new workFile.
func (ws *workSet) at(i int, p string) *workFile {
	if i >= 0 && ws.clean != nil && ws.clean[i] {
		e := &ws.idx.ents[i].e
		return &workFile{mode: e.Mode, oid: e.Hash, known: true, size: int64(e.Size)}
	}
	return ws.files[p]
}

// seenAt reports whether the scan found p, the index's entry i.
func (ws *workSet) seenAt(i int, p string) bool {
	if i >= 0 && ws.clean != nil && ws.clean[i] {
		return true
	}
	_, ok := ws.files[p]
	return ok
}

// get is at for a path whose position in the index is not known.
func (ws *workSet) get(p string) *workFile {
	if w, ok := ws.files[p]; ok {
		return w
	}
	if ws.clean == nil {
		return nil
	}
	return ws.at(ws.idx.find(p), p)
}
