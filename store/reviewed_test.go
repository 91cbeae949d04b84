package store

import (
	"path/filepath"
	"slices"
	"testing"
)

// Reviewed versions last across a reopen, are listed for the snapshot
// collection, and go with their session.
func TestReviewedVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	mine, other := "ahp-changeset:/s1/changeset/uncommitted", "ahp-changeset:/s10/changeset/uncommitted"
	if got, err := db.ReviewedVersions(mine); err != nil || len(got) != 0 {
		t.Fatalf("versions of a new database: %v, %v", got, err)
	}
	v := ReviewedVersion{Key: "k", Tree: "t1", Path: "a.txt", OID: "o1"}
	if err := db.PutReviewedVersions(mine, map[string]ReviewedVersion{"file:///r/a.txt": v}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutReviewedVersions(other, map[string]ReviewedVersion{"file:///r/b.txt": {Key: "k2", Tree: "t2", Path: "b.txt", OID: "o2"}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, err := db.ReviewedVersions(mine); err != nil || got["file:///r/a.txt"] != v {
		t.Fatalf("versions after a reopen: %v, %v", got, err)
	}
	trees, err := db.ReviewedTrees()
	slices.Sort(trees)
	if err != nil || !slices.Equal(trees, []string{"t1", "t2"}) {
		t.Errorf("trees to keep: %v, %v", trees, err)
	}
	if err := db.DeleteSession("s1", "ahp-changeset:/s1/"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.ReviewedVersions(mine); len(got) != 0 {
		t.Errorf("versions of a deleted session: %v", got)
	}
	if got, _ := db.ReviewedVersions(other); len(got) != 1 {
		t.Errorf("versions of another session after a delete: %v", got)
	}
	if err := db.PutReviewedVersions(other, nil); err != nil {
		t.Fatal(err)
	}
	if trees, _ := db.ReviewedTrees(); len(trees) != 0 {
		t.Errorf("trees to keep after clearing: %v", trees)
	}
}
