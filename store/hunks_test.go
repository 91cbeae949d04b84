package store

import (
	"path/filepath"
	"slices"
	"testing"
)

// Hunk review marks last across a reopen, per changeset.
func TestHunkReviews(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	mine, other := "ahp-changeset:/s1/changeset/uncommitted", "ahp-changeset:/s10/changeset/uncommitted"
	if got, err := db.HunkReviews(mine); err != nil || len(got) != 0 {
		t.Fatalf("marks of a new database: %v, %v", got, err)
	}
	for _, uri := range []string{mine, other} {
		if err := db.PutHunkReviews(uri, map[string][]string{"file:///r/a": {"h1", "h2"}}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if db, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.HunkReviews(mine)
	if err != nil || !slices.Equal(got["file:///r/a"], []string{"h1", "h2"}) {
		t.Fatalf("marks after a reopen: %v, %v", got, err)
	}
	if got, _ := db.HunkReviews(other); len(got) != 1 {
		t.Errorf("marks of another changeset: %v", got)
	}
	if err := db.PutHunkReviews(other, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.HunkReviews(other); len(got) != 0 {
		t.Errorf("marks after clearing: %v", got)
	}
	// Deleting a session deletes its marks, and only its own (s10 starts
	// with s1 but is another session).
	if err := db.PutHunkReviews(other, map[string][]string{"file:///r/a": {"h3"}}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteSession("s1", "ahp-changeset:/s1/"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.HunkReviews(mine); len(got) != 0 {
		t.Errorf("marks of a deleted session: %v", got)
	}
	if got, _ := db.HunkReviews(other); len(got) != 1 {
		t.Errorf("marks of another session after a delete: %v", got)
	}
}
