package scm

// Forget drops what the stat cache knows about each path (relative to
// the root) and everything below it, and stops trusting the index's stat
// data for the path, so the next status hashes the file again whatever
// its stat data says: an edit that kept the size and the modification
// time (and, with core.trustCtime off, the ctime) is found when someone
// says it happened. Later statuses hash the path again only when its stat
// differs from the one cached after that hash.
func (r *Repo) Forget(paths ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range paths {
		rel, err := cleanRel(p)
		if err != nil {
			continue
		}
		r.forgetLocked(rel)
		if r.edited == nil {
			r.edited = map[string]bool{}
		}
		r.edited[rel] = true
	}
}
