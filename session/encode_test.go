package session

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestStateEncoderEqualsMarshalJSON: through a series of changes of the
// kinds a changeset goes through (files changed, added, removed and
// moved, review marks, operations, status, error and _meta), every
// encoding reusing the previous one's bytes equals MarshalJSON's.
func TestStateEncoderEqualsMarshalJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 0
	newFile := func() protocol.ChangesetFile {
		n++
		id := fmt.Sprintf("file:///r/dir<%d>/f&%d.go", n%7, n)
		added, removed := rng.IntN(50), rng.IntN(50)
		size := int64(rng.IntN(1 << 20))
		f := protocol.ChangesetFile{ID: id, Edit: protocol.FileEdit{
			After: &protocol.FileEditSide{URI: id, Content: protocol.ContentRef{URI: "changeset-content:/" + id, Nonce: fmt.Sprint(rng.Uint64()), SizeHint: &size}},
			Diff:  &protocol.FileEditDiffStats{Added: &added, Removed: &removed},
		}}
		if rng.IntN(2) == 0 {
			f.Edit.Before = &protocol.FileEditSide{URI: id, Content: protocol.ContentRef{URI: "git-blob:/" + id, ContentType: "text/plain"}}
		}
		if rng.IntN(3) > 0 {
			f.Meta = protocol.Object{"jetbrains": map[string]any{"air": map[string]any{"diffStats": map[string]any{"added": added, "z": "\u2028</script>"}}}, "changesetd": protocol.Object{"n": n}}
		}
		return f
	}
	st := protocol.ChangesetState{Status: protocol.StatusReady}
	for range 200 {
		st.Files = append(st.Files, newFile())
	}
	var e stateEncoder
	for round := range 300 {
		files := append([]protocol.ChangesetFile(nil), st.Files...)
		switch rng.IntN(9) {
		case 0: // a file changed: a new value, new _meta
			i := rng.IntN(len(files))
			nf := newFile()
			nf.ID = files[i].ID
			files[i] = nf
		case 1: // review marks
			for range 20 {
				i := rng.IntN(len(files))
				files[i].Reviewed = protocol.Ptr(rng.IntN(2) == 0)
			}
		case 2: // added and removed
			files = append(files, newFile())
			i := rng.IntN(len(files))
			files = append(files[:i], files[i+1:]...)
		case 3: // moved
			rng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
		case 4:
			st.Operations = []protocol.ChangesetOperation{{ID: "revert", Label: "Revert <all>", Scopes: []string{"changeset"}, Status: "idle"}}
			if rng.IntN(3) == 0 {
				st.Operations = nil
			}
		case 5:
			st.Status, st.Error = protocol.StatusError, &protocol.ErrorInfo{ErrorType: "scan", Message: `"x" & y`}
		case 6:
			st.Status, st.Error = protocol.StatusReady, nil
			st.Meta = protocol.Object{"view": map[string]any{"head": rng.Uint64()}}
		case 7: // the same size, other counts: an edit in place of the pointers' targets would be missed
			i := rng.IntN(len(files))
			d := *files[i].Edit.Diff
			a := 7 + round
			d.Added = &a
			files[i].Edit.Diff = &d
		case 8: // nothing changed
		}
		st.Files = files
		got, err := e.encode(&st)
		if err != nil {
			t.Fatal(err)
		}
		want, err := st.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: encodings differ\n got %.300s\nwant %.300s", round, got, want)
		}
	}
	// The empty list, as MarshalJSON writes it.
	st.Files = nil
	got, _ := e.encode(&st)
	want, _ := st.MarshalJSON()
	if !bytes.Equal(got, want) {
		t.Fatalf("no files: %s, want %s", got, want)
	}
}

// TestFileKeyCoversEveryField: keyOf names every field a file's encoding
// has; a field added to these types must be added to it too, or a file
// that changed only there would be sent as it was.
func TestFileKeyCoversEveryField(t *testing.T) {
	for typ, want := range map[reflect.Type]int{
		reflect.TypeFor[protocol.ChangesetFile]():     4, // ID, Edit, Reviewed, Meta
		reflect.TypeFor[protocol.FileEdit]():          3, // Before, After, Diff
		reflect.TypeFor[protocol.FileEditSide]():      2, // URI, Content
		reflect.TypeFor[protocol.ContentRef]():        4, // URI, SizeHint, ContentType, Nonce
		reflect.TypeFor[protocol.FileEditDiffStats](): 2, // Added, Removed
	} {
		if typ.NumField() != want {
			t.Errorf("%s has %d fields, keyOf knows %d: extend fileKey", typ, typ.NumField(), want)
		}
	}
}

// BenchmarkStateEncoder: an 11,000-file changeset encoded again after
// one of its files changed, as a snapshot after an edit is; and the
// same through MarshalJSON.
func BenchmarkStateEncoder(b *testing.B) {
	st := protocol.ChangesetState{Status: protocol.StatusReady}
	for i := range 11000 {
		n := i % 40
		id := fmt.Sprintf("file:///home/dev/repo/pkg%d/dir/file%d.go", i/100, i)
		st.Files = append(st.Files, protocol.ChangesetFile{ID: id, Edit: protocol.FileEdit{
			Before: &protocol.FileEditSide{URI: id, Content: protocol.ContentRef{URI: "git-blob:/" + id}},
			After:  &protocol.FileEditSide{URI: id, Content: protocol.ContentRef{URI: "changeset-content:/" + id, Nonce: fmt.Sprint(i * 7919)}},
			Diff:   &protocol.FileEditDiffStats{Added: &n, Removed: &n},
		}, Meta: protocol.Object{"jetbrains": protocol.Object{"air": protocol.Object{"diffStats": protocol.Object{"added": n, "removed": n}}}, "changesetd": protocol.Object{"patch": "changeset-patch:/" + id}}})
	}
	change := func(i int) {
		f := st.Files[i%len(st.Files)]
		f.Meta = protocol.Object{"changesetd": protocol.Object{"v": i}}
		st.Files[i%len(st.Files)] = f
	}
	b.Run("reused", func(b *testing.B) {
		var e stateEncoder
		e.encode(&st)
		i := 0
		for b.Loop() {
			i++
			change(i)
			if _, err := e.encode(&st); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MarshalJSON", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			change(i)
			if _, err := st.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
