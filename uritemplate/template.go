package uritemplate

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	lib "github.com/yosida95/uritemplate/v3"
)

// Values maps template variable names to their (unencoded) values.
type Values map[string]string

// Template is a parsed RFC 6570 URI template. It is immutable and safe for
// concurrent use: parse once, share, expand and match many times.
type Template struct {
	raw      string
	lib      *lib.Template
	varnames []string

	// re matches a concrete URI when every expression of the template is a
	// simple "{var}"; nil otherwise (Match then never matches). Capture group
	// i+1 holds the raw (still percent-encoded) text of slots[i].
	re    *regexp.Regexp
	slots []string
}

// Parse parses a URI template. Errors name the template and the byte offset
// of the problem.
func Parse(s string) (*Template, error) {
	if s == "" {
		return nil, fmt.Errorf("uritemplate: empty template")
	}
	lt, err := lib.New(s)
	if err != nil {
		return nil, parseError(s, err)
	}
	t := &Template{
		raw:      s,
		lib:      lt,
		varnames: slices.Clone(lt.Varnames()),
	}
	t.re, t.slots = compileMatcher(s)
	return t, nil
}

// MustParse is like Parse but panics on error. Use it for templates that are
// constants of the program.
func MustParse(s string) *Template {
	t, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return t
}

// String returns the template text as given to Parse.
func (t *Template) String() string { return t.raw }

// Varnames returns the names of the template's variables in order of first
// appearance, each once. The caller may modify the returned slice.
func (t *Template) Varnames() []string { return slices.Clone(t.varnames) }

// Expand expands the template with v. Every variable of the template must be
// present in v with a non-empty, valid UTF-8 value that contains no NUL byte;
// otherwise Expand returns an error naming the variable. Entries of v that
// the template does not use are ignored.
//
// Simple "{var}" expressions percent-encode every byte outside the RFC 3986
// unreserved set, using the UTF-8 encoding of the value: "a/b c" becomes
// "a%2Fb%20c" and "é" becomes "%C3%A9".
func (t *Template) Expand(v Values) (string, error) {
	lv := make(lib.Values, len(t.varnames))
	for _, name := range t.varnames {
		s, ok := v[name]
		var problem string
		switch {
		case !ok:
			problem = "is missing"
		case s == "":
			problem = "is empty"
		case !utf8.ValidString(s):
			problem = "is not valid UTF-8"
		case strings.IndexByte(s, 0) >= 0:
			problem = "contains a NUL byte"
		}
		if problem != "" {
			return "", fmt.Errorf("uritemplate: expand %s: variable %q %s", quote(t.raw), name, problem)
		}
		lv.Set(name, lib.String(bytesAsRunes(s)))
	}
	out, err := t.lib.Expand(lv)
	if err != nil {
		return "", fmt.Errorf("uritemplate: expand %s: %v", quote(t.raw), err)
	}
	return out, nil
}

// bytesAsRunes returns s with every byte b turned into the rune U+00bb.
//
// yosida95/uritemplate v3.0.2 percent-encodes the code point of a rune rather
// than its UTF-8 bytes ("é" U+00E9 becomes "%E9", "€" U+20AC becomes "%20%AC",
// U+0100 becomes "%01"). Handing it one rune per byte makes it emit exactly
// the UTF-8 percent-encoding RFC 6570 requires. The library drops rune U+0000
// altogether, which is why Expand rejects NUL bytes. A side effect is that a
// prefix modifier "{var:N}" counts bytes, not characters, of non-ASCII values;
// the protocol's templates never use prefix modifiers.
func bytesAsRunes(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}

// Match reports whether uri is an expansion of the template and, if so,
// returns the percent-decoded value of every variable.
//
// Match supports templates whose expressions are all simple "{var}"
// expressions (RFC 6570 level 1); for any other template it reports false.
// A variable's raw text is a non-empty run of unreserved characters and
// percent-encoded triplets, so it never spans a '/'. The decoded value must be
// valid UTF-8 without NUL bytes. A variable that appears more than once must
// decode to the same value everywhere. Literal parts must match byte for byte.
//
// The result is unambiguous when no two expressions share a path segment
// (as in all of the protocol's templates). For "{a}{b}" or "{a}.{b}" the
// split is leftmost-longest for the earlier variable.
func (t *Template) Match(uri string) (Values, bool) {
	if t.re == nil {
		return nil, false
	}
	m := t.re.FindStringSubmatch(uri)
	if m == nil {
		return nil, false
	}
	out := make(Values, len(t.varnames))
	for i, name := range t.slots {
		val, err := decodeValue(m[i+1])
		if err != nil {
			return nil, false
		}
		if prev, ok := out[name]; ok && prev != val {
			return nil, false
		}
		out[name] = val
	}
	return out, true
}

// slotPattern matches the raw text of one simple expression: what Expand
// writes for a non-empty value.
const slotPattern = `((?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+)`

// compileMatcher builds the Match regexp for a template the library has
// already accepted. In a valid template '{' and '}' only delimit expressions.
// It returns nil if some expression is not a simple "{var}".
func compileMatcher(s string) (*regexp.Regexp, []string) {
	var b strings.Builder
	var slots []string
	b.WriteByte('^')
	for s != "" {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(s))
			break
		}
		b.WriteString(regexp.QuoteMeta(s[:open]))
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			return nil, nil // unreachable for a parsed template
		}
		body := s[open+1 : open+end]
		if !isSimpleExpression(body) {
			return nil, nil
		}
		slots = append(slots, body)
		b.WriteString(slotPattern)
		s = s[open+end+1:]
	}
	b.WriteByte('$')
	return regexp.MustCompile(b.String()), slots
}

// isSimpleExpression reports whether the text between braces is a single
// variable name without operator or modifier.
func isSimpleExpression(body string) bool {
	if body == "" || strings.ContainsAny(body, ",:*") {
		return false
	}
	switch body[0] {
	case '+', '#', '.', '/', ';', '?', '&', '=', '!', '@', '|':
		return false
	}
	return true
}

// valueError describes why the raw text of a variable is not an acceptable
// encoded value. ParseChangesetURI puts it into user-facing messages.
type valueError struct {
	badPct bool   // malformed percent-encoding; msg says where
	msg    string // completes a sentence whose subject is the value
}

// decodeValue percent-decodes the raw text of one simple expression. It
// accepts exactly what Expand produces, up to the case of hex digits and
// the optional encoding of unreserved characters.
func decodeValue(raw string) (string, *valueError) {
	if raw == "" {
		return "", &valueError{msg: "is empty"}
	}
	var buf []byte
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case isUnreserved(c):
			if buf != nil {
				buf = append(buf, c)
			}
		case c == '%':
			if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) {
				return "", &valueError{badPct: true, msg: fmt.Sprintf("%s at byte %d", quote(truncate(raw[i:], 3)), i)}
			}
			if buf == nil {
				buf = append(make([]byte, 0, len(raw)), raw[:i]...)
			}
			buf = append(buf, unhex(raw[i+1])<<4|unhex(raw[i+2]))
			i += 2
		default:
			r, _ := utf8.DecodeRuneInString(raw[i:])
			return "", &valueError{msg: fmt.Sprintf("contains %s at byte %d, which must be percent-encoded", strconv.QuoteRune(r), i)}
		}
	}
	if buf == nil {
		return raw, nil
	}
	if !utf8.Valid(buf) {
		return "", &valueError{msg: "decodes to invalid UTF-8"}
	}
	for _, c := range buf {
		if c == 0 {
			return "", &valueError{msg: "decodes to a string with a NUL byte (%00)"}
		}
	}
	return string(buf), nil
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// parseError rewrites an error of the library, which looks like
// "<what>: <template up to the problem><marker>", into
// `uritemplate: bad template "<t>": <what> at byte N (at "...")`.
// Marker '_' points at the byte after the prefix, '|' at the prefix's last
// character.
func parseError(s string, err error) error {
	// The messages contain ": " ("(hint: use %XX encoding)"), the prefix
	// cannot: a space is neither a literal nor a variable name character.
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		what, where := msg[:i], msg[i+2:]
		marker, prefix := where[len(where)-1], where[:len(where)-1]
		if (marker == '_' || marker == '|') && strings.HasPrefix(s, prefix) {
			off := len(prefix)
			if marker == '|' {
				_, size := utf8.DecodeLastRuneInString(prefix)
				off -= size
			}
			what = strings.ReplaceAll(what, "pct-encodeed", "percent-encoding")
			at := "at end of template"
			if off < len(s) {
				at = "at " + quote(truncate(s[off:], 12))
			}
			return fmt.Errorf("uritemplate: bad template %s: %s at byte %d (%s)", quote(s), what, off, at)
		}
	}
	return fmt.Errorf("uritemplate: bad template %s: %v", quote(s), err)
}

// quote quotes s for an error message, shortening very long strings.
func quote(s string) string {
	const max = 160
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(truncate(s, max)) + "..."
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return s[:n]
}
