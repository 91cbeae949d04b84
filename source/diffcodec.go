package source

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/changesetd/changesetd/changeset"
)

// The saved diffs are written as they are kept, packed: for each, its
// key, its Result without hunks, then the packed text, hunks and lines.
// A restart reads them before it can show its last-known view, so they
// are read straight into the packed form, with a few allocations each
// and no reflection.

// savedDiff is one diff as saved: its key and its result, packed.
type savedDiff struct {
	k diffKey
	p packed // never changed once kept, so saved outside the cache's lock
}

// appendSaved appends s to b.
func appendSaved(b []byte, s *savedDiff) []byte {
	k, p := s.k, &s.p
	b = appendStr(b, k.Path)
	b = appendStr(b, k.OldOID)
	b = appendStr(b, k.NewOID)
	b = binary.AppendUvarint(b, uint64(k.OldMode))
	b = binary.AppendUvarint(b, uint64(k.NewMode))
	r := &p.r
	var flags byte
	for i, f := range []bool{r.Binary, r.Precise, r.Fallback, r.TooLarge, r.PatchOmitted, r.Old != nil, r.New != nil} {
		if f {
			flags |= 1 << i
		}
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(r.Added))
	b = binary.AppendUvarint(b, uint64(r.Removed))
	b = binary.AppendUvarint(b, uint64(r.Similarity))
	for _, s := range []*changeset.Side{r.Old, r.New} {
		if s != nil {
			b = appendSide(b, s)
		}
	}
	b = appendStr(b, r.Patch)
	b = appendStr(b, p.text)
	b = binary.AppendUvarint(b, uint64(len(p.hunks)))
	for _, h := range p.hunks {
		for _, v := range []int{h.oldStart, h.oldLines, h.newStart, h.newLines, h.section, h.lines} {
			b = binary.AppendUvarint(b, uint64(v))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(p.lines)))
	for _, l := range p.lines {
		b = binary.AppendUvarint(b, uint64(l.end))
		noEOL := byte(0)
		if l.noEOL {
			noEOL = 1
		}
		b = append(b, l.op, noEOL)
	}
	return b
}

func appendSide(b []byte, s *changeset.Side) []byte {
	b = appendStr(b, s.Path)
	b = binary.AppendUvarint(b, uint64(s.Mode))
	b = appendStr(b, s.OID)
	b = binary.AppendVarint(b, s.Size)
	switch {
	case s.Sniffed == nil:
		return append(b, 0)
	case s.Sniffed.Image == nil:
		b = append(b, 1)
		return appendStr(b, s.Sniffed.Generated)
	}
	b = append(b, 2)
	b = appendStr(b, s.Sniffed.Generated)
	b = appendStr(b, s.Sniffed.Image.Format)
	b = binary.AppendUvarint(b, uint64(s.Sniffed.Image.Width))
	return binary.AppendUvarint(b, uint64(s.Sniffed.Image.Height))
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// savedReader decodes what appendSaved wrote. The first error sticks:
// every read after it returns zero values.
type savedReader struct {
	b   []byte
	err error
}

var errSavedShort = errors.New("truncated")

func (r *savedReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errSavedShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

// int reads a count or offset: a value no slice or string here could
// have is an error, not a huge allocation.
func (r *savedReader) int() int {
	v := r.uint()
	if v > 1<<40 {
		r.err = fmt.Errorf("value %d out of range", v)
		return 0
	}
	return int(v)
}

// varint reads a signed value.
func (r *savedReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errSavedShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads the length of a list whose elements take a byte or more
// each: one longer than what is left is an error, not an allocation.
func (r *savedReader) count() int {
	n := r.int()
	if n > len(r.b) {
		r.err = errSavedShort
		return 0
	}
	return n
}

func (r *savedReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = errSavedShort
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *savedReader) str() string {
	n := r.count()
	if r.err != nil {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *savedReader) side() *changeset.Side {
	s := &changeset.Side{Path: r.str(), Mode: uint32(r.uint()), OID: r.str(), Size: r.varint()}
	sniffed := r.byte()
	if sniffed > 2 {
		r.err = errors.New("bad side")
	}
	if sniffed >= 1 {
		s.Sniffed = &changeset.Sniffed{Generated: r.str()}
	}
	if sniffed == 2 {
		s.Sniffed.Image = &changeset.ImageSize{Format: r.str(), Width: r.int(), Height: r.int()}
	}
	return s
}

// saved reads one diff.
func (r *savedReader) saved() savedDiff {
	k := diffKey{Path: r.str(), OldOID: r.str(), NewOID: r.str(), OldMode: uint32(r.uint()), NewMode: uint32(r.uint())}
	var p packed
	flags := r.byte()
	f := func(i int) bool { return flags&(1<<i) != 0 }
	p.r = changeset.Result{Binary: f(0), Precise: f(1), Fallback: f(2), TooLarge: f(3), PatchOmitted: f(4)}
	p.r.Added, p.r.Removed, p.r.Similarity = r.int(), r.int(), r.int()
	if f(5) {
		p.r.Old = r.side()
	}
	if f(6) {
		p.r.New = r.side()
	}
	p.r.Patch = r.str()
	p.text = r.str()
	if n := r.count(); n > 0 {
		p.hunks = make([]packedHunk, n)
		for i := range p.hunks {
			p.hunks[i] = packedHunk{oldStart: r.int(), oldLines: r.int(), newStart: r.int(), newLines: r.int(), section: r.int(), lines: r.int()}
		}
	}
	if n := r.count(); n > 0 {
		p.lines = make([]packedLine, n)
		for i := range p.lines {
			p.lines[i] = packedLine{end: r.int(), op: r.byte(), noEOL: r.byte() == 1}
		}
	}
	if r.err == nil {
		r.err = p.check()
	}
	return savedDiff{k, p}
}

// check reports whether p's offsets lie within it, in order, as result
// needs them to: a damaged file must not make it panic.
func (p *packed) check() error {
	at, li := 0, 0
	for _, h := range p.hunks {
		if h.section < at || h.section > len(p.text) || h.lines < li || h.lines > len(p.lines) {
			return errors.New("bad hunk")
		}
		at = h.section
		for ; li < h.lines; li++ {
			if e := p.lines[li].end; e < at || e > len(p.text) {
				return errors.New("bad line")
			}
			at = p.lines[li].end
		}
	}
	if li != len(p.lines) {
		return errors.New("lines outside the hunks")
	}
	return nil
}
