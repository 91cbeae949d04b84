package scm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// identToGit is git's ident_to_git: every "$Id: ... $" on one line
// collapses to "$Id$", so the id the smudge side wrote into the working
// tree is not a change.
func identToGit(b []byte) []byte {
	if !bytes.Contains(b, []byte("$Id:")) {
		return b
	}
	out := make([]byte, 0, len(b))
	src := b
	for {
		d := bytes.IndexByte(src, '$')
		if d < 0 {
			break
		}
		out = append(out, src[:d+1]...)
		src = src[d+1:]
		if len(src) > 3 && bytes.HasPrefix(src, []byte("Id:")) {
			end := bytes.IndexByte(src[3:], '$')
			if end < 0 {
				break
			}
			if bytes.IndexByte(src[3:3+end], '\n') >= 0 {
				continue // a line break before the closing dollar
			}
			out = append(out, "Id$"...)
			src = src[3+end+1:]
		}
	}
	return append(out, src...)
}

// utfName returns what follows "UTF" (and an optional "-") in an
// encoding's name, upper-cased, as git's same_utf_encoding compares them;
// ok is false for a name that is not a UTF one.
func utfName(enc string) (rest string, ok bool) {
	if len(enc) < 3 || !strings.EqualFold(enc[:3], "utf") {
		return "", false
	}
	return strings.ToUpper(strings.TrimPrefix(enc[3:], "-")), true
}

// isUTF8Name reports whether enc names UTF-8, which git never re-encodes.
func isUTF8Name(enc string) bool {
	return strings.EqualFold(enc, "utf-8") || strings.EqualFold(enc, "utf8")
}

var (
	bomUTF16BE = []byte{0xfe, 0xff}
	bomUTF16LE = []byte{0xff, 0xfe}
	bomUTF32BE = []byte{0, 0, 0xfe, 0xff}
	bomUTF32LE = []byte{0xff, 0xfe, 0, 0}
)

// errEncoding wraps every failure to decode a working-tree-encoding.
var errEncoding = errors.New("working-tree-encoding")

// knownEncoding reports whether encodeToGit can decode enc at all; an
// encoding it does not know is a clean step that cannot be applied.
func knownEncoding(enc string) bool {
	if rest, ok := utfName(enc); ok {
		switch rest {
		case "8", "16", "16LE", "16BE", "16LE-BOM", "32", "32LE", "32BE":
			return true
		}
	}
	return legacyEncoding(enc) != nil
}

func legacyEncoding(enc string) encoding.Encoding {
	if e, err := ianaindex.IANA.Encoding(enc); err == nil && e != nil {
		return e
	}
	if e, err := htmlindex.Get(enc); err == nil && e != nil {
		return e
	}
	return nil
}

// encodeToGit is git's encode_to_git: working-tree content in encoding
// enc becomes UTF-8. The checks are git's: UTF-16 and UTF-32 without an
// order need a byte-order mark, UTF-16LE/BE and UTF-32LE/BE must not have
// one, and content that does not decode is an error. On an error git's
// status and diff keep the bytes as they are (and git add refuses), so
// the caller decides; b is returned unchanged with it.
func encodeToGit(path string, b []byte, enc string) ([]byte, error) {
	if len(b) == 0 {
		return b, nil
	}
	fail := func(format string, args ...any) ([]byte, error) {
		return b, fmt.Errorf("%w: %s: %s", errEncoding, path, fmt.Sprintf(format, args...))
	}
	rest, isUTF := utfName(enc)
	if !isUTF {
		e := legacyEncoding(enc)
		if e == nil {
			return fail("unknown encoding %s", enc)
		}
		out, err := e.NewDecoder().Bytes(b)
		// A byte the charset does not define decodes to U+FFFD here; iconv,
		// which git uses, refuses it.
		if err != nil || bytes.ContainsRune(out, utf8.RuneError) {
			return fail("failed to encode from %s to UTF-8", enc)
		}
		return out, nil
	}
	var (
		body []byte
		e    encoding.Encoding
	)
	switch rest {
	case "8":
		if !utf8.Valid(b) {
			return fail("failed to encode from %s to UTF-8", enc)
		}
		return b, nil
	case "16", "16LE-BOM":
		switch {
		case bytes.HasPrefix(b, bomUTF16BE):
			body, e = b[2:], unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
		case bytes.HasPrefix(b, bomUTF16LE):
			body, e = b[2:], unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
		case rest == "16":
			return fail("BOM is required if encoded as %s", enc)
		default: // iconv reads UTF-16 without a mark as big-endian
			body, e = b, unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
		}
	case "32":
		switch {
		case bytes.HasPrefix(b, bomUTF32BE):
			body, e = b[4:], utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM)
		case bytes.HasPrefix(b, bomUTF32LE):
			body, e = b[4:], utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM)
		default:
			return fail("BOM is required if encoded as %s", enc)
		}
	case "16LE", "16BE":
		if bytes.HasPrefix(b, bomUTF16BE) || bytes.HasPrefix(b, bomUTF16LE) {
			return fail("BOM is prohibited if encoded as %s", enc)
		}
		order := unicode.LittleEndian
		if rest == "16BE" {
			order = unicode.BigEndian
		}
		body, e = b, unicode.UTF16(order, unicode.IgnoreBOM)
	case "32LE", "32BE":
		if bytes.HasPrefix(b, bomUTF32BE) || bytes.HasPrefix(b, bomUTF32LE) {
			return fail("BOM is prohibited if encoded as %s", enc)
		}
		order := utf32.LittleEndian
		if rest == "32BE" {
			order = utf32.BigEndian
		}
		body, e = b, utf32.UTF32(order, utf32.IgnoreBOM)
	default:
		return fail("unknown encoding %s", enc)
	}
	out, err := e.NewDecoder().Bytes(body)
	if err != nil {
		return fail("failed to encode from %s to UTF-8: %v", enc, err)
	}
	// The decoder replaces what does not decode (an odd byte, a lone
	// surrogate) with U+FFFD where iconv fails: encoding back must give
	// the same bytes.
	if back, err := e.NewEncoder().Bytes(out); err != nil || !bytes.Equal(back, body) {
		return fail("failed to encode from %s to UTF-8", enc)
	}
	return out, nil
}
