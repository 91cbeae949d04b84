package changeset

import (
	"bytes"
	"compress/zlib"
	"strconv"
	"strings"
)

// A binary change is written as git's "GIT binary patch" (git diff
// --binary): the forward and the reverse image, each zlib-deflated and
// base85-encoded in lines of at most 52 bytes, so that git apply can
// apply the patch and apply -R can undo it. As git does, an image is a
// delta against the other side when that deflates smaller than the
// literal, and a literal otherwise.

// binaryPatch returns the "GIT binary patch" block for old → new, or
// ok=false when either side is over MaxFileBytes or the block would be
// longer than MaxPatchBytes.
func binaryPatch(old, new *Side, opt Options) (string, bool) {
	var a, b []byte
	if old != nil {
		a = old.Content
	}
	if new != nil {
		b = new.Content
	}
	if len(a) > opt.maxFile() || len(b) > opt.maxFile() {
		return "", false
	}
	var sb strings.Builder
	sb.WriteString("GIT binary patch\n")
	writeImage(&sb, a, b)
	writeImage(&sb, b, a)
	if sb.Len() > opt.maxPatch() {
		return "", false
	}
	return sb.String(), true
}

// writeImage writes the image of dst: "literal <size>" or "delta <size>"
// (a delta against src), the deflated data in base85 lines, and the blank
// line that ends it. Like git, it tries a delta only when both sides have
// content, and takes it when it deflates smaller than the literal; a delta
// under a sixteenth of dst is taken without deflating the literal, which
// is most of the cost for a large file with a small change.
func writeImage(sb *strings.Builder, src, dst []byte) {
	kind, size, z := "literal", len(dst), []byte(nil)
	if len(src) > 0 && len(dst) > 0 {
		d := delta(src, dst)
		zd := deflate(d)
		if len(d) < len(dst)/16 {
			kind, size, z = "delta", len(d), zd
		} else if z = deflate(dst); len(zd) < len(z) {
			kind, size, z = "delta", len(d), zd
		}
	}
	if z == nil {
		z = deflate(dst)
	}
	sb.WriteString(kind + " " + strconv.Itoa(size) + "\n")
	writeBase85Lines(sb, z)
	sb.WriteByte('\n')
}

func deflate(data []byte) []byte {
	var z bytes.Buffer
	// The fastest level, as in the binary patches git writes (their zlib
	// header says so): a patch is rebuilt on every refresh of a changed
	// binary file.
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	zw.Write(data) // writes to a bytes.Buffer do not fail
	zw.Close()
	return z.Bytes()
}

// deltaBlock is the granularity at which delta finds copies of src.
const deltaBlock = 16

// delta encodes dst as git's delta against src (patch-delta.c): the two
// sizes as varints, then copy instructions (0x80 | which offset and size
// bytes follow) and insert instructions (1-127 literal bytes). Copies are
// found through an index of src's aligned 16-byte blocks and extended
// both ways; it is not git's exact output, only a valid one.
func delta(src, dst []byte) []byte {
	out := appendVarint(nil, len(src))
	out = appendVarint(out, len(dst))
	index := make(map[[2]uint64]int, len(src)/deltaBlock)
	for off := 0; off+deltaBlock <= len(src); off += deltaBlock {
		k := blockKey(src[off:])
		if _, dup := index[k]; !dup {
			index[k] = off
		}
	}
	lit := 0 // start of the pending literal run in dst
	for i := 0; i < len(dst); {
		off, ok := -1, false
		if i+deltaBlock <= len(dst) {
			off, ok = index[blockKey(dst[i:])]
		}
		if !ok || !bytes.Equal(src[off:off+deltaBlock], dst[i:i+deltaBlock]) {
			i++
			continue
		}
		// Extend backwards into the pending literals, then forwards.
		for off > 0 && i > lit && src[off-1] == dst[i-1] {
			off--
			i--
		}
		n := deltaBlock
		for off+n < len(src) && i+n < len(dst) && src[off+n] == dst[i+n] {
			n++
		}
		out = appendInsert(out, dst[lit:i])
		out = appendCopy(out, off, n)
		i += n
		lit = i
	}
	return appendInsert(out, dst[lit:])
}

func blockKey(b []byte) [2]uint64 {
	return [2]uint64{leUint64(b), leUint64(b[8:])}
}

func leUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func appendVarint(out []byte, n int) []byte {
	for n >= 0x80 {
		out = append(out, byte(n)|0x80)
		n >>= 7
	}
	return append(out, byte(n))
}

func appendInsert(out, lit []byte) []byte {
	for len(lit) > 0 {
		n := min(len(lit), 0x7f)
		out = append(out, byte(n))
		out = append(out, lit[:n]...)
		lit = lit[n:]
	}
	return out
}

// appendCopy writes copies of src[off:off+n] of at most 0xffffff bytes
// each (three size bytes).
func appendCopy(out []byte, off, n int) []byte {
	for n > 0 {
		size := min(n, 0xffffff)
		cmd := len(out)
		out = append(out, 0x80)
		for i := range 4 {
			if b := byte(off >> (8 * i)); b != 0 {
				out[cmd] |= 1 << i
				out = append(out, b)
			}
		}
		for i := range 3 {
			if b := byte(size >> (8 * i)); b != 0 {
				out[cmd] |= 0x10 << i
				out = append(out, b)
			}
		}
		off += size
		n -= size
	}
	return out
}

// writeBase85Lines is git's emit_binary_diff_body line loop: each line
// holds up to 52 bytes, led by their count ('A'..'Z' for 1..26,
// 'a'..'z' for 27..52).
func writeBase85Lines(sb *strings.Builder, data []byte) {
	for len(data) > 0 {
		n := min(len(data), 52)
		if n <= 26 {
			sb.WriteByte(byte('A' + n - 1))
		} else {
			sb.WriteByte(byte('a' + n - 27))
		}
		encode85(sb, data[:n])
		sb.WriteByte('\n')
		data = data[n:]
	}
}

// base85 is git's alphabet (base85.c), not Ascii85's.
const base85 = "0123456789" +
	"ABCDEFGHIJKLMNOPQRSTUVWXYZ" +
	"abcdefghijklmnopqrstuvwxyz" +
	"!#$%&()*+-;<=>?@^_`{|}~"

// encode85 is git's encode_85: every 4 bytes (the last group zero-padded)
// become 5 characters, most significant first.
func encode85(sb *strings.Builder, data []byte) {
	for len(data) > 0 {
		var acc uint32
		for i := range 4 {
			acc <<= 8
			if i < len(data) {
				acc |= uint32(data[i])
			}
		}
		var buf [5]byte
		for i := 4; i >= 0; i-- {
			buf[i] = base85[acc%85]
			acc /= 85
		}
		sb.Write(buf[:])
		data = data[min(4, len(data)):]
	}
}
