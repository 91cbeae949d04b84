package store

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// An undo record keeps the index entries a revert replaced, and a record
// written before it kept them still loads, with none.
func TestUndoRecordKeepsTheIndexAndOldRecordsLoad(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u := Undo{ID: "2", Changeset: "c", CreatedAt: time.Unix(1, 0).UTC(),
		Before: []UndoFile{{Path: "f.txt", Exists: true, Content: []byte("W\n"), Mode: 0o100644, Index: &UndoIndex{Exists: true, OID: "abc", Mode: 0o100644, Content: []byte("S\n")}}},
		After:  []UndoFile{{Path: "f.txt", Exists: true, Content: []byte("H\n"), Mode: 0o100644, Index: &UndoIndex{Exists: true, OID: "def", Mode: 0o100644}}}}
	if err := db.PutUndo("s", u); err != nil {
		t.Fatal(err)
	}
	old := `{"id":"1","changeset":"c","workspace":0,"createdAt":"1970-01-01T00:00:01Z","before":[{"path":"g.txt","exists":true,"content":"Vw==","mode":33188}],"after":[{"path":"g.txt","exists":false}]}`
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUndos).Bucket([]byte("s"))
		return b.Put([]byte("1"), []byte(old))
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Undos("s")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d records, want 2", len(got))
	}
	if got[0].Before[0].Index != nil || string(got[0].Before[0].Content) != "W" {
		t.Errorf("the old record loads as %+v", got[0].Before[0])
	}
	a, _ := json.Marshal(got[1])
	b, _ := json.Marshal(u)
	if string(a) != string(b) {
		t.Errorf("the record with its index entries reads back as\n%s\nwant\n%s", a, b)
	}
}
