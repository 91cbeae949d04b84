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
