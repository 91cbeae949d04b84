package session

import (
	"sync"
	"testing"
)

func TestMailboxRunsInOrderAndDrainsOnClose(t *testing.T) {
	mb := newMailbox()
	var got []int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); mb.run() }()
	for i := range 1000 {
		mb.post(func() { got = append(got, i) })
	}
	mb.close()
	wg.Wait()
	if len(got) != 1000 {
		t.Fatalf("ran %d closures, want 1000", len(got))
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("closure %d ran at position %d", v, i)
		}
	}
	if mb.post(func() {}) {
		t.Error("post after close succeeded")
	}
}

func TestCompactPaths(t *testing.T) {
	got := compactPaths([]string{"b/c", "a", "b", "a/x", "b/c", "bb"})
	want := []string{"a", "b", "bb"}
	if len(got) != len(want) {
		t.Fatalf("compactPaths = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("compactPaths = %v, want %v", got, want)
		}
	}
}
