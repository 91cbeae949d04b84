package protocol

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// The changeset file list is the bulk of what the daemon encodes: a
// thousand files are a megabyte of JSON, written on every full
// computation and for every subscriber's snapshot. encoding/json spends
// most of that on reflection over each file's _meta maps. The functions
// here write the same bytes encoding/json writes (HTML-safe escaping,
// sorted map keys, the omitempty and omitzero rules of the types'
// tags) for the shapes the file list holds, and hand anything else to
// encoding/json itself, so a value they do not know is still encoded
// exactly as before. TestFastJSONMatchesEncodingJSON holds them to it.

// encodedAppender is a value that appends its own encoding/json
// encoding to b.
type encodedAppender interface {
	appendEncoded(b []byte) ([]byte, error)
}

// ValueAppender is a value of a file's _meta kept in a compact form of
// its own rather than as maps (a file's AIR statistics, say): it appends
// its JSON, the bytes its MarshalJSON returns, which must be what
// encoding/json writes for it (compact, keys sorted).
type ValueAppender interface {
	AppendJSONValue(b []byte) []byte
}

// fileBytes is the mean encoded size of a file in the latest list of
// more than a few files encoded: the next list's buffer is sized by it,
// so that a megabyte of files is not copied again and again as its
// buffer grows. It starts at about what a modified file with its patch
// and ACP URIs and hunks takes (1.5 KB in the scale bench).
var fileBytes atomic.Int64

func init() { fileBytes.Store(1280) }

// filesCap is a buffer capacity for n encoded files and extra bytes.
func filesCap(n, extra int) int {
	return n*int(fileBytes.Load())*9/8 + extra
}

// appendFiles appends files as a JSON array, [] when empty or nil.
func appendFiles(b []byte, files []ChangesetFile) ([]byte, error) {
	start := len(b)
	if free := cap(b) - len(b); free < filesCap(len(files), 2) {
		b = slices.Grow(b, filesCap(len(files), 2))
	}
	b, err := appendEach(b, len(files), func(b []byte, i int) ([]byte, error) { return files[i].appendEncoded(b) })
	if err != nil {
		return nil, err
	}
	if len(files) >= 8 {
		fileBytes.Store(int64((len(b) - start) / len(files)))
	}
	return b, nil
}

// appendEach appends a JSON array of n elements, the i-th written by
// elem.
func appendEach(b []byte, n int, elem func(b []byte, i int) ([]byte, error)) ([]byte, error) {
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = elem(b, i); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func (f *ChangesetFile) appendEncoded(b []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, f.ID)
	b = append(b, `,"edit":`...)
	b = f.Edit.appendEncoded(b)
	if f.Reviewed != nil {
		b = append(b, `,"reviewed":`...)
		b = strconv.AppendBool(b, *f.Reviewed)
	}
	if f.Meta != nil {
		b = append(b, `,"_meta":`...)
		var err error
		if b, err = appendJSONValue(b, f.Meta); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func (e *FileEdit) appendEncoded(b []byte) []byte {
	b = append(b, '{')
	sep := false
	if e.Before != nil {
		b = append(b, `"before":`...)
		b = e.Before.appendEncoded(b)
		sep = true
	}
	if e.After != nil {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"after":`...)
		b = e.After.appendEncoded(b)
		sep = true
	}
	if d := e.Diff; d != nil {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"diff":{`...)
		if d.Added != nil {
			b = append(b, `"added":`...)
			b = strconv.AppendInt(b, int64(*d.Added), 10)
		}
		if d.Removed != nil {
			if d.Added != nil {
				b = append(b, ',')
			}
			b = append(b, `"removed":`...)
			b = strconv.AppendInt(b, int64(*d.Removed), 10)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

func (s *FileEditSide) appendEncoded(b []byte) []byte {
	b = append(b, `{"uri":`...)
	b = appendJSONString(b, s.URI)
	b = append(b, `,"content":{"uri":`...)
	c := &s.Content
	b = appendJSONString(b, c.URI)
	if c.SizeHint != nil {
		b = append(b, `,"sizeHint":`...)
		b = strconv.AppendInt(b, *c.SizeHint, 10)
	}
	if c.ContentType != "" {
		b = append(b, `,"contentType":`...)
		b = appendJSONString(b, c.ContentType)
	}
	if c.Nonce != "" {
		b = append(b, `,"nonce":`...)
		b = appendJSONString(b, c.Nonce)
	}
	return append(b, "}}"...)
}

// appendJSONValue appends v as encoding/json encodes it.
func appendJSONValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendJSONString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(b, v, 10), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendJSONObject(b, v)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendEach(b, len(v), func(b []byte, i int) ([]byte, error) { return appendJSONValue(b, v[i]) })
	case []string:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendEach(b, len(v), func(b []byte, i int) ([]byte, error) { return appendJSONString(b, v[i]), nil })
	case ValueAppender:
		return v.AppendJSONValue(b), nil
	}
	// Anything else (a float, a struct, a Marshaler) as encoding/json
	// writes it.
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// appendJSONObject appends m with its keys in encoding/json's order
// (sorted bytewise).
func appendJSONObject(b []byte, m map[string]any) ([]byte, error) {
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSONValue(b, m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// AppendJSONValue appends v as encoding/json.Marshal writes it: an
// Object's keys sorted, its strings escaped the same, byte for byte;
// without reflection for the values _meta holds (objects, arrays,
// strings, integers, booleans).
func AppendJSONValue(b []byte, v any) ([]byte, error) { return appendJSONValue(b, v) }

// AppendJSONString appends s quoted as encoding/json quotes it, for a
// ValueAppender.
func AppendJSONString(b []byte, s string) []byte { return appendJSONString(b, s) }

// appendJSONString appends s quoted as encoding/json quotes it: a
// string of printable ASCII without the characters it escapes is
// copied as it is; any other goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			out, _ := json.Marshal(s) // a string always encodes
			return append(b, out...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
