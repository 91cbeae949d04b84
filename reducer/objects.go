package reducer

import (
	"encoding/json"
	"slices"

	"github.com/changesetd/changesetd/protocol"
)

// keyOf returns the string value of key in o, or "" if it is absent or
// not a string.
func keyOf(o protocol.Object, key string) string {
	s, _ := o[key].(string)
	return s
}

// indexObject returns the index of the first object whose key equals id.
func indexObject(list []protocol.Object, key, id string) int {
	return slices.IndexFunc(list, func(o protocol.Object) bool { return keyOf(o, key) == id })
}

// upsertObject returns a copy of list in which the object with the same
// key as o is replaced by o, or o is appended.
func upsertObject(list []protocol.Object, key string, o protocol.Object) []protocol.Object {
	i := indexObject(list, key, keyOf(o, key))
	if i < 0 {
		return append(slices.Clip(list), o)
	}
	list = slices.Clone(list)
	list[i] = o
	return list
}

// mergeChat overlays a partial chat summary onto c through its JSON form,
// so fields added to ChatSummary later merge without code here. The
// resource is identity and is never overwritten; a null value clears a
// field. It reports false if the changes do not fit a ChatSummary.
func mergeChat(c protocol.ChatSummary, changes protocol.Object) (protocol.ChatSummary, bool) {
	raw, err := json.Marshal(c)
	if err != nil {
		return c, false
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return c, false
	}
	for k, v := range changes {
		switch {
		case k == "resource":
		case v == nil:
			delete(fields, k)
		default:
			fields[k] = v
		}
	}
	if raw, err = json.Marshal(fields); err != nil {
		return c, false
	}
	var merged protocol.ChatSummary
	if err := json.Unmarshal(raw, &merged); err != nil {
		return c, false
	}
	return merged, true
}
