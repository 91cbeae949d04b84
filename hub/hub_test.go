package hub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

const csURI = "ahp-changeset:/s/changeset/uncommitted"

func fileSet(id string, pad int) protocol.Action {
	return protocol.ChangesetFileSet{File: protocol.ChangesetFile{ID: id, Meta: protocol.Object{"pad": strings.Repeat("x", pad)}}}
}

func TestReplayRing(t *testing.T) {
	h := New(0, 3, 0)
	c := h.NewChannel(csURI)
	for range 5 {
		c.Publish(protocol.ChangesetStatusChanged{Status: protocol.StatusReady}, nil)
	}
	// The ring holds 3, 4, 5; 1 and 2 were evicted.
	if _, ok := c.replay(1); ok {
		t.Error("replay after 1 must fail: 2 was evicted")
	}
	got, ok := c.replay(2)
	if !ok || len(got) != 3 || got[0].ServerSeq != 3 {
		t.Errorf("replay after 2 = %v %v, want 3,4,5", got, ok)
	}
	got, ok = c.replay(3)
	if !ok || len(got) != 2 || got[0].ServerSeq != 4 {
		t.Errorf("replay after 3 = %v %v, want 4,5", got, ok)
	}
	if got, ok := c.replay(5); !ok || len(got) != 0 {
		t.Errorf("replay after the last = %v %v, want empty", got, ok)
	}
}

// replay is replayLocked for tests.
func (c *Channel) replay(lastSeen int64) ([]protocol.ActionEnvelope, bool) {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	return c.replayLocked(lastSeen)
}

// The ring keeps what fits its byte budget, however few envelopes that
// is, and never more: a series of large file lists is not all kept.
func TestReplayRingIsBoundedInBytes(t *testing.T) {
	const budget = 64 << 10
	h := New(0, 1000, budget)
	c := h.NewChannel(csURI)
	for i := range 200 {
		c.Publish(fileSet("f"+strings.Repeat("0", i%7), 1000), nil)
		if got := c.RingBytes(); got > budget {
			t.Fatalf("after %d envelopes the ring holds %d bytes, over its %d", i+1, got, budget)
		}
	}
	got, ok := c.replay(150)
	if !ok || len(got) != 50 {
		t.Errorf("replay after 150 = %d envelopes %v, want the last 50", len(got), ok)
	}
	if _, ok := c.replay(100); ok {
		t.Error("replay after 100 succeeded; 100 envelopes of ~1 KB cannot fit 64 KiB")
	}
	// One envelope larger than the whole budget is not kept at all.
	c.Publish(fileSet("big", 2*budget), nil)
	if got := c.RingBytes(); got != 0 {
		t.Errorf("the ring holds %d bytes after an envelope larger than its budget", got)
	}
	if _, ok := c.replay(200); ok {
		t.Error("replay of an envelope larger than the budget succeeded")
	}
}

type recorder struct{ got []*Envelope }

func (r *recorder) ClientID() string   { return "r" }
func (r *recorder) Version() string    { return "" }
func (r *recorder) Send(e *Envelope)   { r.got = append(r.got, e) }
func (r *recorder) Notify(string, any) {}

// Every subscriber gets the same encoded bytes, and they are the
// envelope the protocol package encodes.
func TestEnvelopeEncodedOnceAndShared(t *testing.T) {
	h := New(41, 0, 0)
	c := h.NewChannel(csURI)
	a, b := &recorder{}, &recorder{}
	for _, r := range []*recorder{a, b} {
		c.Attach(r, -1, func() any { return nil }, func(Attachment, error) {})
	}
	c.Publish(fileSet("file:///x", 10), &protocol.ActionOrigin{ClientID: "c", ClientSeq: 7})
	c.Publish(protocol.ChangesetStatusChanged{Status: protocol.StatusRecomputing}, nil)
	if len(a.got) != 2 || len(b.got) != 2 || a.got[0] != b.got[0] {
		t.Fatalf("subscribers got %d and %d envelopes, not the same ones", len(a.got), len(b.got))
	}
	for _, legacy := range []bool{false, true} {
		for _, e := range a.got {
			want, err := protocol.EncodeActionNotification(protocol.AdaptEnvelope(legacy, e.ActionEnvelope))
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Bytes(legacy); !bytes.Equal(got, want) {
				t.Errorf("legacy=%v: encoded\n%s\nwant\n%s", legacy, got, want)
			}
			var w bytes.Buffer
			if err := e.WriteTo(&w, legacy, 7, nil); err != nil || !bytes.Equal(w.Bytes(), want) {
				t.Errorf("legacy=%v: written in pieces\n%s\nwant\n%s", legacy, w.Bytes(), want)
			}
			if !json.Valid(want) {
				t.Errorf("invalid JSON %s", want)
			}
		}
	}
	if a.got[0].ServerSeq != 42 || a.got[1].ServerSeq != 43 {
		t.Errorf("serverSeqs %d, %d; want 42, 43", a.got[0].ServerSeq, a.got[1].ServerSeq)
	}
}

type counter struct{ n, bytes int }

func (c *counter) ClientID() string   { return "n" }
func (c *counter) Version() string    { return "" }
func (c *counter) Send(e *Envelope)   { c.n++; c.bytes += e.Size() }
func (c *counter) Notify(string, any) {}

// BenchmarkBurstFanOut publishes a burst of 10,000 fileSet actions, in
// chunks of 256 as a refresh does, to 100 subscribers: the sequencer's
// own share of a burst (encoding once, numbering, the ring, queueing on
// every subscriber), without the sockets.
func BenchmarkBurstFanOut(b *testing.B) {
	files := make([]protocol.Action, 10000)
	for i := range files {
		files[i] = protocol.ChangesetFileSet{File: protocol.ChangesetFile{
			ID: fmt.Sprintf("file:///home/me/repo/mod%02d/pkg%04d/file%06d.go", i%10, i%100, i),
			Edit: protocol.FileEdit{
				Before: &protocol.FileEditSide{URI: fmt.Sprintf("file:///home/me/repo/f%06d.go", i), Content: protocol.ContentRef{URI: "ahp-session:/s/blob/" + strings.Repeat("a", 40), Nonce: strings.Repeat("a", 40)}},
				After:  &protocol.FileEditSide{URI: fmt.Sprintf("file:///home/me/repo/f%06d.go", i), Content: protocol.ContentRef{URI: fmt.Sprintf("file:///home/me/repo/f%06d.go", i), Nonce: strings.Repeat("b", 40)}},
				Diff:   &protocol.FileEditDiffStats{Added: protocol.Ptr(3), Removed: protocol.Ptr(1)},
			},
			Meta: protocol.Object{"changesetd": protocol.Object{"patchUri": "ahp-session:/s/patch/uncommitted?v=0123456789abcdef", "patchBytes": 412}},
		}}
	}
	for _, subs := range []int{1, 100} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			for b.Loop() {
				h := New(0, 0, 0)
				c := h.NewChannel(csURI)
				for range subs {
					c.Attach(&counter{}, -1, func() any { return nil }, func(Attachment, error) {})
				}
				for i := 0; i < len(files); i += 256 {
					c.PublishAll(files[i:min(i+256, len(files))])
				}
			}
		})
	}
}
