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
// apply the patch and apply -R can undo it. Both images are literals;
// git may choose a delta instead, which git apply takes just as well.

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
	writeLiteral(&sb, b)
	writeLiteral(&sb, a)
	if sb.Len() > opt.maxPatch() {
		return "", false
	}
	return sb.String(), true
}

// writeLiteral writes "literal <size>", the deflated data in base85 lines,
// and the blank line that ends the image.
func writeLiteral(sb *strings.Builder, data []byte) {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(data) // writes to a bytes.Buffer do not fail
	zw.Close()
	sb.WriteString("literal " + strconv.Itoa(len(data)) + "\n")
	writeBase85Lines(sb, z.Bytes())
	sb.WriteByte('\n')
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
