package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// EncodeCatchUp encodes, from a changeset state st already encoded, the
// "action" notifications that bring any earlier state of channel to it:
// contentChanged with every file (and the state's error, for a legacy
// client only, as AdaptEnvelope has it), operationsChanged when the state
// has no operations (contentChanged without operations keeps the
// client's), then the status. Each takes its serverSeq from nextSeq.
//
// The contentChanged message comes as pieces to be written one after
// another (first): the file list among them is a part of st itself,
// neither decoded nor encoded again nor copied, so catching a slow reader
// of a changeset of tens of thousands of files up costs a scan of its
// bytes. The other messages come whole (rest). Together they equal, byte
// for byte, EncodeActionNotification of those actions built from the
// decoded state. st must not change while the pieces are in use.
func EncodeCatchUp(channel string, st Encoded, legacy bool, nextSeq func() int64) (first, rest [][]byte, err error) {
	m, err := topMembers(st)
	if err != nil {
		return nil, nil, err
	}
	files := m["files"]
	if files == nil {
		return nil, nil, errors.New("protocol: encoded changeset state has no files")
	}
	var status string
	if err := json.Unmarshal(m["status"], &status); err != nil {
		return nil, nil, errors.New("protocol: encoded changeset state has no status")
	}
	var stErr *ErrorInfo
	if raw := m["error"]; raw != nil {
		if err := json.Unmarshal(raw, &stErr); err != nil {
			return nil, nil, err
		}
	}
	channelJSON, err := json.Marshal(channel)
	if err != nil {
		return nil, nil, err
	}
	typ, err := json.Marshal(ChangesetContentChanged{}.ActionType())
	if err != nil {
		return nil, nil, err
	}
	ops := m["operations"]
	head := make([]byte, 0, len(channelJSON)+128)
	head = append(head, `{"jsonrpc":"`+JSONRPCVersion+`","method":"`+NotifyAction+`","params":{"channel":`...)
	head = append(head, channelJSON...)
	head = append(head, `,"action":{"type":`...)
	head = append(head, typ...)
	head = append(head, `,"files":`...)
	b := make([]byte, 0, len(ops)+len(m["error"])+64)
	if ops != nil {
		b = append(b, `,"operations":`...)
		b = append(b, ops...)
	}
	if legacy && stErr != nil {
		b = append(b, `,"error":`...)
		b = append(b, m["error"]...)
	}
	b = append(b, `},"serverSeq":`...)
	b = strconv.AppendInt(b, nextSeq(), 10)
	first = [][]byte{head, files, append(b, "}}"...)}

	var acts []Action
	if ops == nil {
		acts = append(acts, ChangesetOperationsChanged{})
	}
	acts = append(acts, ChangesetStatusChanged{Status: status, Error: stErr})
	for _, a := range acts {
		env := ActionEnvelope{Channel: channel, Action: StateAction{Action: a}, ServerSeq: nextSeq()}
		f, err := EncodeActionNotification(AdaptEnvelope(legacy, env))
		if err != nil {
			return nil, nil, err
		}
		rest = append(rest, f)
	}
	return first, rest, nil
}

// topMembers returns the members of the JSON object b by name, each value
// the bytes it has in b, without decoding any: b is this program's own
// encoding, megabytes for a large changeset, of which only the small
// members are decoded afterwards. It fails on b that is not an object.
func topMembers(b []byte) (map[string][]byte, error) {
	bad := errors.New("protocol: encoded state is not a JSON object")
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, bad
	}
	out := map[string][]byte{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return out, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, bad
		}
		end := stringEnd(b, i)
		if end < 0 {
			return nil, bad
		}
		var key string
		if err := json.Unmarshal(b[i:end], &key); err != nil {
			return nil, bad
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, bad
		}
		i = skipSpace(b, i+1)
		vend := valueEnd(b, i)
		if vend < 0 {
			return nil, bad
		}
		out[key] = b[i:vend]
		i = skipSpace(b, vend)
		if i >= len(b) {
			return nil, bad
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			if skipSpace(b, i+1) != len(b) {
				return nil, bad
			}
			return out, nil
		default:
			return nil, bad
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string that starts at b[i] (a
// quote), or -1 when it does not end. It jumps from quote to quote: most
// of a file list's bytes are in strings.
func stringEnd(b []byte, i int) int {
	for k := i + 1; k < len(b); {
		q := bytes.IndexByte(b[k:], '"')
		if q < 0 {
			return -1
		}
		k += q
		// The quote ends the string unless an odd number of backslashes
		// escapes it.
		n := 0
		for j := k - 1; j > i && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return k + 1
		}
		k++
	}
	return -1
}

// valueEnd returns the index after the value that starts at b[i], or -1
// when it does not end. Only its extent is found: the bytes come from
// encoding/json and are taken as valid.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for k := i; k < len(b); k++ {
			switch b[k] {
			case '"':
				e := stringEnd(b, k)
				if e < 0 {
					return -1
				}
				k = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return k + 1
				}
			}
		}
		return -1
	default:
		k := i
		for k < len(b) && b[k] != ',' && b[k] != '}' && b[k] != ']' && b[k] != ' ' && b[k] != '\n' && b[k] != '\t' && b[k] != '\r' {
			k++
		}
		if k == i {
			return -1
		}
		return k
	}
}
