package scm

// Forget drops what the stat cache knows about each path (relative to
// the root) and everything below it, so the next status hashes the file
// again whatever its stat data says: an edit that kept the size and the
// modification time is found when someone says it happened.
func (r *Repo) Forget(paths ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range paths {
		if rel, err := cleanRel(p); err == nil {
			r.forgetLocked(rel)
		}
	}
}
