package scm

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/gitattributes"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// rules resolves ignore patterns and attributes per directory for one scan.
// Per-directory files are read at most once per scan; they are tiny and
// reading them afresh keeps edits to .gitignore immediately effective.
type rules struct {
	root string

	// mu guards everything below: directory listings run in parallel.
	mu sync.Mutex
	// base ignore patterns (core.excludesFile, then info/exclude), lowest
	// priority first; read at the first ignore question (reading a file's
	// attributes needs none of them).
	baseIgnore     []gitignore.Pattern
	baseIgnoreFrom []string // the files to read them from, until read
	// dirIgnore maps a directory ("" for the root) to the patterns that
	// apply inside it: base, then every .gitignore from the root down.
	dirIgnore map[string][]gitignore.Pattern

	// attributes: global and root-level sources may define macros.
	lowAttrs  []gitattributes.MatchAttribute // system, global (lowest)
	highAttrs []gitattributes.MatchAttribute // info/attributes (highest)
	dirAttrs  map[string][]gitattributes.MatchAttribute
	macros    map[string][]gitattributes.Attribute
	anyAttrs  bool // false when no attribute source exists anywhere so far
}

func newRules(root, commonDir string, s *settings) *rules {
	r := &rules{
		root:      root,
		dirIgnore: make(map[string][]gitignore.Pattern),
		dirAttrs:  make(map[string][]gitattributes.MatchAttribute),
		macros:    map[string][]gitattributes.Attribute{},
	}
	if s.excludesFile != "" {
		r.baseIgnoreFrom = append(r.baseIgnoreFrom, s.excludesFile)
	}
	r.baseIgnoreFrom = append(r.baseIgnoreFrom, filepath.Join(commonDir, "info", "exclude"))

	// git's built-in macro: binary = -diff -merge -text.
	if m, err := gitattributes.ParseAttributesLine("[attr]binary -diff -merge -text", nil, true); err == nil {
		r.macros["binary"] = m.Attributes
	}
	if os.Getenv("GIT_ATTR_NOSYSTEM") == "" {
		r.lowAttrs = append(r.lowAttrs, r.readAttrFile("/etc/gitattributes", nil, true)...)
	}
	if s.attributesFile != "" {
		r.lowAttrs = append(r.lowAttrs, r.readAttrFile(s.attributesFile, nil, true)...)
	}
	r.highAttrs = r.readAttrFile(filepath.Join(commonDir, "info", "attributes"), nil, true)
	r.anyAttrs = len(r.lowAttrs)+len(r.highAttrs) > 0
	return r
}

// readIgnoreFile parses a gitignore-format file; domain is the directory the
// file lives in, as path components.
func readIgnoreFile(path string, domain []string) []gitignore.Pattern {
	b, err := readRegular(path)
	if err != nil {
		return nil
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

func (r *rules) readAttrFile(path string, domain []string, allowMacro bool) []gitattributes.MatchAttribute {
	b, err := readRegular(path)
	if err != nil {
		return nil
	}
	var out []gitattributes.MatchAttribute
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// Invalid lines are skipped, as git does (it warns).
		m, err := gitattributes.ParseAttributesLine(sc.Text(), domain, allowMacro)
		if err != nil || m.Name == "" {
			continue
		}
		if m.Pattern == nil {
			r.macros[m.Name] = m.Attributes
			continue
		}
		out = append(out, m)
	}
	if len(out) > 0 {
		r.anyAttrs = true
	}
	return out
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// ignorePatterns returns the patterns in effect inside dir, loading the
// .gitignore files of dir and its ancestors as needed. hasFile, when not
// nil, says whether dir has a .gitignore (saving an open when the caller has
// just listed the directory).
func (r *rules) ignorePatterns(dir string, hasFile *bool) []gitignore.Pattern {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ignorePatternsLocked(dir, hasFile)
}

// ignorePatternsLocked is ignorePatterns. r.mu must be held.
func (r *rules) ignorePatternsLocked(dir string, hasFile *bool) []gitignore.Pattern {
	if ps, ok := r.dirIgnore[dir]; ok {
		return ps
	}
	var parent []gitignore.Pattern
	if dir == "" {
		for _, f := range r.baseIgnoreFrom {
			r.baseIgnore = append(r.baseIgnore, readIgnoreFile(f, nil)...)
		}
		r.baseIgnoreFrom = nil
		parent = r.baseIgnore
	} else {
		parent = r.ignorePatternsLocked(parentDir(dir), nil)
	}
	ps := parent
	if hasFile == nil || *hasFile {
		own := readIgnoreFile(filepath.Join(r.root, filepath.FromSlash(dir), ".gitignore"), splitPath(dir))
		if len(own) > 0 {
			ps = append(parent[:len(parent):len(parent)], own...)
		}
	}
	r.dirIgnore[dir] = ps
	return ps
}

// ignored reports whether p (slash-separated, relative) matches the patterns
// ps, the last matching pattern deciding. It does not look at p's parents:
// callers walk top-down and never descend into an ignored directory.
func ignored(ps []gitignore.Pattern, p string, isDir bool) bool {
	if len(ps) == 0 {
		return false
	}
	parts := splitPath(p)
	for i := len(ps) - 1; i >= 0; i-- {
		switch ps[i].Match(parts, isDir) {
		case gitignore.Exclude:
			return true
		case gitignore.Include:
			return false
		}
	}
	return false
}

// pathIgnored reports whether p or any of its parent directories is ignored.
func (r *rules) pathIgnored(p string, isDir bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	parts := splitPath(p)
	dir := ""
	for i, name := range parts {
		child := name
		if dir != "" {
			child = dir + "/" + name
		}
		last := i == len(parts)-1
		if ignored(r.ignorePatternsLocked(dir, nil), child, isDir || !last) {
			return true
		}
		dir = child
	}
	return false
}

// attrPatterns returns the per-directory attribute stack for dir (root
// first), loading .gitattributes files as needed.
func (r *rules) attrPatterns(dir string, hasFile *bool) []gitattributes.MatchAttribute {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attrPatternsLocked(dir, hasFile)
}

// attrPatternsLocked is attrPatterns. r.mu must be held.
func (r *rules) attrPatternsLocked(dir string, hasFile *bool) []gitattributes.MatchAttribute {
	if ps, ok := r.dirAttrs[dir]; ok {
		return ps
	}
	var parent []gitattributes.MatchAttribute
	if dir != "" {
		parent = r.attrPatternsLocked(parentDir(dir), nil)
	}
	ps := parent
	if hasFile == nil || *hasFile {
		own := r.readAttrFile(filepath.Join(r.root, filepath.FromSlash(dir), ".gitattributes"), splitPath(dir), dir == "")
		if len(own) > 0 {
			ps = append(parent[:len(parent):len(parent)], own...)
		}
	}
	r.dirAttrs[dir] = ps
	return ps
}

// fileAttrs holds the attributes that decide how git cleans a file.
type fileAttrs struct {
	text   attrVal
	crlf   attrVal // legacy crlf attribute
	eol    string
	filter string
	ident  bool
	wte    string // working-tree-encoding
	// generated is linguist-generated, which says nothing of cleaning
	// but is resolved by the same rules (Repo.Generated).
	generated attrVal
}

type attrVal struct {
	state int8 // 0 unspecified, 1 set, -1 unset, 2 value
	value string
}

var wantAttrs = map[string]bool{"text": true, "crlf": true, "eol": true, "filter": true, "ident": true, "working-tree-encoding": true, "linguist-generated": true}

// attrs resolves the attributes of file p: the highest-priority source that
// mentions an attribute decides it, and set macros expand in place.
func (r *rules) attrs(p string) fileAttrs {
	r.mu.Lock()
	defer r.mu.Unlock()
	var fa fileAttrs
	if !r.anyAttrs {
		// Cheap check: loading the directory stacks may discover files.
		r.attrPatternsLocked(parentDir(p), nil)
		if !r.anyAttrs {
			return fa
		}
	}
	parts := splitPath(p)
	seen := map[string]bool{}
	apply := func(a gitattributes.Attribute) {
		name := a.Name()
		if seen[name] {
			return
		}
		seen[name] = true
		if !wantAttrs[name] {
			return
		}
		var v attrVal
		switch {
		case a.IsValueSet():
			v = attrVal{state: 2, value: a.Value()}
		case a.IsSet():
			v = attrVal{state: 1}
		case a.IsUnset():
			v = attrVal{state: -1}
		}
		switch name {
		case "text":
			fa.text = v
		case "crlf":
			fa.crlf = v
		case "eol":
			fa.eol = v.value
		case "filter":
			fa.filter = v.value
		case "ident":
			fa.ident = v.state == 1
		case "working-tree-encoding":
			fa.wte = v.value
		case "linguist-generated":
			fa.generated = v
		}
	}
	visit := func(stack []gitattributes.MatchAttribute) {
		for i := len(stack) - 1; i >= 0; i-- {
			m := stack[i]
			if !m.Pattern.Match(parts) {
				continue
			}
			// Within one line later attributes win; walk it backwards so
			// the first-seen rule holds.
			for j := len(m.Attributes) - 1; j >= 0; j-- {
				a := m.Attributes[j]
				if a.IsUnspecified() {
					// "!attr" resets to unspecified and stops lower rules.
					seen[a.Name()] = true
					continue
				}
				apply(a)
				if a.IsSet() {
					if macro, ok := r.macros[a.Name()]; ok {
						for k := len(macro) - 1; k >= 0; k-- {
							apply(macro[k])
						}
					}
				}
			}
		}
	}
	visit(r.highAttrs)
	visit(r.attrPatternsLocked(parentDir(p), nil))
	visit(r.lowAttrs)
	return fa
}
