package scm

// Generated resolves the linguist-generated attribute of each path
// (slash-separated, relative to the root) as git check-attr does, from the
// .gitattributes files of the working tree, info/attributes and the
// global and system files, macros expanded: true when it is set or has a
// value other than "false" (GitHub's Linguist reads it so), false when it
// is unset ("-linguist-generated") or "false". A path whose attribute is
// unspecified is absent. The rules are read afresh on each call, so an
// edit of a .gitattributes applies at once.
func (r *Repo) Generated(paths []string) map[string]bool {
	s := newSettings(loadConfig(r.commonDir, r.gitDir))
	ru := newRules(r.root, r.commonDir, &s)
	out := map[string]bool{}
	for _, p := range paths {
		rel, err := cleanRel(p)
		if err != nil || rel == "" {
			continue
		}
		switch v := ru.attrs(rel).generated; v.state {
		case 1:
			out[p] = true
		case -1:
			out[p] = false
		case 2:
			out[p] = v.value != "false"
		}
	}
	return out
}
