package session

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/store"
)

// writeCounter is a store.DB that counts the bytes of edit records
// written to it, in either form.
type writeCounter struct {
	*store.DB
	mu      sync.Mutex
	written int
}

func (w *writeCounter) count(n int) {
	w.mu.Lock()
	w.written += n
	w.mu.Unlock()
}

func (w *writeCounter) take() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.written
	w.written = 0
	return n
}

func (w *writeCounter) PutEdits(id string, records []byte) error {
	w.count(len(records))
	return w.DB.PutEdits(id, records)
}

func (w *writeCounter) PutFileEdits(id string, files map[string][]byte) error {
	for _, v := range files {
		w.count(len(v))
	}
	return w.DB.PutFileEdits(id, files)
}

func editEvents(t *testing.T, r *rig, paths ...string) (EditEventsResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	evs := make([]json.RawMessage, len(paths))
	for i, p := range paths {
		evs[i], _ = json.Marshal(map[string]any{"type": "edit", "path": p, "mode": "replace", "checksum_after": "blake3:" + strings.Repeat("0", 64)})
	}
	return r.m.EditEvents(ctx, r.uri, evs)
}

// TestEditEventsAreStoredIncrementally: a request writes the records of
// the files it touched, not every record of the session, and what is
// stored is the session's records after a restart.
func TestEditEventsAreStoredIncrementally(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wc := &writeCounter{DB: db}
	r := newRig(t, Options{Store: wc}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "one\n"})
	var many []string
	for i := range 500 {
		many = append(many, fmt.Sprintf("f%03d.txt", i))
	}
	if res, err := editEvents(t, r, many...); err != nil || res.Applied != len(many) {
		t.Fatalf("500 events: %+v %v", res, err)
	}
	first := wc.take()
	if res, err := editEvents(t, r, "f007.txt"); err != nil || res.Applied != 1 {
		t.Fatalf("one event: %+v %v", res, err)
	}
	if one := wc.take(); one*50 > first {
		t.Errorf("one event wrote %d bytes of records, the 500 before %d: the session's records are rewritten whole", one, first)
	}
	sets, err := db.FileEdits(r.id)
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{m: r.m, id: r.id, dirs: []string{r.ws.root}, log: r.m.log}
	s.loadEdits()
	if len(s.edits) != 500 || s.edits[editKey{0, "f007.txt"}] == nil || s.edits[editKey{0, "f007.txt"}].count != 2 {
		t.Errorf("restored %d files' records from %d stored sets; f007.txt %+v", len(s.edits), len(sets), s.edits[editKey{0, "f007.txt"}])
	}
}

// TestEditEventsAreCapped: a request of more events than one may carry,
// or with a recorded field too long, is refused whole with InvalidParams
// saying which limit it passed.
func TestEditEventsAreCapped(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "one\n"})
	paths := make([]string, maxEditEvents+1)
	for i := range paths {
		paths[i] = fmt.Sprintf("f%04d.txt", i)
	}
	_, err := editEvents(t, r, paths...)
	if protocol.CodeOf(err) != protocol.CodeInvalidParams || !strings.Contains(err.Error(), "1001 events in one request") {
		t.Errorf("%d events: %v, want InvalidParams naming the count", len(paths), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	long, _ := json.Marshal(map[string]any{"path": "a.txt", "mode": strings.Repeat("m", maxEditField+1)})
	_, err = r.m.EditEvents(ctx, r.uri, []json.RawMessage{[]byte(`{"path":"a.txt"}`), long})
	if protocol.CodeOf(err) != protocol.CodeInvalidParams || !strings.Contains(err.Error(), "event 1: field mode is 4097 bytes") {
		t.Errorf("a long field: %v, want InvalidParams naming the event and field", err)
	}
	if res, err := editEvents(t, r, paths[:maxEditEvents]...); err != nil || res.Applied != maxEditEvents {
		t.Errorf("%d events: %+v %v", maxEditEvents, res, err)
	}
}
