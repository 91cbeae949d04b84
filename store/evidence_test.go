package store

import (
	"path/filepath"
	"slices"
	"testing"
)

// Evidence is added one record at a time, kept in order across a reopen,
// bounded by the caller, and goes with its session.
func TestEvidenceAddBoundReopenDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 5; seq++ {
		if err := db.AddEvidence("s1", seq, []byte{byte('0' + seq)}, max(seq, 3)-2); err != nil {
			t.Fatal(err)
		}
	}
	db.AddEvidence("s2", 1, []byte("x"), 0)
	db.Close()
	if db, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Evidence("s1")
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, r := range got {
		s = append(s, string(r))
	}
	if !slices.Equal(s, []string{"3", "4", "5"}) {
		t.Errorf("records after reopen = %q, want the last three in order", s)
	}
	if err := db.DeleteSession("s1", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Evidence("s1"); got != nil {
		t.Errorf("evidence survived its session: %q", got)
	}
	if got, _ := db.Evidence("s2"); len(got) != 1 {
		t.Errorf("another session's evidence: %q", got)
	}
}
