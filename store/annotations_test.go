package store

import (
	"path/filepath"
	"testing"
)

// One annotation per slot: written, rewritten and deleted one at a time,
// listed in slot order across a reopen, and gone with the session.
func TestAnnotationSlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for slot, v := range map[uint64]string{2: `{"id":"b"}`, 1: `{"id":"a"}`, 3: `{"id":"c"}`} {
		if err := db.PutAnnotation("s1", slot, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutAnnotation("s1", 2, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.PutAnnotation("s1", 3, []byte(`{"id":"c2"}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutAnnotation("s10", 1, []byte(`{"id":"other"}`)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.AnnotationSlots("s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Slot != 1 || string(got[0].Value) != `{"id":"a"}` || got[1].Slot != 3 || string(got[1].Value) != `{"id":"c2"}` {
		t.Fatalf("slots = %+v", got)
	}
	if err := db.DeleteSession("s1", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.AnnotationSlots("s1"); len(got) != 0 {
		t.Errorf("slots survived the session's delete: %+v", got)
	}
	if got, _ := db.AnnotationSlots("s10"); len(got) != 1 {
		t.Errorf("another session's slots = %+v", got)
	}
}
