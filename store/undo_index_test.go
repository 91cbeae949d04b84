package store

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// An undo record keeps the index entries a revert replaced, and a record
// written before it kept them still loads, with none.
func TestUndoRecordKeepsTheIndexAndOldRecordsLoad(t *testing.T) {
	db := openTemp(t)
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

// contentKeys lists the keys of a session's stored undo contents.
func contentKeys(t *testing.T, db *DB, sessionID string) []string {
	t.Helper()
	var keys []string
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		c := sessionBucket(tx, bucketUndoContent, sessionID)
		if c == nil {
			return nil
		}
		return c.ForEach(func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// A record's bytes are stored raw, once per content however many records
// and sides name them, outside the record's JSON; they go with the last
// record that names them, and with the session.
func TestUndoContentStoredOnceAndDeletedWithItsLastRecord(t *testing.T) {
	db := openTemp(t)
	big := bytes.Repeat([]byte("a line of a large file\n"), 1<<16)
	rec := func(id string, before, after []byte) Undo {
		return Undo{ID: id, Changeset: "c", CreatedAt: time.Unix(1, 0).UTC(),
			Before: []UndoFile{{Path: "f.txt", Exists: true, Content: before, Mode: 0o100644,
				Index: &UndoIndex{Exists: true, OID: "abc", Mode: 0o100644, Content: before}}},
			After: []UndoFile{{Path: "f.txt", Exists: true, Content: after, Mode: 0o100644}}}
	}
	one, two := rec("1", big, []byte("H\n")), rec("2", big, []byte("I\n"))
	for _, u := range []Undo{one, one, two} { // one is written pending, then settled
		if err := db.PutUndo("s", u); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		v := sessionBucket(tx, bucketUndos, "s").Get([]byte("1"))
		if len(v) > 2000 {
			t.Errorf("the record is %d bytes: its content is inline", len(v))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if k := contentKeys(t, db, "s"); len(k) != 3 {
		t.Fatalf("%d contents stored, want 3 (big, H, I): %v", len(k), k)
	}
	got, err := db.Undos("s")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []Undo{one, two} {
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(want)
		if !bytes.Equal(a, b) {
			t.Errorf("record %s reads back other than written", want.ID)
		}
	}
	if err := db.DeleteUndo("s", "1"); err != nil {
		t.Fatal(err)
	}
	if k := contentKeys(t, db, "s"); len(k) != 2 {
		t.Fatalf("after deleting record 1: %d contents, want 2 (big still named by 2, I)", len(k))
	}
	if got, err := db.Undos("s"); err != nil || len(got) != 1 || !bytes.Equal(got[0].Before[0].Content, big) {
		t.Fatalf("record 2 after deleting 1: %v", err)
	}
	if err := db.PutUndo("t", rec("9", big, nil)); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteSession("s", ""); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Undos("s"); err != nil || len(got) != 0 || len(contentKeys(t, db, "s")) != 0 {
		t.Fatalf("a deleted session keeps %d undo records and %d contents (%v)", len(got), len(contentKeys(t, db, "s")), err)
	}
	if got, err := db.Undos("t"); err != nil || len(got) != 1 || !bytes.Equal(got[0].Before[0].Content, big) {
		t.Fatalf("another session's record after deleting s: %v", err)
	}
}

// A pending record settled with other bytes than it named leaves none of
// the old ones behind; a record that does not decode keeps every content
// (it may name any).
func TestUndoContentOfARewrittenRecordAndAnUndecodedOne(t *testing.T) {
	db := openTemp(t)
	rec := func(id, before, after string) Undo {
		return Undo{ID: id, Changeset: "c", CreatedAt: time.Unix(1, 0).UTC(),
			Before: []UndoFile{{Path: "f.txt", Exists: true, Content: []byte(before)}},
			After:  []UndoFile{{Path: "f.txt", Exists: true, Content: []byte(after)}}}
	}
	if err := db.PutUndo("s", rec("1", "W\n", "about to write\n")); err != nil {
		t.Fatal(err)
	}
	if err := db.PutUndo("s", rec("1", "W\n", "written\n")); err != nil {
		t.Fatal(err)
	}
	if k := contentKeys(t, db, "s"); len(k) != 2 {
		t.Fatalf("after the record was settled: %d contents, want 2 (W, written)", len(k))
	}
	if err := db.PutUndo("s", rec("2", "X\n", "Y\n")); err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return sessionBucket(tx, bucketUndos, "s").Put([]byte("3"), []byte("{not json"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteUndo("s", "2"); err != nil {
		t.Fatal(err)
	}
	if k := contentKeys(t, db, "s"); len(k) != 4 {
		t.Fatalf("with a record that does not decode: %d contents, want all 4 kept", len(k))
	}
}
