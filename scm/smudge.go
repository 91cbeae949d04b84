package scm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// ErrFilterNotRun is returned by Smudge for a file whose attributes name
// a filter driver the daemon does not run (filter=<name> with a smudge or
// process command configured): git checkout would write the driver's
// output, which cannot be reproduced here.
var ErrFilterNotRun = errors.New("the file's filter driver is not run by changesetd")

// Smudge returns the bytes git checkout writes to the working tree for a
// blob of path (oid is its id, for ident): git's convert_to_working_tree
// in its order, $Id$ expanded, LF turned into CRLF where the text, eol and
// crlf attributes and core.autocrlf/core.eol say so (with git's "auto"
// rules), and UTF-8 encoded to the working-tree-encoding. A git-lfs
// pointer is replaced by its object when .git/lfs/objects has it, else
// written as the pointer (what git does without git-lfs installed).
func (r *Repo) Smudge(p string, blob []byte, oid string) ([]byte, error) {
	rel, err := cleanRel(p)
	if err != nil {
		return nil, fmt.Errorf("scm: smudge %s: %w", p, err)
	}
	s := newSettings(loadConfig(r.commonDir, r.gitDir))
	r.mu.Lock()
	a := newRules(r.root, r.commonDir, &s).attrs(rel)
	r.mu.Unlock()
	return r.smudge(rel, blob, oid, a, &s)
}

func (r *Repo) smudge(rel string, b []byte, oid string, a fileAttrs, s *settings) ([]byte, error) {
	if a.filter != "" && a.filter != "lfs" && (s.cfg.string("filter", a.filter, "smudge") != "" || s.cfg.string("filter", a.filter, "process") != "") {
		return nil, fmt.Errorf("scm: smudge %s: filter=%s: %w", rel, a.filter, ErrFilterNotRun)
	}
	if a.ident {
		b = identToWorktree(b, oid)
	}
	if crlf, auto := outputCRLF(a, s); crlf {
		b = lfToCRLF(b, auto)
	}
	if a.wte != "" && !isUTF8Name(a.wte) {
		out, err := encodeToWorktree(b, a.wte)
		if err != nil {
			return nil, fmt.Errorf("scm: smudge %s: %w", rel, err)
		}
		b = out
	}
	if a.filter == "lfs" && isLFSPointer(b) {
		if obj, ok := r.lfsObject(b); ok {
			b = obj
		}
	}
	return b, nil
}

// Clean returns what git would store for working-tree bytes of path (see
// ReadWorktreeCanonical); on a clean step that cannot be applied the
// bytes come back as they are, with the reason.
func (r *Repo) Clean(p string, b []byte) ([]byte, error) {
	rel, err := cleanRel(p)
	if err != nil {
		return b, fmt.Errorf("scm: clean %s: %w", p, err)
	}
	s := newSettings(loadConfig(r.commonDir, r.gitDir))
	r.mu.Lock()
	defer r.mu.Unlock()
	plan := planFor(newRules(r.root, r.commonDir, &s).attrs(rel), &s)
	if plan.unsupported != "" {
		return b, fmt.Errorf("scm: clean %s: %s not applied", rel, plan.unsupported)
	}
	var ie *idxEntry
	if r.idx != nil {
		ie = r.idx.get(rel)
	}
	return r.cleanLocked(rel, b, plan, ie)
}

// outputCRLF is git's decision (convert_attrs, output_eol and
// text_eol_is_crlf) whether checkout writes CRLF line ends, and whether
// only under the "auto" rules (will_convert_lf_to_crlf).
func outputCRLF(a fileAttrs, s *settings) (crlf, auto bool) {
	const (
		undefined = iota
		binary
		text
		textInput
		textCRLF
		autoPlain
		autoInput
		autoCRLF
	)
	fromAttr := func(v attrVal) int {
		switch {
		case v.state == 1:
			return text
		case v.state == -1:
			return binary
		case v.state == 2 && v.value == "input":
			return textInput
		case v.state == 2 && v.value == "auto":
			return autoPlain
		}
		return undefined
	}
	action := fromAttr(a.text)
	if action == undefined {
		action = fromAttr(a.crlf)
	}
	if action != binary {
		switch {
		case action == autoPlain && a.eol == "lf":
			action = autoInput
		case action == autoPlain && a.eol == "crlf":
			action = autoCRLF
		case a.eol == "lf":
			action = textInput
		case a.eol == "crlf":
			action = textCRLF
		}
	}
	textEOLIsCRLF := s.autocrlf == autoCRLFTrue || (s.autocrlf != autoCRLFInput && s.eolCRLF)
	if action == text {
		action = textInput
		if textEOLIsCRLF {
			action = textCRLF
		}
	}
	if action == undefined {
		switch s.autocrlf {
		case autoCRLFTrue:
			action = autoCRLF
		case autoCRLFInput:
			action = autoInput
		default:
			action = binary
		}
	}
	switch action {
	case textCRLF:
		return true, false
	case autoCRLF:
		return true, true
	case autoPlain:
		return textEOLIsCRLF, true
	}
	return false, false
}

// lfToCRLF is git's crlf_to_worktree: every LF not already after a CR
// becomes CRLF. Under the auto rules content with any CR, or that looks
// binary, is left alone.
func lfToCRLF(b []byte, auto bool) []byte {
	st := gatherStats(b)
	if st.loneLF == 0 {
		return b
	}
	if auto && (st.loneCR > 0 || st.crlf > 0 || st.isBinary()) {
		return b
	}
	out := make([]byte, 0, len(b)+st.loneLF)
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			out = append(out, '\r')
		}
		out = append(out, c)
	}
	return out
}

// identToWorktree is git's ident_to_worktree: "$Id$" (and an "$Id: ... $"
// already expanded on one line) becomes "$Id: <oid> $".
func identToWorktree(b []byte, oid string) []byte {
	if oid == "" || !bytes.Contains(b, []byte("$Id")) {
		return b
	}
	out := make([]byte, 0, len(b)+len(oid))
	src := b
	for {
		d := bytes.IndexByte(src, '$')
		if d < 0 {
			break
		}
		out = append(out, src[:d+1]...)
		src = src[d+1:]
		if !bytes.HasPrefix(src, []byte("Id")) || len(src) < 3 {
			continue
		}
		switch src[2] {
		case '$':
			src = src[3:]
		case ':':
			end := bytes.IndexByte(src[3:], '$')
			if end < 0 || bytes.IndexByte(src[3:3+end], '\n') >= 0 {
				continue
			}
			// git leaves a foreign ident ("$Id: x y $", with a space
			// inside the value) alone.
			if v := bytes.TrimSpace(src[3 : 3+end]); bytes.IndexByte(v, ' ') >= 0 {
				continue
			}
			src = src[3+end+1:]
		default:
			continue
		}
		out = append(out, "Id: "+oid+" $"...)
	}
	return append(out, src...)
}

// encodeToWorktree is git's encode_to_worktree: UTF-8 content becomes the
// working-tree-encoding enc, as glibc's iconv writes it: UTF-16 and
// UTF-32 without an order get a byte-order mark and the machine's order
// (little-endian on the platforms the daemon is built for), UTF-16LE-BOM a
// little-endian one.
func encodeToWorktree(b []byte, enc string) ([]byte, error) {
	if len(b) == 0 {
		return b, nil
	}
	var (
		e   encoding.Encoding
		bom []byte
	)
	rest, isUTF := utfName(enc)
	switch {
	case !isUTF:
		e = legacyEncoding(enc)
	case rest == "16":
		e, bom = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), bomUTF16LE
	case rest == "16LE-BOM":
		e, bom = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), bomUTF16LE
	case rest == "16LE":
		e = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	case rest == "16BE":
		e = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	case rest == "32":
		e, bom = utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM), bomUTF32LE
	case rest == "32LE":
		e = utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM)
	case rest == "32BE":
		e = utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM)
	}
	if e == nil {
		return nil, fmt.Errorf("%w: unknown encoding %s", errEncoding, enc)
	}
	out, err := e.NewEncoder().Bytes(b)
	if err != nil {
		return nil, fmt.Errorf("%w: failed to encode from UTF-8 to %s: %v", errEncoding, enc, err)
	}
	return append(slices.Clip(bom), out...), nil
}

// lfsObject reads the object a git-lfs pointer names from the common
// dir's lfs/objects, if it is there.
func (r *Repo) lfsObject(ptr []byte) ([]byte, bool) {
	i := bytes.Index(ptr, []byte("oid sha256:"))
	if i < 0 || len(ptr) < i+11+64 {
		return nil, false
	}
	h := string(ptr[i+11 : i+11+64])
	b, err := os.ReadFile(filepath.Join(r.commonDir, "lfs", "objects", h[:2], h[2:4], h))
	return b, err == nil
}
