package view

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// Hunk is one hunk of a file's diff as _meta.changesetd.hunks lists it.
// Lines are 1-based and counted as in a unified diff's "@@" header.
type Hunk struct {
	ID       string `json:"id"`
	OldStart int    `json:"oldStart"`
	OldLines int    `json:"oldLines"`
	NewStart int    `json:"newStart"`
	NewLines int    `json:"newLines"`
	Reviewed bool   `json:"reviewed"`
	// Author is who wrote the hunk; Authors lists them when it is
	// "mixed".
	Author  string   `json:"author,omitempty"`
	Authors []string `json:"authors,omitempty"`
}

// MetaHunks is the key of the hunk list in a file's _meta.changesetd.
const MetaHunks = "hunks"

// HunkList is a file's hunk list as _meta.changesetd.hunks holds it:
// encoded by hand (protocol.ValueAppender), where encoding/json's
// reflection over a thousand files' hunks took a tenth of a restart's
// first view.
type HunkList []Hunk

// AppendJSONValue appends l's JSON as encoding/json writes a []Hunk.
func (l HunkList) AppendJSONValue(b []byte) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, h := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = protocol.AppendJSONString(b, h.ID)
		b = append(b, `,"oldStart":`...)
		b = strconv.AppendInt(b, int64(h.OldStart), 10)
		b = append(b, `,"oldLines":`...)
		b = strconv.AppendInt(b, int64(h.OldLines), 10)
		b = append(b, `,"newStart":`...)
		b = strconv.AppendInt(b, int64(h.NewStart), 10)
		b = append(b, `,"newLines":`...)
		b = strconv.AppendInt(b, int64(h.NewLines), 10)
		b = append(b, `,"reviewed":`...)
		b = strconv.AppendBool(b, h.Reviewed)
		if h.Author != "" {
			b = append(b, `,"author":`...)
			b = protocol.AppendJSONString(b, h.Author)
		}
		if len(h.Authors) > 0 {
			b = append(b, `,"authors":[`...)
			for j, a := range h.Authors {
				if j > 0 {
					b = append(b, ',')
				}
				b = protocol.AppendJSONString(b, a)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// MarshalJSON is AppendJSONValue for encoding/json.
func (l HunkList) MarshalJSON() ([]byte, error) { return l.AppendJSONValue(nil), nil }

// ownMeta is a file's _meta.changesetd, as the daemon built it or decoded
// from JSON; nil when it has none.
func ownMeta(meta protocol.Object) protocol.Object {
	own, _ := meta["changesetd"].(protocol.Object)
	return own
}

// HunksOf reads a file's hunk list from its _meta: as a workspace put it,
// or decoded from JSON.
func HunksOf(meta protocol.Object) []Hunk {
	switch v := ownMeta(meta)[MetaHunks].(type) {
	case HunkList:
		return v
	case nil:
		return nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var out []Hunk
		if json.Unmarshal(b, &out) != nil {
			return nil
		}
		return out
	}
}

// ContentKey identifies the content pair a review applies to: both
// sides' URIs and content nonces (blob ids).
func ContentKey(f protocol.ChangesetFile) string {
	var b, a string
	if f.Edit.Before != nil {
		b = f.Edit.Before.URI + "@" + f.Edit.Before.Content.Nonce
	}
	if f.Edit.After != nil {
		a = f.Edit.After.URI + "@" + f.Edit.After.Content.Nonce
	}
	return b + "\x00" + a
}

// SameFile reports whether republishing b in place of a would change
// nothing a client shows: the content pair, the review flag, and what the
// daemon says of the file in _meta.changesetd (where its change stands in
// the index, its patch's URIs, its edit records and its authors).
func SameFile(a, b protocol.ChangesetFile) bool {
	if ContentKey(a) != ContentKey(b) || a.IsReviewed() != b.IsReviewed() {
		return false
	}
	oa, ob := ownMeta(a.Meta), ownMeta(b.Meta)
	for _, k := range []string{"index", "patchUri", "acpDiffUri"} {
		x, _ := oa[k].(string)
		y, _ := ob[k].(string)
		if x != y {
			return false
		}
	}
	for _, k := range []string{"edits", "author", "authors", MetaSinceReview} {
		if !reflect.DeepEqual(oa[k], ob[k]) {
			return false
		}
	}
	return slices.Equal(hunkAuthors(a.Meta), hunkAuthors(b.Meta))
}

func hunkAuthors(meta protocol.Object) []string {
	var out []string
	for _, h := range HunksOf(meta) {
		out = append(out, h.Author+"\x00"+strings.Join(h.Authors, ","))
	}
	return out
}

// Decorate sets f's review state from the marks: reviewed while its
// content is the one it was reviewed at, an explicit "not reviewed" kept
// while nothing changed, each hunk's mark, and reviewed as a whole when
// every hunk is marked.
func (m *Model) Decorate(f *protocol.ChangesetFile) {
	if key, ok := m.Reviews[f.ID]; ok && key == ContentKey(*f) {
		f.Reviewed = protocol.Ptr(true)
	} else if prev := m.Find(f.ID); prev != nil && prev.Reviewed != nil && !*prev.Reviewed && ContentKey(*prev) == ContentKey(*f) {
		f.Reviewed = protocol.Ptr(false)
	}
	if m.MarkHunks(f) {
		f.Reviewed = protocol.Ptr(true)
	}
	m.offerSinceReview(f)
}

// MetaSinceReview is the key, in a file's _meta.changesetd, of what a
// file reviewed and then changed offers: {"patchUri", "reviewedNonce"},
// the patch from the version marked reviewed to the current one.
const MetaSinceReview = "sinceReview"

// SinceReviewQuery is what a file's patchUri takes after it, followed by
// the reviewed version's blob id, to be read from that version instead of
// the changeset's before. The blob id makes the URI name its bytes, as
// patch URIs do: a later review of the same file gives another one.
const SinceReviewQuery = "&since="

// offerSinceReview names, in f's _meta, where the change since its
// reviewed version is read: when its flag is for a version the daemon
// kept, its content is another, and it has a patch to read.
func (m *Model) offerSinceReview(f *protocol.ChangesetFile) {
	key, ok := m.Kept[f.ID]
	if !ok || m.Reviews[f.ID] != key || key == ContentKey(*f) {
		return
	}
	uri, _ := ownMeta(f.Meta)[metaPatchURI].(string)
	if uri == "" {
		return
	}
	_, after, _ := strings.Cut(key, "\x00")
	if after == "" || f.Edit.After == nil {
		return // the reviewed version, or the current one, has no file
	}
	nonce := after[strings.LastIndexByte(after, '@')+1:]
	meta := make(protocol.Object, len(f.Meta))
	for k, v := range f.Meta {
		meta[k] = v
	}
	own := protocol.Object{}
	for k, v := range ownMeta(f.Meta) {
		own[k] = v
	}
	own[MetaSinceReview] = protocol.Object{"patchUri": uri + SinceReviewQuery + nonce, "reviewedNonce": nonce}
	meta["changesetd"] = own
	f.Meta = meta
}

// metaPatchURI is the key of a file's patch URI in _meta.changesetd.
const metaPatchURI = "patchUri"

// MarkHunks sets the reviewed marks of f's hunks from the model's marks,
// in a _meta of f's own, and reports whether f has hunks and all are
// marked.
func (m *Model) MarkHunks(f *protocol.ChangesetFile) bool {
	hs := HunksOf(f.Meta)
	if len(hs) == 0 {
		return false
	}
	marked := m.HunkReviews[f.ID]
	if len(marked) == 0 && !slices.ContainsFunc(hs, func(h Hunk) bool { return h.Reviewed }) {
		return false // as the workspace listed them: none marked
	}
	out := make([]Hunk, len(hs))
	all := true
	for i, h := range hs {
		h.Reviewed = slices.Contains(marked, h.ID)
		all = all && h.Reviewed
		out[i] = h
	}
	meta := make(protocol.Object, len(f.Meta))
	for k, v := range f.Meta {
		meta[k] = v
	}
	own := protocol.Object{}
	for k, v := range ownMeta(f.Meta) {
		own[k] = v
	}
	own[MetaHunks] = HunkList(out)
	meta["changesetd"] = own
	f.Meta = meta
	return all
}

// Reviewed returns the marks a filesReviewChanged of ids leads to: each
// file bound to its content as published, or its mark cleared. The model
// is not changed; the caller stores the result and then sets Reviews.
func (m *Model) Reviewed(ids []string, reviewed bool) map[string]string {
	next := make(map[string]string, len(m.Reviews)+len(ids))
	for k, v := range m.Reviews {
		next[k] = v
	}
	for _, id := range ids {
		if !reviewed {
			delete(next, id)
		} else if f := m.Find(id); f != nil {
			next[id] = ContentKey(*f)
		}
	}
	return next
}
