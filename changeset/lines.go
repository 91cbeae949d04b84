package changeset

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
)

// splitLines splits s the way git does: every line keeps its LF, a CR is
// ordinary content, and a final line without LF is a line. "" has no
// lines. The lines share s's memory.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			n++
		}
	}
	if s[len(s)-1] != '\n' {
		n++
	}
	lines := make([]string, 0, n)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// AIRLineCount counts lines as the AIR diff statistics contract does for a
// created or deleted file: LF, CRLF and a lone CR each end a line, there is
// no extra line after the final terminator, and "" has 0 lines.
func AIRLineCount(s []byte) int {
	n := 0
	for i, c := range s {
		switch c {
		case '\n':
			n++
		case '\r':
			if i+1 >= len(s) || s[i+1] != '\n' {
				n++
			}
		}
	}
	if len(s) > 0 && s[len(s)-1] != '\n' && s[len(s)-1] != '\r' {
		n++
	}
	return n
}

// binaryProbe is git's FIRST_FEW_BYTES.
const binaryProbe = 8000

// IsBinary reports whether content looks binary to git: a NUL byte in the
// first 8000 bytes.
func IsBinary(content []byte) bool {
	return bytes.IndexByte(content[:min(len(content), binaryProbe)], 0) >= 0
}

// BlobOID is git's SHA-1 object id of a blob with content: the hex SHA-1
// of "blob <len>\x00" followed by content. It is only right for content
// git stores as is (no clean filter, eol conversion or LFS).
func BlobOID(content []byte) string {
	h := sha1.New()
	h.Write([]byte("blob "))
	h.Write(strconv.AppendInt(nil, int64(len(content)), 10))
	h.Write([]byte{0})
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// zeroOID is the null object id of the same length as oid.
func zeroOID(like string) string {
	n := len(like)
	if n != 64 {
		n = 40
	}
	return string(bytes.Repeat([]byte{'0'}, n))
}
