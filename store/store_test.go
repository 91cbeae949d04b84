package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestRoundTripAndDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s := Session{ID: "s1", URI: "ahp-session:/s1", CreatedAt: time.Unix(100, 0).UTC(), Workspaces: []WorkspaceRecord{{Dir: "/r", Baseline: "t0", Head: "h0"}}}
	if err := db.PutSession(s); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 300; i++ {
		if err := db.PutTurn("s1", Turn{Seq: i, ID: "t", Start: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
	}
	db.PutReviews("ahp-changeset:/s1/changeset/uncommitted", map[string]string{"file:///r/a": "k"})
	db.PutReviews("ahp-changeset:/s10/changeset/uncommitted", map[string]string{"file:///r/b": "k"})
	db.PutAnnotations("s1", []byte(`{"annotations":[]}`))
	db.PutAnnotations("s10", []byte(`{"annotations":[{"id":"a"}]}`))
	db.Close()

	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ss, _ := db.Sessions()
	if len(ss) != 1 || ss[0].Workspaces[0].Baseline != "t0" || !ss[0].CreatedAt.Equal(s.CreatedAt) {
		t.Fatalf("sessions after reopen = %+v", ss)
	}
	turns, _ := db.Turns("s1")
	if len(turns) != 300 || turns[0].Seq != 1 || turns[299].Seq != 300 {
		t.Fatalf("turns: %d, first %d", len(turns), turns[0].Seq)
	}
	if a, _ := db.Annotations("s10"); string(a) != `{"annotations":[{"id":"a"}]}` {
		t.Fatalf("annotations after reopen = %q", a)
	}
	if err := db.DeleteSession("s1", "ahp-changeset:/s1/"); err != nil {
		t.Fatal(err)
	}
	if ss, _ := db.Sessions(); len(ss) != 0 {
		t.Error("session survived delete")
	}
	if turns, _ := db.Turns("s1"); len(turns) != 0 {
		t.Error("turns survived delete")
	}
	if r, _ := db.Reviews("ahp-changeset:/s1/changeset/uncommitted"); len(r) != 0 {
		t.Error("reviews survived delete")
	}
	if r, _ := db.Reviews("ahp-changeset:/s10/changeset/uncommitted"); len(r) != 1 {
		t.Error("another session's reviews were deleted")
	}
	if a, _ := db.Annotations("s1"); a != nil {
		t.Errorf("annotations survived delete: %q", a)
	}
	if a, _ := db.Annotations("s10"); a == nil {
		t.Error("another session's annotations were deleted")
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := Open(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
}
