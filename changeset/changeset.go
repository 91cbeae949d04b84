package changeset

import (
	"strings"
	"time"
)

// Git file modes.
const (
	ModeRegular    uint32 = 0o100644
	ModeExecutable uint32 = 0o100755
	ModeSymlink    uint32 = 0o120000
	ModeGitlink    uint32 = 0o160000
)

// Defaults from the diff brief (§8.3).
const (
	DefaultBudget        = 100 * time.Millisecond
	DefaultMaxFileBytes  = 8 << 20 // stats-only ceiling per side
	DefaultMaxPatchBytes = 1 << 20 // patch text cap
	DefaultContext       = 3

	// anchoredOnlyLines sends a middle region of more lines than this
	// straight to the anchored diff (brief §8.1 step 4).
	anchoredOnlyLines = 200_000
)

// Side is one side of a file change.
type Side struct {
	Path    string // slash-separated path relative to the repo root
	Content []byte
	Mode    uint32 // git mode; 0 means ModeRegular. Symlink: Content is the target; gitlink: Content is the commit hex
	OID     string // git object id (hex); computed with BlobOID when empty (gitlink: Content)
	// Size, when non-zero, is the length of a content the caller left
	// unloaded (Content nil) because it is over MaxFileBytes: Compare
	// reports the file TooLarge without needing it, and OID must be set.
	Size int64
	// Sniffed is what the content's first bytes say (Sniff), set by
	// whoever loads it and kept when the content is dropped; nil when
	// not read or when they say nothing. Compare does not look at it.
	Sniffed *Sniffed
}

// size is the side's content length, loaded or not.
func (s *Side) size() int64 {
	if s.Size > 0 && s.Content == nil {
		return s.Size
	}
	return int64(len(s.Content))
}

// Options tunes Compare. The zero value uses the brief's defaults.
type Options struct {
	// Budget bounds the line search per file; zero = DefaultBudget. It is
	// counted in search steps (about 10 million per 100 ms on one core),
	// not read from the clock, so a result never depends on the load.
	Budget        time.Duration
	MaxFileBytes  int // larger sides get no hunks and no stats; zero = DefaultMaxFileBytes
	MaxPatchBytes int // longer patch text is dropped (stats kept); zero = DefaultMaxPatchBytes
	Context       int // context lines; zero = DefaultContext, negative = 0

	// QuoteNonASCII quotes path bytes >= 0x80 as octal escapes, as git does
	// with core.quotePath=true (its default). The zero value keeps UTF-8
	// raw (core.quotePath=false), as the brief recommends.
	QuoteNonASCII bool

	// NoFuncNames leaves out git's function-name context after "@@".
	NoFuncNames bool

	// IgnoreWhitespace compares lines as git diff -w does: lines that
	// differ only in spaces, tabs, CRs or a missing final LF are the same
	// line, shown as context from the new side. The hunks count the lines
	// shown, as git's headers do, and a file whose only content change is
	// whitespace has no hunks, and no patch unless its mode or path changed.
	IgnoreWhitespace bool

	// SrcPrefix and DstPrefix replace git's "a/" and "b/" before the
	// paths of the patch (git diff --src-prefix, --dst-prefix); "" keeps
	// git's. An ACP v2 git_patch uses the absolute directory on both sides.
	SrcPrefix, DstPrefix string
}

func (o Options) srcPrefix() string {
	if o.SrcPrefix == "" {
		return "a/"
	}
	return o.SrcPrefix
}

func (o Options) dstPrefix() string {
	if o.DstPrefix == "" {
		return "b/"
	}
	return o.DstPrefix
}

func (o Options) budget() time.Duration {
	if o.Budget <= 0 {
		return DefaultBudget
	}
	return o.Budget
}

func (o Options) maxFile() int {
	if o.MaxFileBytes <= 0 {
		return DefaultMaxFileBytes
	}
	return o.MaxFileBytes
}

func (o Options) maxPatch() int {
	if o.MaxPatchBytes <= 0 {
		return DefaultMaxPatchBytes
	}
	return o.MaxPatchBytes
}

func (o Options) context() int {
	switch {
	case o.Context == 0:
		return DefaultContext
	case o.Context < 0:
		return 0
	}
	return o.Context
}

// ChangeType classifies a Result.
type ChangeType string

// Types of file change.
const (
	Unchanged   ChangeType = "unchanged"
	Created     ChangeType = "created"
	Deleted     ChangeType = "deleted"
	Modified    ChangeType = "modified"
	Renamed     ChangeType = "renamed"
	TypeChanged ChangeType = "typechanged" // regular file, symlink or gitlink turned into another of these
)

// Result is the diff of one file.
type Result struct {
	Old, New *Side // nil Old: created; nil New: deleted

	Binary bool // either side is binary (NUL in its first 8000 bytes)

	// Added and Removed count the '+' and '-' lines of Hunks: git numstat
	// semantics. They are 0 for binary and too-large files.
	Added, Removed int

	// Precise reports that Added and Removed describe exactly the hunks
	// computed here, so they may be published. It is false for binary
	// files, for sides over MaxFileBytes, and when the Myers budget ran
	// out and even the anchored fallback could only produce a whole-file
	// replacement of texts that share lines.
	Precise bool

	// Fallback reports that the Myers budget ran out and the anchored diff
	// produced the hunks. They are valid but not minimal.
	Fallback bool

	// TooLarge reports a side over MaxFileBytes: no hunks, no stats.
	TooLarge bool

	// PatchOmitted reports that Patch was dropped because it would exceed
	// MaxPatchBytes, or because the file is too large to diff (a binary
	// side over MaxFileBytes is not encoded at all).
	PatchOmitted bool

	// Similarity is git's similarity index in percent for a rename
	// (Old.Path != New.Path), 0 otherwise.
	Similarity int

	// Patch is git-compatible patch text for this file, one "diff --git"
	// section (two for a type change), as "git diff --full-index" prints
	// it. A binary change carries git's "GIT binary patch" (as "git diff
	// --binary" prints it) while both sides are within MaxFileBytes and
	// the patch within MaxPatchBytes. Empty when nothing changed or when
	// PatchOmitted.
	Patch string

	// Hunks are the changes with context. A type change is one hunk that
	// removes every old line and adds every new one.
	Hunks []Hunk

	bin string // the "GIT binary patch" block of a binary change
}

// PatchWith renders the patch of r again with other Options (prefixes,
// quoting), as Compare(r.Old, r.New, opt).Patch would be, without
// diffing again. It is "" when r has no patch.
func (r Result) PatchWith(opt Options) string {
	if r.Patch == "" {
		return ""
	}
	switch {
	case r.ChangeType() == TypeChanged:
		return Compare(r.Old, nil, opt).Patch + Compare(nil, r.New, opt).Patch
	case r.bin != "":
		return writeHeader(&r, opt) + r.bin
	}
	return patchText(&r, opt)
}

// Hunk is one "@@" block.
type Hunk struct {
	// OldStart and NewStart are 1-based first lines; as in git, a side
	// with zero lines gives the line before the change (0 at the top).
	OldStart, OldLines int
	NewStart, NewLines int
	Section            string // git's function-name context after "@@", may be empty
	Lines              []Line
}

// Line is one body line of a hunk.
type Line struct {
	Op    byte   // ' ', '-' or '+'
	Text  string // content without the terminating LF; a CR stays in it
	NoEOL bool   // the line is the last of its side and has no LF
}

// ChangeType reports what type of change r is.
func (r Result) ChangeType() ChangeType {
	switch {
	case r.Old == nil && r.New == nil:
		return Unchanged
	case r.Old == nil:
		return Created
	case r.New == nil:
		return Deleted
	case fileType(r.Old.mode()) != fileType(r.New.mode()):
		return TypeChanged
	case r.Old.Path != r.New.Path:
		return Renamed
	case r.Old.mode() == r.New.mode() && r.Old.oid() == r.New.oid():
		return Unchanged
	}
	return Modified
}

func (s *Side) mode() uint32 {
	if s.Mode == 0 {
		return ModeRegular
	}
	return s.Mode
}

func (s *Side) oid() string {
	if s.OID != "" {
		return s.OID
	}
	if s.mode() == ModeGitlink {
		return strings.TrimSpace(string(s.Content))
	}
	return BlobOID(s.Content)
}

// text is what git diffs for the side: the blob, the link target, or the
// "Subproject commit" line of a gitlink.
func (s *Side) text() string {
	if s.mode() == ModeGitlink {
		return "Subproject commit " + s.oid() + "\n"
	}
	return string(s.Content)
}

func (s *Side) binary() bool {
	return s.mode() != ModeGitlink && s.mode() != ModeSymlink && IsBinary(s.Content)
}

// fileType is the S_IFMT part of a git mode.
func fileType(m uint32) uint32 { return m & 0o170000 }

// Compare diffs one file. A nil side means the file does not exist on
// that side; Compare(nil, nil, …) is an empty Result. When old and new
// have different paths the change is a rename.
func Compare(old, new *Side, opt Options) Result {
	r := Result{Old: old, New: new, Precise: true}
	if old == nil && new == nil {
		return r
	}
	if old != nil && new != nil && fileType(old.mode()) != fileType(new.mode()) {
		return compareTypeChange(old, new, opt)
	}
	if old != nil && new != nil && old.Path != new.Path {
		r.Similarity = 100
		if old.oid() != new.oid() {
			r.Similarity = similarityPercent(old, new)
		}
	}

	contentChanged := old == nil || new == nil || old.oid() != new.oid()
	if (old != nil && old.binary()) || (new != nil && new.binary()) {
		// git's numstat says "- -" even for a mode-only change of a
		// binary file.
		r.Binary = true
		r.Precise = false
	}
	if !contentChanged {
		r.Patch = writeHeader(&r, opt)
		return r
	}
	if r.Binary {
		bin, ok := binaryPatch(old, new, opt)
		if !ok {
			r.PatchOmitted = true
			return r
		}
		r.bin = bin
		r.Patch = writeHeader(&r, opt) + bin
		return r
	}
	if (old != nil && old.size() > int64(opt.maxFile())) || (new != nil && new.size() > int64(opt.maxFile())) {
		r.TooLarge = true
		r.Precise = false
		r.PatchOmitted = true
		return r
	}

	var a, b []string
	if old != nil {
		a = splitLines(old.text())
	}
	if new != nil {
		b = splitLines(new.text())
	}
	d := diffLines(a, b, opt.budget(), opt.IgnoreWhitespace)
	r.Fallback = d.fallback
	if d.degenerate {
		r.Precise = false
	}
	r.Hunks = buildHunks(a, b, d, opt)
	for _, h := range r.Hunks {
		for _, l := range h.Lines {
			switch l.Op {
			case '+':
				r.Added++
			case '-':
				r.Removed++
			}
		}
	}
	patch := patchText(&r, opt)
	if len(r.Hunks) == 0 && r.ChangeType() == Modified && old.mode() == new.mode() {
		// Only whitespace changed and it is ignored: git diff -w prints
		// nothing for the file, not even its header.
		patch = ""
	}
	if len(patch) > opt.maxPatch() {
		r.PatchOmitted = true
		patch = ""
	}
	r.Patch = patch
	return r
}

// compareTypeChange diffs a path whose file type changed. git prints a
// deletion and a creation; the hunks here replace every line.
func compareTypeChange(old, new *Side, opt Options) Result {
	del := Compare(old, nil, opt)
	add := Compare(nil, new, opt)
	r := Result{
		Old: old, New: new,
		Binary:   del.Binary || add.Binary,
		Precise:  del.Precise && add.Precise,
		TooLarge: del.TooLarge || add.TooLarge,
	}
	if !r.Binary && !r.TooLarge {
		r.Added, r.Removed = add.Added, del.Removed
		h := Hunk{OldStart: 1, NewStart: 1}
		for _, x := range [][]Hunk{del.Hunks, add.Hunks} {
			for _, hh := range x {
				h.Lines = append(h.Lines, hh.Lines...)
			}
		}
		h.OldLines, h.NewLines = del.Removed, add.Added
		if h.OldLines == 0 {
			h.OldStart = 0
		}
		if h.NewLines == 0 {
			h.NewStart = 0
		}
		if len(h.Lines) > 0 {
			r.Hunks = []Hunk{h}
		}
	}
	if del.PatchOmitted || add.PatchOmitted || len(del.Patch)+len(add.Patch) > opt.maxPatch() {
		r.PatchOmitted = true
	} else {
		r.Patch = del.Patch + add.Patch
	}
	return r
}
