package store

import (
	"path/filepath"
	"testing"
)

// Edit records survive a reopen, belong to their session, and go with it.
func TestEditsRoundTripAndDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := db.Edits("s1"); err != nil || e != nil {
		t.Fatalf("edits of a fresh file: %q %v", e, err)
	}
	if err := db.PutEdits("s1", []byte(`[{"path":"a"}]`)); err != nil {
		t.Fatal(err)
	}
	db.PutEdits("s10", []byte(`[{"path":"b"}]`))
	db.Close()
	if db, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if e, _ := db.Edits("s1"); string(e) != `[{"path":"a"}]` {
		t.Fatalf("edits after reopen = %q", e)
	}
	if err := db.DeleteSession("s1", ""); err != nil {
		t.Fatal(err)
	}
	if e, _ := db.Edits("s1"); e != nil {
		t.Errorf("edits survived delete: %q", e)
	}
	if e, _ := db.Edits("s10"); e == nil {
		t.Error("another session's edits were deleted")
	}
	if err := db.PutEdits("s10", nil); err != nil {
		t.Fatal(err)
	}
	if e, _ := db.Edits("s10"); e != nil {
		t.Errorf("empty records did not delete: %q", e)
	}
}

// A session's chosen branch base survives a reopen and goes with it.
func TestBranchBaseRoundTripAndDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := db.BranchBase("s1"); err != nil || b != "" {
		t.Fatalf("base of a fresh file: %q %v", b, err)
	}
	db.PutBranchBase("s1", "origin/release")
	db.Close()
	if db, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if b, _ := db.BranchBase("s1"); b != "origin/release" {
		t.Fatalf("base after reopen = %q", b)
	}
	db.DeleteSession("s1", "")
	if b, _ := db.BranchBase("s1"); b != "" {
		t.Errorf("base survived delete: %q", b)
	}
}

// Edit records written a file at a time replace that file's only, come
// after the whole records of earlier versions, and go with their session.
func TestFileEditsArePerFile(t *testing.T) {
	db := openTemp(t)
	if err := db.PutEdits("s1", []byte(`[{"path":"old"}]`)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutFileEdits("s1", map[string][]byte{"0/a": []byte(`{"path":"a"}`), "0/b": []byte(`{"path":"b"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutFileEdits("s1", map[string][]byte{"0/a": []byte(`{"path":"a","count":2}`)}); err != nil {
		t.Fatal(err)
	}
	db.PutFileEdits("s10", map[string][]byte{"0/c": []byte(`{"path":"c"}`)})
	got, err := db.FileEdits("s1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`[{"path":"old"}]`, `{"path":"a","count":2}`, `{"path":"b"}`}
	if len(got) != len(want) {
		t.Fatalf("stored sets %q, want %q", got, want)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("set %d = %s, want %s", i, got[i], want[i])
		}
	}
	if err := db.DeleteSession("s1", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.FileEdits("s1"); len(got) != 0 {
		t.Errorf("edits survived delete: %q", got)
	}
	if got, _ := db.FileEdits("s10"); len(got) != 1 {
		t.Errorf("another session's edits: %q", got)
	}
}
