package changeset

import (
	"math"
	"strconv"

	"github.com/changesetd/changesetd/protocol"
)

// AIR diff statistics contract, version 1 (reference 000): the payload
// lives at _meta.jetbrains.air.diffStats, next to _meta.jetbrains.air.version.
const (
	AIRVersion          = 1
	AIRDiffStatsVersion = 1
)

// Counts returns the added and removed line counts to publish for r, and
// false when they must be omitted: binary, too large, or a degraded diff.
//
// A modification (including a rename, a mode change and a type change)
// counts the '+' and '-' lines of r.Hunks. A creation or deletion counts
// the content with AIRLineCount, where a lone CR also ends a line; git's
// numstat in r.Added/r.Removed does not, so the two differ for such
// content, as the contract prescribes.
func (r Result) Counts() (added, removed int, ok bool) {
	if !r.Precise || r.Binary || r.TooLarge {
		return 0, 0, false
	}
	switch r.ChangeType() {
	case Created:
		added = AIRLineCount([]byte(r.New.text()))
	case Deleted:
		removed = AIRLineCount([]byte(r.Old.text()))
	default:
		added, removed = r.Added, r.Removed
	}
	if added > math.MaxInt32 || removed > math.MaxInt32 {
		return 0, 0, false
	}
	return added, removed, true
}

// DiffStats is the AHP FileEdit.diff for r, or nil when the counts must
// be omitted (see Counts).
func (r Result) DiffStats() *protocol.FileEditDiffStats {
	a, d, ok := r.Counts()
	if !ok {
		return nil
	}
	return &protocol.FileEditDiffStats{Added: protocol.Ptr(a), Removed: protocol.Ptr(d)}
}

// AIRMeta is the AIR extension object for r, rooted at _meta:
//
//	{"jetbrains": {"air": {"version": 1, "diffStats": {"version": 1, "added": A, "removed": R}}}}
//
// Its "jetbrains" value is an AIR, which encodes as that object. It is nil
// when the counts must be omitted. Use WithAIRMeta to merge it into an
// existing _meta without losing other keys.
func (r Result) AIRMeta() protocol.Object {
	a, d, ok := r.Counts()
	if !ok {
		return nil
	}
	return protocol.Object{"jetbrains": AIR{Added: int32(a), Removed: int32(d)}}
}

// AIR is a file's _meta.jetbrains when it holds only the AIR statistics:
// their two counts, where four maps would hold the same for every file of
// every view, and the collector would trace them all. It encodes as
//
//	{"air":{"diffStats":{"added":A,"removed":R,"version":1},"version":1}}
type AIR struct {
	Added, Removed int32
}

// AppendJSONValue appends a's JSON (protocol.ValueAppender).
func (a AIR) AppendJSONValue(b []byte) []byte {
	b = append(b, `{"air":{"diffStats":{"added":`...)
	b = strconv.AppendInt(b, int64(a.Added), 10)
	b = append(b, `,"removed":`...)
	b = strconv.AppendInt(b, int64(a.Removed), 10)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, AIRDiffStatsVersion, 10)
	b = append(b, `},"version":`...)
	b = strconv.AppendInt(b, AIRVersion, 10)
	return append(b, "}}"...)
}

// MarshalJSON is AppendJSONValue for encoding/json.
func (a AIR) MarshalJSON() ([]byte, error) { return a.AppendJSONValue(nil), nil }

// WithAIRMeta returns a copy of meta with jetbrains.air.diffStats set for
// r, keeping every other key. When r's counts must be omitted, any stale
// diffStats is removed instead (a new revision carries its own statistics
// or none). meta is not modified; nil meta is allowed.
func WithAIRMeta(meta protocol.Object, r Result) protocol.Object {
	out := copyObject(meta)
	a, d, ok := r.Counts()
	switch jb := out["jetbrains"].(type) {
	case nil, AIR:
		// Nothing of its own beside the statistics.
		if ok {
			out["jetbrains"] = AIR{Added: int32(a), Removed: int32(d)}
		} else {
			delete(out, "jetbrains")
		}
	default:
		jbo := copyObject(asObject(jb))
		air := copyObject(asObject(jbo["air"]))
		if ok {
			air["version"] = AIRVersion
			air["diffStats"] = protocol.Object{"version": AIRDiffStatsVersion, "added": a, "removed": d}
		} else {
			delete(air, "diffStats")
		}
		if len(air) > 0 {
			jbo["air"] = air
		} else {
			delete(jbo, "air")
		}
		if len(jbo) > 0 {
			out["jetbrains"] = jbo
		} else {
			delete(out, "jetbrains")
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func asObject(v any) protocol.Object {
	o, _ := v.(protocol.Object)
	return o
}

func copyObject(o protocol.Object) protocol.Object {
	c := make(protocol.Object, len(o)+1)
	for k, v := range o {
		c[k] = v
	}
	return c
}
