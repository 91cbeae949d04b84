package scm

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	formatcfg "github.com/go-git/go-git/v5/plumbing/format/config"
)

// gitConfig is the merged view of the system, global and repository config
// files, in increasing priority. go-git's ConfigScoped merges only its typed
// fields, not the raw sections we need (core.autocrlf, filter.<name>.clean).
// [include] directives are not followed.
type gitConfig struct {
	files []*formatcfg.Config
}

// configCache keeps parsed config files between calls: reading a file is
// a job per diffed file otherwise (three or four files opened and parsed
// for each). An entry is used again only while every file it was read
// from (or found missing) stats the same: same size, mtime, ctime and
// inode. The cached *gitConfig is never modified.
var configCache struct {
	sync.Mutex
	m map[string]cachedConfig
}

type cachedConfig struct {
	stats []fileStat // of paths, in order; zero for a missing file
	cfg   *gitConfig
}

// maxCachedConfigs bounds the cache; past it, it starts over.
const maxCachedConfigs = 64

// loadConfig returns the config files git would read for the repository
// whose common dir is commonDir and per-worktree dir is gitDir, merged.
func loadConfig(commonDir, gitDir string) *gitConfig {
	paths := configPaths(commonDir, gitDir)
	key := strings.Join(paths, "\x00")
	stats := make([]fileStat, len(paths))
	for i, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			stats[i] = statOf(fi)
		}
	}
	configCache.Lock()
	e, ok := configCache.m[key]
	configCache.Unlock()
	if ok && slices.Equal(e.stats, stats) {
		return e.cfg
	}
	c := readConfig(paths)
	configCache.Lock()
	if configCache.m == nil || len(configCache.m) >= maxCachedConfigs {
		configCache.m = map[string]cachedConfig{}
	}
	configCache.m[key] = cachedConfig{stats: stats, cfg: c}
	configCache.Unlock()
	return c
}

// configPaths lists the config files git would read, in increasing
// priority, including the per-worktree file, which is read only when
// extensions.worktreeConfig is set.
func configPaths(commonDir, gitDir string) []string {
	var paths []string
	if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		paths = append(paths, "/etc/gitconfig")
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		paths = append(paths, g)
	} else {
		if x := xdgConfigHome(); x != "" {
			paths = append(paths, filepath.Join(x, "git", "config"))
		}
		if home, err := os.UserHomeDir(); err == nil {
			paths = append(paths, filepath.Join(home, ".gitconfig"))
		}
	}
	paths = append(paths, filepath.Join(commonDir, "config"))
	return append(paths, filepath.Join(gitDir, "config.worktree"))
}

// readConfig reads paths as configPaths returned them.
func readConfig(paths []string) *gitConfig {
	c := &gitConfig{}
	for _, p := range paths[:len(paths)-1] {
		c.add(p)
	}
	if c.bool("extensions", "", "worktreeconfig", false) {
		c.add(paths[len(paths)-1])
	}
	return c
}

func (c *gitConfig) add(path string) {
	b, err := readRegular(path)
	if err != nil {
		return
	}
	raw := formatcfg.New()
	if err := formatcfg.NewDecoder(bytes.NewReader(b)).Decode(raw); err != nil {
		return
	}
	c.files = append(c.files, raw)
}

// get returns the last value of section[.subsection].key and whether it is
// set at all. Section and key names are case-insensitive, subsections are not.
func (c *gitConfig) get(section, subsection, key string) (string, bool) {
	for i := len(c.files) - 1; i >= 0; i-- {
		for _, s := range c.files[i].Sections {
			if !strings.EqualFold(s.Name, section) {
				continue
			}
			opts := s.Options
			if subsection != "" {
				opts = nil
				for _, ss := range s.Subsections {
					if ss.Name == subsection {
						opts = append(opts, ss.Options...)
					}
				}
			}
			for j := len(opts) - 1; j >= 0; j-- {
				if strings.EqualFold(opts[j].Key, key) {
					return opts[j].Value, true
				}
			}
		}
	}
	return "", false
}

func (c *gitConfig) string(section, subsection, key string) string {
	v, _ := c.get(section, subsection, key)
	return v
}

// bool parses a git boolean; a key with no value means true.
func (c *gitConfig) bool(section, subsection, key string, def bool) bool {
	v, ok := c.get(section, subsection, key)
	if !ok {
		return def
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "yes", "on", "1":
		return true
	case "false", "no", "off", "0":
		return false
	}
	return def
}

func xdgConfigHome() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return x
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".config")
	}
	return ""
}

// expandHome expands a leading "~/" the way git does for path options.
func expandHome(p string) string {
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[2:])
		}
	}
	return p
}

type autoCRLF int

const (
	autoCRLFFalse autoCRLF = iota
	autoCRLFTrue
	autoCRLFInput
)

// settings are the config values a scan depends on.
type settings struct {
	autocrlf   autoCRLF
	eolCRLF    bool // core.eol=crlf (only matters for text=set files, for the smudge side)
	trustCtime bool
	checkStat  bool // false for core.checkStat=minimal
	fileMode   bool
	symlinks   bool
	lfs        bool // a filter.lfs clean or process driver is configured

	excludesFile   string
	attributesFile string
	cfg            *gitConfig
}

func newSettings(c *gitConfig) settings {
	s := settings{
		trustCtime: c.bool("core", "", "trustctime", true),
		checkStat:  !strings.EqualFold(c.string("core", "", "checkstat"), "minimal"),
		fileMode:   c.bool("core", "", "filemode", true),
		symlinks:   c.bool("core", "", "symlinks", true),
		cfg:        c,
	}
	switch v, _ := c.get("core", "", "autocrlf"); strings.ToLower(v) {
	case "input":
		s.autocrlf = autoCRLFInput
	default:
		if c.bool("core", "", "autocrlf", false) {
			s.autocrlf = autoCRLFTrue
		}
	}
	s.eolCRLF = strings.EqualFold(c.string("core", "", "eol"), "crlf")
	s.lfs = c.string("filter", "lfs", "clean") != "" || c.string("filter", "lfs", "process") != ""
	if v, ok := c.get("core", "", "excludesfile"); ok {
		s.excludesFile = expandHome(v)
	} else if x := xdgConfigHome(); x != "" {
		s.excludesFile = filepath.Join(x, "git", "ignore")
	}
	if v, ok := c.get("core", "", "attributesfile"); ok {
		s.attributesFile = expandHome(v)
	} else if x := xdgConfigHome(); x != "" {
		s.attributesFile = filepath.Join(x, "git", "attributes")
	}
	return s
}

// filterConfigured reports whether a clean or process driver exists for the
// named filter; git passes content through unchanged when none does.
func (s *settings) filterConfigured(name string) bool {
	return s.cfg.string("filter", name, "clean") != "" || s.cfg.string("filter", name, "process") != ""
}
