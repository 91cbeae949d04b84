package hub

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestLongListEncodedOnFirstUse: a contentChanged of many files is not
// encoded when published, only when a writer or a catch-up first needs
// it, once however many ask at once, into the bytes an eager encoding
// gives; its size, counted by the ring and the backlogs, stays what it
// was when made.
func TestLongListEncodedOnFirstUse(t *testing.T) {
	files := make([]protocol.ChangesetFile, lazyFiles)
	for i := range files {
		id := fmt.Sprintf("file:///r/d/f%d.go", i)
		files[i] = protocol.ChangesetFile{ID: id, Meta: protocol.Object{"changesetd": protocol.Object{"patchUri": "p:" + id, "pad": strings.Repeat("x", i)}}}
	}
	h := New(0, 10, 0)
	c := h.NewChannel(csURI)
	env := c.Publish(protocol.ChangesetContentChanged{Files: files}, nil)
	h.mu.Lock()
	e := c.ring[len(c.ring)-1]
	h.mu.Unlock()
	if e.frames[0].head != nil {
		t.Fatal("the list was encoded when published")
	}
	size := e.Size()
	want, err := protocol.EncodeActionNotification(env)
	if err != nil {
		t.Fatal(err)
	}
	if size < len(want)/2 || size > 2*len(want) {
		t.Errorf("estimated size %d for %d bytes", size, len(want))
	}
	var wg sync.WaitGroup
	outs := make([][]byte, 8)
	for i := range outs {
		wg.Go(func() {
			var b bytes.Buffer
			if err := e.WriteTo(&b, false, 1000, nil); err != nil {
				t.Error(err)
			}
			outs[i] = b.Bytes()
		})
	}
	wg.Wait()
	for i, b := range outs {
		if !bytes.Equal(b, want) {
			t.Fatalf("writer %d wrote %.200s…, want %.200s…", i, b, want)
		}
	}
	if e.Size() != size {
		t.Errorf("size %d after encoding, %d before", e.Size(), size)
	}

	// A short one is encoded at once, its size exact (the serverSeq, 0
	// here, counted at its longest, 20 digits).
	short := NewEnvelope(protocol.ActionEnvelope{Channel: csURI, Action: protocol.StateAction{Action: protocol.ChangesetContentChanged{Files: files[:lazyFiles-1]}}})
	if short.frames[0].head == nil || short.Size() != len(short.Bytes(false))-len("0")+20 {
		t.Errorf("a short list: encoded %v, size %d for %d bytes", short.frames[0].head != nil, short.Size(), len(short.Bytes(false)))
	}
}
