package scm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// crlfAction mirrors git's convert.c crlf_action after convert_attrs.
type crlfAction int

const (
	crlfBinary    crlfAction = iota // no conversion
	crlfText                        // text, CRLF->LF always
	crlfAuto                        // text=auto or autocrlf: only if it looks like text
	crlfUndefined                   // intermediate: not decided by attributes
)

// cleanPlan says how git would clean one file before hashing it.
type cleanPlan struct {
	crlf  crlfAction
	lfs   bool
	ident bool   // collapse "$Id: ... $" to "$Id$"
	enc   string // working-tree-encoding to decode to UTF-8 ("" for none)
	// unsupported names a clean step we cannot apply ("" if none): a
	// filter whose driver we cannot run, an encoding we do not know.
	unsupported string
}

func (p cleanPlan) identity() bool {
	return p.crlf == crlfBinary && !p.lfs && !p.ident && p.enc == "" && p.unsupported == ""
}

// key is a compact description for the stat cache: a cached hash is valid
// only under the same plan.
func (p cleanPlan) key() string {
	if p.identity() {
		return ""
	}
	k := strconv.Itoa(int(p.crlf))
	if p.lfs {
		k += "+lfs"
	}
	if p.ident {
		k += "+ident"
	}
	if p.enc != "" {
		k += "+enc=" + p.enc
	}
	return k + p.unsupported
}

func planFor(a fileAttrs, s *settings) cleanPlan {
	var p cleanPlan
	action := crlfUndefined
	switch {
	case a.text.state == 1:
		action = crlfText
	case a.text.state == -1:
		action = crlfBinary
	case a.text.state == 2 && a.text.value == "auto":
		action = crlfAuto
	case a.text.state == 2 && a.text.value == "input":
		action = crlfText
	}
	if action == crlfUndefined {
		switch {
		case a.crlf.state == 1:
			action = crlfText
		case a.crlf.state == -1:
			action = crlfBinary
		case a.crlf.state == 2 && a.crlf.value == "input":
			action = crlfText
		case a.crlf.state == 2 && a.crlf.value == "auto":
			action = crlfAuto
		}
	}
	if action != crlfBinary && action != crlfAuto && (a.eol == "lf" || a.eol == "crlf") {
		// eol=lf|crlf without text=auto means text.
		action = crlfText
	}
	if action == crlfUndefined {
		switch s.autocrlf {
		case autoCRLFTrue, autoCRLFInput:
			action = crlfAuto
		default:
			action = crlfBinary
		}
	}
	p.crlf = action
	switch {
	case a.filter == "lfs" && s.lfs:
		p.lfs = true
	case a.filter != "" && s.filterConfigured(a.filter):
		p.unsupported = "filter=" + a.filter
	}
	p.ident = a.ident
	// git never re-encodes to UTF-8 from UTF-8.
	if a.wte != "" && !isUTF8Name(a.wte) {
		if knownEncoding(a.wte) {
			p.enc = a.wte
		} else if p.unsupported == "" {
			p.unsupported = "working-tree-encoding=" + a.wte
		}
	}
	return p
}

type textStats struct {
	nul, loneCR, loneLF, crlf, printable, nonPrintable int
}

// gatherStats is git's gather_stats.
func gatherStats(b []byte) textStats {
	var s textStats
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\r' {
			if i+1 < len(b) && b[i+1] == '\n' {
				s.crlf++
				i++
			} else {
				s.loneCR++
			}
			continue
		}
		if c == '\n' {
			s.loneLF++
			continue
		}
		switch {
		case c == 127:
			s.nonPrintable++
		case c < 32:
			switch c {
			case '\b', '\t', '\033', '\014':
				s.printable++
			case 0:
				s.nul++
				s.nonPrintable++
			default:
				s.nonPrintable++
			}
		default:
			s.printable++
		}
	}
	// A trailing ^Z (DOS EOF) is not counted as non-printable.
	if len(b) > 0 && b[len(b)-1] == '\032' {
		s.nonPrintable--
	}
	return s
}

// isBinary is git's convert_is_binary.
func (s textStats) isBinary() bool {
	return s.loneCR > 0 || s.nul > 0 || (s.printable>>7) < s.nonPrintable
}

// hasCRLFText reports whether an index blob counts as "already has CRLF"
// for git's safer autocrlf rule (has_crlf_in_index).
func hasCRLFText(b []byte) bool {
	if bytes.IndexByte(b, '\r') < 0 {
		return false
	}
	s := gatherStats(b)
	return !s.isBinary() && s.crlf > 0
}

// cleanCRLF applies git's crlf_to_git. indexHasCRLF is consulted only in
// auto mode and only when needed (it may read a blob).
func cleanCRLF(b []byte, action crlfAction, indexHasCRLF func() bool) []byte {
	if action == crlfBinary || len(b) == 0 || bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	s := gatherStats(b)
	if s.crlf == 0 {
		return b
	}
	if action == crlfAuto {
		if s.isBinary() {
			return b
		}
		if indexHasCRLF != nil && indexHasCRLF() {
			return b
		}
	}
	out := make([]byte, 0, len(b)-s.crlf)
	for i := 0; i < len(b); i++ {
		if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			continue
		}
		out = append(out, b[i])
	}
	return out
}

const lfsVersionLine = "version https://git-lfs.github.com/spec/v1\n"

// cleanLFS produces the pointer file git-lfs's clean filter would store.
// Content that already is a pointer passes through unchanged, as git-lfs
// does for files that were never smudged.
func cleanLFS(b []byte) []byte {
	if isLFSPointer(b) {
		return b
	}
	sum := sha256.Sum256(b)
	return []byte(lfsVersionLine + "oid sha256:" + hex.EncodeToString(sum[:]) + "\nsize " + strconv.Itoa(len(b)) + "\n")
}

func isLFSPointer(b []byte) bool {
	if len(b) > 1024 {
		return false
	}
	return bytes.HasPrefix(b, []byte(lfsVersionLine)) ||
		bytes.HasPrefix(b, []byte("version https://hawser.github.com/spec/v1\n"))
}
