package session

import (
	"context"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
)

// TestReadResourceRefusesLargeBlobUnread: a stored object over the read's
// limit is refused from its size alone; its content is never loaded.
func TestReadResourceRefusesLargeBlobUnread(t *testing.T) {
	work := strings.Repeat("a line of the working tree\n", 100)
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": work})
	c := newClient("c1")
	r.watchUncommitted(t, c, "a.txt")
	uri := r.uri + "/blob/" + changeset.BlobOID([]byte(work))
	ctx := context.Background()

	_, err := r.m.ReadResource(ctx, uri, int64(len(work)-1))
	if protocol.CodeOf(err) != protocol.CodeInvalidParams || protocol.ReasonOf(err) != protocol.ReasonTooLarge {
		t.Fatalf("read over the limit: %v; want InvalidParams, reason tooLarge", err)
	}
	r.ws.mu.Lock()
	reads := r.ws.blobReads
	r.ws.mu.Unlock()
	if reads != 0 {
		t.Errorf("the object was read %d times before it was refused", reads)
	}
	b, err := r.m.ReadResource(ctx, uri, int64(len(work)))
	if err != nil || string(b) != work {
		t.Fatalf("read within the limit: %d bytes, %v", len(b), err)
	}
}
