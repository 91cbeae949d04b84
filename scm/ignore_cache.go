package scm

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// ignoreCache keeps the ignore rules IsIgnored uses between calls. A file
// watcher asks about every entry it walks, so rebuilding the rules (config,
// exclude files, every .gitignore) per call would cost a full parse per
// file. The rules are rebuilt when InvalidateIgnoreRules is called (the
// daemon does so when a .gitignore changes) and when the config or the
// exclude files changed, checked at most once per ignoreRecheck.
type ignoreCache struct {
	mu      sync.Mutex
	rules   *rules
	key     string
	checked time.Time
}

// ignoreRecheck bounds how stale the rules may be after an edit of the
// config or of info/exclude, which no watcher reports.
const ignoreRecheck = time.Second

// ignoreRules returns the cached rules, rebuilding them when stale.
func (r *Repo) ignoreRules() *rules {
	c := &r.ign
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.rules != nil && now.Sub(c.checked) < ignoreRecheck {
		return c.rules
	}
	cfg := loadConfig(r.commonDir, r.gitDir)
	s := newSettings(cfg)
	key := statKey(r.ignoreSources(&s)...)
	c.checked = now
	if c.rules == nil || key != c.key {
		c.rules, c.key = newRules(r.root, r.commonDir, &s), key
	}
	return c.rules
}

// InvalidateIgnoreRules drops the cached ignore rules, e.g. after a
// .gitignore changed.
func (r *Repo) InvalidateIgnoreRules() {
	r.ign.mu.Lock()
	r.ign.rules = nil
	r.ign.mu.Unlock()
}

func statKey(paths ...string) string {
	key := ""
	for _, p := range paths {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			key += fi.ModTime().String() + "/" + strconv.FormatInt(fi.Size(), 10) + ";"
		} else {
			key += "-;"
		}
	}
	return key
}

// IgnoreSources lists the files outside the working tree that decide what
// is ignored: every config file git reads (the system's, the user's
// global ones, the repository's and the worktree's, any of which may set
// core.excludesFile), info/exclude and core.excludesFile as configured
// now (by default $XDG_CONFIG_HOME/git/ignore). A watcher watching them
// lets an edit of one apply at once, where the rules would otherwise be
// rechecked only on the next scan; when the list itself changes (the
// config names another excludes file), the watcher must watch the new
// list.
func (r *Repo) IgnoreSources() []string {
	s := newSettings(loadConfig(r.commonDir, r.gitDir))
	return r.ignoreSources(&s)
}

func (r *Repo) ignoreSources(s *settings) []string {
	out := append(configPaths(r.commonDir, r.gitDir), filepath.Join(r.commonDir, "info", "exclude"))
	if s.excludesFile != "" {
		out = append(out, s.excludesFile)
	}
	return out
}
