package session

import (
	"reflect"

	"github.com/changesetd/changesetd/protocol"
)

// stateEncoder encodes a changeset's state for its snapshots, byte for
// byte as protocol.ChangesetState.MarshalJSON does, taking each file whose
// value is unchanged since the previous encoding from that encoding's
// bytes. A large changeset changes a file or a few at a time, and every
// encoding of its tens of thousands of files through encoding/json (maps
// of _meta sorted key by key) cost tens of milliseconds of CPU and as
// much garbage: the snapshot of each subscriber, and of each catch-up of
// a slow reader, that came after a change.
//
// It keeps the last encoding, which the channel hands out as its
// snapshot while the state is unchanged (csChannel.encoded), and where
// each file lies in it.
type stateEncoder struct {
	prev protocol.Encoded
	// spans are the files of prev, in their order there.
	spans []fileSpan
	// byID indexes spans by file id, made only when a file is not at
	// the place it had (a file added or removed before it): most
	// encodings find every file where it was, with no lookup.
	byID map[string]int
	// next is the spans slice before the last, refilled by the next
	// encoding rather than a slice of tens of thousands made for each.
	next []fileSpan
}

// fileSpan is where a file's encoding lies in the previous encoding, and
// the value it was made from.
type fileSpan struct {
	start, end int
	key        fileKey
	// meta is the file's _meta: kept so that its address, part of key,
	// cannot be taken by another map while the span is held.
	meta protocol.Object
}

// fileKey is a file's value as far as its encoding goes: its fields by
// value, and its _meta by identity (published _meta is never changed in
// place: protocol.ChangesetState.Meta, ChangesetFile.Clone).
type fileKey struct {
	id             string
	before, after  sideKey
	diff           bool
	added, removed int
	hasAdd, hasRem bool
	reviewed       int8 // 0 absent, 1 false, 2 true
	meta           uintptr
}

type sideKey struct {
	present                       bool
	uri, contentURI, ctype, nonce string
	size                          int64
	hasSize                       bool
}

func keyOf(f *protocol.ChangesetFile) fileKey {
	k := fileKey{id: f.ID, before: sideOf(f.Edit.Before), after: sideOf(f.Edit.After)}
	if d := f.Edit.Diff; d != nil {
		k.diff = true
		if d.Added != nil {
			k.added, k.hasAdd = *d.Added, true
		}
		if d.Removed != nil {
			k.removed, k.hasRem = *d.Removed, true
		}
	}
	if f.Reviewed != nil {
		k.reviewed = 1
		if *f.Reviewed {
			k.reviewed = 2
		}
	}
	if f.Meta != nil {
		k.meta = uintptr(reflect.ValueOf(f.Meta).UnsafePointer())
	}
	return k
}

func sideOf(s *protocol.FileEditSide) sideKey {
	if s == nil {
		return sideKey{}
	}
	k := sideKey{present: true, uri: s.URI, contentURI: s.Content.URI, ctype: s.Content.ContentType, nonce: s.Content.Nonce}
	if s.Content.SizeHint != nil {
		k.size, k.hasSize = *s.Content.SizeHint, true
	}
	return k
}

// encode returns st's encoding. What it returns is kept, and must not be
// changed by the caller; it is never changed here either (the next
// encoding is a new buffer), so it can be written out in pieces while
// later encodings are made.
func (e *stateEncoder) encode(st *protocol.ChangesetState) (protocol.Encoded, error) {
	spans := e.next[:0]
	b, err := st.AppendJSON(make([]byte, 0, len(e.prev)+256), func(b []byte, i int) ([]byte, error) {
		f := &st.Files[i]
		k := keyOf(f)
		start := len(b)
		if old := e.find(i, f.ID); old != nil && old.key == k {
			b = append(b, e.prev[old.start:old.end]...)
		} else {
			var err error
			if b, err = protocol.AppendFileJSON(b, f); err != nil {
				return nil, err
			}
		}
		spans = append(spans, fileSpan{start: start, end: len(b), key: k, meta: f.Meta})
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	clear(e.spans) // what they keep alive is let go
	e.prev, e.spans, e.next, e.byID = b, spans, e.spans, nil
	return b, nil
}

// find returns the span of the file id in the previous encoding, looked
// for first at the place i it has now.
func (e *stateEncoder) find(i int, id string) *fileSpan {
	if i < len(e.spans) && e.spans[i].key.id == id {
		return &e.spans[i]
	}
	if e.byID == nil {
		e.byID = make(map[string]int, len(e.spans))
		for j := range e.spans {
			e.byID[e.spans[j].key.id] = j
		}
	}
	if j, ok := e.byID[id]; ok {
		return &e.spans[j]
	}
	return nil
}
